//go:build linux

package sandboxserver_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
	"github.com/adk-codemode/codemode/sandboxserver"
	"github.com/adk-codemode/codemode/transport"
)

// TestServe runs a session through the public entry points, Serve and
// Connect, over a pair of pipes, as a container's standard streams carry it: the tools package in
// FilesDir is importable, state carries from block to block, a file the
// code writes is reported, and the session ends when the host closes it.
func TestServe(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		hostcap.Missing(t, hostcap.Python)
	}
	work, files := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(files, "tools"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(files, "tools", "__init__.py"), []byte("ANSWER = 42\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hostR, sandboxW := io.Pipe()
	sandboxR, hostW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- sandboxserver.Serve(context.Background(), sandboxR, sandboxW, sandboxserver.Config{
			Python: "/usr/bin/python3", Workdir: work, FilesDir: files, Env: []string{"PATH=/usr/bin:/bin"},
		})
		sandboxW.Close()
	}()
	stream := struct {
		io.Reader
		io.WriteCloser
	}{hostR, hostW}
	c, err := sandboxserver.Connect(t.Context(), stream, transport.SessionConfig{}, sandboxserver.ConnectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct{ code, want string }{
		{"from tools import ANSWER\nx = ANSWER\nopen('out.txt', 'w').write('hi')\n", ""},
		{"print(x + 1)\n", "43\n"},
	} {
		r, err := c.Exec(t.Context(), transport.Block{Code: step.code})
		if err != nil {
			t.Fatal(err)
		}
		if r.ExitCode != 0 || r.Stdout != step.want {
			t.Fatalf("%q: exit %d, stdout %q, stderr %q; want exit 0, stdout %q", step.code, r.ExitCode, r.Stdout, r.Stderr, step.want)
		}
		if step.want == "" && (len(r.Files) != 1 || r.Files[0].Path != "out.txt") {
			t.Errorf("files reported after the block that wrote out.txt: %+v", r.Files)
		}
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// TestServeNeedsPythonAndWorkdir: a config without the required fields is
// refused before anything starts.
func TestServeNeedsPythonAndWorkdir(t *testing.T) {
	r, w := io.Pipe()
	defer r.Close()
	err := sandboxserver.Serve(t.Context(), r, w, sandboxserver.Config{Python: "/usr/bin/python3"})
	if err == nil {
		t.Fatal("Serve without Workdir: no error")
	}
}
