package sandboxserver_test

import (
	"context"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/adk-codemode/codemode/sandboxserver"
	"github.com/adk-codemode/codemode/transport"
)

// processBackend is a whole backend of one's own, as small as one can be:
// each session is a process of the codemode-sandbox command, reached over
// its standard streams. To run code somewhere else, replace the exec
// with your own way to start a sandbox that runs that command (or
// sandboxserver.Serve) and to reach it (ssh, a virtual machine's console,
// a container runtime's attach): the rest stays. TestABackendOfYourOwn
// runs the transporttest suite on it. (This one starts an ordinary
// process, which is not a sandbox: the isolation is yours to bring.)
type processBackend struct {
	bin    string // the codemode-sandbox command
	python string // the interpreter it runs
}

func (b *processBackend) Name() string { return "process" }

func (b *processBackend) Open(ctx context.Context, cfg transport.SessionConfig) (transport.Session, error) {
	dir, err := os.MkdirTemp("", "codemode-session-")
	if err != nil {
		return nil, err
	}
	workspace, files := filepath.Join(dir, "workspace"), filepath.Join(dir, "files")
	cleanup := func() {
		// The server makes the files' directories read-only.
		_ = filepath.WalkDir(files, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				_ = os.Chmod(p, 0o700)
			}
			return nil
		})
		_ = os.RemoveAll(dir)
	}
	if err = os.Mkdir(workspace, 0o700); err == nil {
		err = os.Mkdir(files, 0o700)
	}
	cmd := exec.Command(b.bin, "--python", b.python, "--workdir", workspace, "--files", files, "--files-over-stdin")
	cmd.Dir, cmd.Stderr = workspace, os.Stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		cleanup()
		return nil, err
	}
	stream := struct {
		io.Reader
		io.WriteCloser // closing stdin ends the server
	}{stdout, stdin}
	return sandboxserver.Connect(ctx, stream, cfg, sandboxserver.ConnectOptions{
		SendFiles: true,
		OnClose: func() error {
			defer cleanup()
			stop := time.AfterFunc(10*time.Second, func() { _ = cmd.Process.Kill() })
			defer stop.Stop()
			return cmd.Wait()
		},
	})
}
