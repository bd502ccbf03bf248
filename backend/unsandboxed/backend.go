//go:build linux

package unsandboxed

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/adk-codemode/codemode/internal/both/server"
	"github.com/adk-codemode/codemode/internal/host/launch"
	"github.com/adk-codemode/codemode/internal/host/sandboxbin"
	"github.com/adk-codemode/codemode/transport"
)

// Open starts a session: a supervisor in a child process of this one,
// with a fresh temporary directory for the workspace, the session's files
// and TMPDIR.
func (b *Backend) Open(ctx context.Context, scfg transport.SessionConfig) (transport.Session, error) {
	python := b.python()
	if !filepath.IsAbs(python) {
		p, err := exec.LookPath(python)
		if err != nil {
			return nil, fmt.Errorf("unsandboxed: no Python interpreter %q: %w", python, err)
		}
		python = p
	}
	dir, err := os.MkdirTemp("", "codemode-unsandboxed-")
	if err != nil {
		return nil, err
	}
	ws, files, tmp := filepath.Join(dir, "workspace"), filepath.Join(dir, "files"), filepath.Join(dir, "tmp")
	if err := layout(ws, files, tmp, scfg.Files); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	cfg := server.Config{
		Python:         python,
		Workdir:        ws,
		FilesDir:       files,
		Env:            []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + ws, "LANG=C.UTF-8", "TMPDIR=" + tmp},
		MaxOutputBytes: b.MaxOutputBytes,
	}
	started := false
	start := launch.StarterFunc(func(_ context.Context, c launch.Command) (launch.Process, error) {
		p, err := startChild(c, ws, dir)
		started = err == nil
		return p, err
	})
	s, err := launch.Launch(ctx, start, cfg, scfg)
	if err != nil {
		if !started {
			_ = os.RemoveAll(dir)
		}
		return nil, fmt.Errorf("unsandboxed: %w", err)
	}
	return s, nil
}

// child is the supervisor's process; dir is removed once it has exited.
type child struct {
	cmd *exec.Cmd
	dir string
}

// startChild runs the supervisor, the sandbox program (internal/host/sandboxbin),
// in a process group of its own that dies with this process.
func startChild(c launch.Command, workdir, dir string) (*child, error) {
	exe, err := sandboxbin.Path()
	if err != nil {
		return nil, err
	}
	cmd := &exec.Cmd{
		Path:        exe,
		Args:        c.Args,
		Env:         []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"},
		Dir:         workdir,
		ExtraFiles:  []*os.File{c.Socket},
		Stderr:      c.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the supervisor: %w", err)
	}
	return &child{cmd: cmd, dir: dir}, nil
}

func (c *child) Wait() error {
	_ = c.cmd.Wait()
	return os.RemoveAll(c.dir)
}

func (c *child) Kill() error { return syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL) }

// layout makes the workspace, files and temporary directories and writes
// the session's files.
func layout(ws, files, tmp string, content map[string][]byte) error {
	for _, d := range []string{ws, files, tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return err
		}
	}
	for name, data := range content {
		clean := filepath.Clean(filepath.FromSlash(name))
		if !filepath.IsLocal(clean) {
			return fmt.Errorf("unsandboxed: file name %q must be a relative path inside the files directory", name)
		}
		p := filepath.Join(files, clean)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(p, data, 0o400); err != nil {
			return err
		}
	}
	return nil
}
