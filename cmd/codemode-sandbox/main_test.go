package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/internal/protocol/wire"
	"github.com/adk-codemode/codemode/internal/protocol/wsproto"
	"github.com/adk-codemode/codemode/transport"
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

// TestFilesOverStdin sends the tools package in the preamble that opens
// stdin, as the Docker backend does, and imports it from the code; a
// stream that does not open with the preamble is refused with a reason.
func TestFilesOverStdin(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "codemode-sandbox")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	start := func(t *testing.T) (*exec.Cmd, io.WriteCloser, io.Reader, *strings.Builder, string) {
		files := t.TempDir()
		t.Cleanup(func() { // the server leaves the directory read-only
			_ = filepath.WalkDir(files, func(p string, d os.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					_ = os.Chmod(p, 0o700)
				}
				return nil
			})
		})
		cmd := exec.Command(bin, "--python", "/usr/bin/python3", "--workdir", t.TempDir(), "--files", files, "--files-over-stdin")
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd, in, out, &stderr, files
	}
	t.Run("tools package", func(t *testing.T) {
		_, in, out, _, files := start(t)
		if err := wsproto.WriteFilesPreamble(in, map[string][]byte{"tools/__init__.py": []byte("answer = 42\n")}, wsproto.FileLimits{}); err != nil {
			t.Fatal(err)
		}
		s, err := wire.NewClient(t.Context(), wire.NewConn(out, in, in, 0), transport.SessionConfig{}, wire.ClientOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		r, err := s.Exec(t.Context(), transport.Block{Code: "from tools import answer\nprint(answer)", Timeout: 30 * time.Second})
		if err != nil || r.Stdout != "42\n" {
			t.Fatalf("%v %+v", err, r)
		}
		if fi, err := os.Stat(filepath.Join(files, "tools", "__init__.py")); err != nil || fi.Mode().Perm() != 0o444 {
			t.Errorf("the tools package on disk: %v, %v; want it read-only", fi, err)
		}
	})
	t.Run("no preamble", func(t *testing.T) {
		cmd, in, _, stderr, _ := start(t)
		_, _ = io.WriteString(in, `{"type":"run","id":"1","code":"print(1)"}`+"\n")
		in.Close()
		if err := cmd.Wait(); err == nil {
			t.Fatal("the server accepted a stream without the preamble")
		}
		if !strings.Contains(stderr.String(), "does not open with the files preamble") {
			t.Errorf("stderr %q does not say what was wrong", stderr.String())
		}
	})
}
