package remote_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/backend/remote"
)

// serverBin is cmd/codemode-sandbox, built once for the package's tests:
// every test talks to the real server in its own process.
var serverBin string

var testSecret = []byte("test-secret-0123456789abcdef")

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		fmt.Println("skipping: no /usr/bin/python3")
		return 0
	}
	dir, err := os.MkdirTemp("", "remote-test-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	_ = os.Chmod(dir, 0o755) // a server run as another user must reach it
	serverBin = filepath.Join(dir, "codemode-sandbox")
	if out, err := exec.Command("go", "build", "-o", serverBin, "../../cmd/codemode-sandbox").CombinedOutput(); err != nil {
		fmt.Printf("build the server: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// server is one codemode-sandbox --listen process.
type server struct {
	cmd    *exec.Cmd
	addr   string // host:port
	work   string // its workspace, the code's working directory
	exited chan struct{}
	mu     sync.Mutex
	log    strings.Builder // its standard error
}

// URL is the server's WebSocket URL as a user would write it.
func (s *server) URL() string { return "http://" + s.addr }

func (s *server) stderr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

// startServer starts a server on 127.0.0.1 with the test secret (unless
// env sets another) and extra flags; it is killed when the test ends.
func startServer(t testing.TB, env []string, flags ...string) *server {
	t.Helper()
	s, err := launch(tempDir(t), env, flags...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.stop() })
	return s
}

func launch(dir string, env []string, flags ...string) (*server, error) {
	return launchAs(dir, nil, env, flags...)
}

// launchAs starts the server as the user cred names (nil: this process's).
func launchAs(dir string, cred *syscall.Credential, env []string, flags ...string) (*server, error) {
	ws := filepath.Join(dir, "workspace")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		return nil, err
	}
	if cred != nil {
		for _, d := range []string{dir, ws} {
			if err := os.Chown(d, int(cred.Uid), int(cred.Gid)); err != nil {
				return nil, err
			}
		}
	}
	args := append([]string{"--listen", "127.0.0.1:0", "--python", "/usr/bin/python3", "--workdir", ws}, flags...)
	cmd := exec.Command(serverBin, args...)
	cmd.Dir = ws
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "TMPDIR=" + dir, "CODEMODE_SANDBOX_TOKEN=" + string(testSecret)}, env...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, exited: make(chan struct{}), work: ws}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.log.WriteString(line + "\n")
			s.mu.Unlock()
			if a, ok := strings.CutPrefix(line, "codemode-sandbox: listening on "); ok {
				addr <- a
			}
		}
		_, _ = io.Copy(io.Discard, pipe)
		_ = cmd.Wait()
		close(s.exited)
	}()
	select {
	case s.addr = <-addr:
		return s, nil
	case <-s.exited:
		return nil, fmt.Errorf("the server exited before listening:\n%s", s.stderr())
	case <-time.After(30 * time.Second):
		s.stop()
		return nil, fmt.Errorf("the server did not listen within 30s:\n%s", s.stderr())
	}
}

// stop waits a little for the server to exit by itself, then stops it
// with SIGTERM, then kills it.
func (s *server) stop() {
	for _, sig := range []os.Signal{nil, syscall.SIGTERM, os.Kill} {
		if sig != nil {
			_ = s.cmd.Process.Signal(sig)
		}
		select {
		case <-s.exited:
			return
		case <-time.After(5 * time.Second):
		}
	}
}

// tempDir is a t.TempDir that a killed server's read-only files
// directory does not keep from being removed.
func tempDir(t testing.TB) string {
	dir := t.TempDir()
	t.Cleanup(func() {
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				_ = os.Chmod(p, 0o700)
			}
			return nil
		})
	})
	return dir
}

// waitExit reports whether the server exits within d.
func (s *server) waitExit(d time.Duration) bool {
	select {
	case <-s.exited:
		return true
	case <-time.After(d):
		return false
	}
}

// provisioner starts a fresh server per session, as a platform that hands
// out a sandbox per claim does; release waits for it to exit.
func provisioner(t testing.TB, flags ...string) func(ctx context.Context) (string, func(), error) {
	return func(ctx context.Context) (string, func(), error) {
		s, err := launch(tempDir(t), nil, flags...)
		if err != nil {
			return "", nil, err
		}
		return s.URL(), s.stop, nil
	}
}

func newBackend(t testing.TB, cfg remote.Config) *remote.Backend {
	t.Helper()
	b, err := remote.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
