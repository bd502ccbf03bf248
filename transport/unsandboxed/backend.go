//go:build linux

package unsandboxed

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/adk-codemode/codemode/internal/tailbuf"

	"github.com/adk-codemode/codemode/sandboxserver"
	"github.com/adk-codemode/codemode/transport"
)

// Open starts a session.
func (b *Backend) Open(ctx context.Context, cfg transport.SessionConfig) (transport.Session, error) {
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
	cleanup := func() { _ = os.RemoveAll(dir) }
	ws, files, tmp := filepath.Join(dir, "workspace"), filepath.Join(dir, "files"), filepath.Join(dir, "tmp")
	for _, d := range []string{ws, files, tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			cleanup()
			return nil, err
		}
	}
	if err := writeFiles(files, cfg.Files); err != nil {
		cleanup()
		return nil, err
	}
	probe, err := sandboxserver.ProbeInterpreter(ctx, python)
	if err != nil {
		cleanup()
		return nil, err
	}
	scfg := sandboxserver.Config{
		Python:         python,
		Workdir:        ws,
		FilesDir:       files,
		Env:            []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + ws, "LANG=C.UTF-8", "TMPDIR=" + tmp},
		MaxOutputBytes: b.MaxOutputBytes,
	}
	probe.Apply(&scfg)
	args, err := sandboxserver.SupervisorArgs(scfg)
	if err != nil {
		cleanup()
		return nil, err
	}
	hostEnd, sandboxEnd, err := sandboxserver.SocketPair()
	if err != nil {
		cleanup()
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		exe = "/proc/self/exe"
	}
	stderr := &tailbuf.Buffer{Max: 16 << 10}
	cmd := &exec.Cmd{
		Path:        exe,
		Args:        args,
		Env:         []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"},
		Dir:         ws,
		ExtraFiles:  []*os.File{sandboxEnd},
		Stderr:      stderr,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	}
	if err := cmd.Start(); err != nil {
		sandboxEnd.Close()
		hostEnd.Close()
		cleanup()
		return nil, fmt.Errorf("unsandboxed: start the supervisor: %w", err)
	}
	sandboxEnd.Close()
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop := func() error {
		select {
		case <-exited:
		case <-time.After(3 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		cleanup()
		return nil
	}
	// The session runs here; the supervisor only starts and stops the
	// worker, whose pipes it passes over.
	s, err := sandboxserver.Attach(ctx, hostEnd, scfg, cfg, transport.ClientOptions{OnClose: stop})
	if err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			err = fmt.Errorf("%w\n%s", err, msg)
		}
		return nil, fmt.Errorf("unsandboxed: %w", err)
	}
	return s, nil
}

func writeFiles(root string, files map[string][]byte) error {
	for name, data := range files {
		clean := filepath.Clean(filepath.FromSlash(name))
		if !filepath.IsLocal(clean) {
			return fmt.Errorf("unsandboxed: file name %q must be a relative path inside the files directory", name)
		}
		p := filepath.Join(root, clean)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(p, data, 0o400); err != nil {
			return err
		}
	}
	return nil
}
