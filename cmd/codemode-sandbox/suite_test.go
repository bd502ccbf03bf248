package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/internal/hostcap"
	"github.com/adk-codemode/codemode/internal/wire"
	"github.com/adk-codemode/codemode/transport"
	"github.com/adk-codemode/codemode/transport/transporttest"
)

// stdioBackend starts the codemode-sandbox command per session and talks
// to it over its standard streams, as a container backend does: the
// server runs next to the worker, and tool calls are relayed to the host
// as frames. It runs the shared suite over that path.
type stdioBackend struct {
	bin string
	t   *testing.T
}

func (b *stdioBackend) Name() string { return "stdio:" + b.bin }

func (b *stdioBackend) Open(ctx context.Context, cfg transport.SessionConfig) (transport.Session, error) {
	dir := b.t.TempDir()
	ws, files := filepath.Join(dir, "workspace"), filepath.Join(dir, "files")
	for _, d := range []string{ws, files} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return nil, err
		}
	}
	for name, data := range cfg.Files {
		p := filepath.Join(files, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, data, 0o400); err != nil {
			return nil, err
		}
	}
	cmd := exec.Command(b.bin, "--python", "/usr/bin/python3", "--workdir", ws, "--files", files)
	cmd.Dir = ws
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	var once sync.Once
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop := func() error {
		once.Do(func() {
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
			}
		})
		return nil
	}
	s, err := wire.NewClient(ctx, wire.NewConn(out, in, in, 0), cfg, wire.ClientOptions{OnClose: stop})
	if err != nil {
		return nil, fmt.Errorf("stdio: %w", err)
	}
	return s, nil
}

func TestSharedSuite(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		hostcap.Missing(t, hostcap.Python, err)
	}
	bin := filepath.Join(t.TempDir(), "codemode-sandbox")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	transporttest.Run(t, func(t *testing.T) transport.Backend { return &stdioBackend{bin: bin, t: t} }, transporttest.Options{})
}
