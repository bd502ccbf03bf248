//go:build linux

package launch_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/internal/both/server"
	"github.com/adk-codemode/codemode/internal/host/launch"
	"github.com/adk-codemode/codemode/internal/host/sandboxbin"
	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
	"github.com/adk-codemode/codemode/transport"
	"github.com/adk-codemode/codemode/transport/transporttest"
)

// childBackend is a backend written against the launch recipe with only
// its starter: the supervisor runs in a child process of the test binary.
// It uses nothing but the package's exported API.
type childBackend struct {
	t       *testing.T
	release error // what the process's Wait reports, for the test of Close
}

func (b *childBackend) Name() string { return "child:/usr/bin/python3" }

func (b *childBackend) Open(ctx context.Context, scfg transport.SessionConfig) (transport.Session, error) {
	dir := b.t.TempDir()
	files := filepath.Join(dir, "files")
	for name, data := range scfg.Files {
		p := filepath.Join(files, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, data, 0o400); err != nil {
			return nil, err
		}
	}
	cfg := server.Config{Python: "/usr/bin/python3", Workdir: dir, FilesDir: files, Env: []string{"PATH=/usr/bin:/bin", "HOME=" + dir}}
	return launch.Launch(ctx, launch.StarterFunc(b.start), cfg, scfg)
}

func (b *childBackend) start(_ context.Context, c launch.Command) (launch.Process, error) {
	exe, err := sandboxbin.Path()
	if err != nil {
		return nil, err
	}
	cmd := &exec.Cmd{
		Path:        exe,
		Args:        c.Args,
		ExtraFiles:  []*os.File{c.Socket},
		Stderr:      c.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &child{cmd: cmd, release: b.release}, nil
}

type child struct {
	cmd     *exec.Cmd
	release error
}

func (c *child) Wait() error { _ = c.cmd.Wait(); return c.release }
func (c *child) Kill() error { return syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL) }

func needPython3(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		hostcap.Missing(t, hostcap.Python, err)
	}
}

// TestLaunchStarterOnly runs the shared backend suite against a backend
// whose only code of its own is how it starts the supervisor's process.
func TestLaunchStarterOnly(t *testing.T) {
	needPython3(t)
	transporttest.Run(t, func(t *testing.T) transport.Backend { return &childBackend{t: t} }, transporttest.Options{})
}

// TestLaunchCloseReportsRelease: what the process could not release after
// it exited is Close's error.
func TestLaunchCloseReportsRelease(t *testing.T) {
	needPython3(t)
	left := errors.New("a cgroup was left behind")
	s, err := (&childBackend{t: t, release: left}).Open(t.Context(), transport.SessionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); !errors.Is(err, left) {
		t.Errorf("Close = %v, want the release error %v", err, left)
	}
}

// TestLaunchStartFails: a starter's error is Launch's, and the socket
// given to it is closed.
func TestLaunchStartFails(t *testing.T) {
	needPython3(t)
	refused := errors.New("no room for another sandbox")
	var sock *os.File
	start := launch.StarterFunc(func(_ context.Context, c launch.Command) (launch.Process, error) {
		sock = c.Socket
		return nil, refused
	})
	_, err := launch.Launch(t.Context(), start, server.Config{Python: "/usr/bin/python3", Workdir: t.TempDir()}, transport.SessionConfig{})
	if !errors.Is(err, refused) {
		t.Fatalf("Launch = %v, want the starter's error", err)
	}
	if sock == nil {
		t.Fatal("the starter was not given a socket")
	}
	if _, err := sock.Stat(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("the starter's socket is still open after Launch returned (Stat: %v)", err)
	}
}

// TestLaunchShowsStderr: a supervisor that dies before its worker is ready
// is reported with the last lines it wrote, and its process is released.
func TestLaunchShowsStderr(t *testing.T) {
	needPython3(t)
	waited := make(chan struct{})
	start := launch.StarterFunc(func(_ context.Context, c launch.Command) (launch.Process, error) {
		cmd := exec.Command("/bin/sh", "-c", "echo 'supervisor: the workspace is not mounted' >&2; exit 3")
		cmd.Stderr = c.Stderr
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		return &waitNotify{cmd: cmd, done: waited}, nil
	})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	_, err := launch.Launch(ctx, start, server.Config{Python: "/usr/bin/python3", Workdir: t.TempDir()}, transport.SessionConfig{})
	if err == nil || !strings.Contains(err.Error(), "the workspace is not mounted") {
		t.Fatalf("Launch = %v, want an error that ends with the supervisor's stderr", err)
	}
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Error("the failed start did not wait for its process")
	}
}

type waitNotify struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func (w *waitNotify) Wait() error { _ = w.cmd.Wait(); close(w.done); return nil }
func (w *waitNotify) Kill() error { return w.cmd.Process.Kill() }
