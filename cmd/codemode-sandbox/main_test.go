package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/transport"
	"github.com/adk-codemode/codemode/transport/wire"
)

// TestServesOverStdio builds the command and drives it the way a container
// backend would: frames over its stdin and stdout.
func TestServesOverStdio(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "codemode-sandbox")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	ws := t.TempDir()
	cmd := exec.Command(bin, "--python", "/usr/bin/python3", "--workdir", ws)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	conn := wire.NewConn(out, in, in, 0)
	s, err := wire.NewClient(t.Context(), conn, transport.SessionConfig{
		Tools: transport.ToolHandlerFunc(func(ctx context.Context, c transport.ToolCall) transport.ToolResult {
			return transport.ToolResult{Value: "pong"}
		}),
	}, wire.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Exec(t.Context(), transport.Block{Code: "from codemode_runtime import call\nx = call('ping', {})", Timeout: 30 * time.Second})
	if err != nil || r.ExitCode != 0 {
		t.Fatalf("%v %+v", err, r)
	}
	r, err = s.Exec(t.Context(), transport.Block{Code: "print(x)\nopen('f.txt', 'w').write('1')", Timeout: 30 * time.Second})
	if err != nil || r.Stdout != "pong\n" || len(r.Files) != 1 {
		t.Fatalf("%v %+v", err, r)
	}
	s.Close()
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		t.Fatal("the server did not exit after shutdown")
	}
}
