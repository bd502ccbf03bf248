package main

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/backend/remote"
	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
	"github.com/adk-codemode/codemode/transport"
)

func buildServer(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		hostcap.Missing(t, hostcap.Python, err)
	}
	bin := filepath.Join(t.TempDir(), "codemode-sandbox")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

func TestListenRefusesToStartWithoutSecret(t *testing.T) {
	bin := buildServer(t)
	cmd := exec.Command(bin, "--listen", "127.0.0.1:0", "--python", "/usr/bin/python3", "--workdir", t.TempDir())
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "set CODEMODE_SANDBOX_TOKEN") || strings.Contains(string(out), "listening") {
		t.Fatalf("err %v, output %q: want a refusal to start that names the variable", err, out)
	}
	cmd = exec.Command(bin, "--listen", "127.0.0.1:0", "--python", "/usr/bin/python3", "--workdir", t.TempDir())
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "CODEMODE_SANDBOX_TOKEN=short"}
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "at least 16") {
		t.Fatalf("a 5-byte secret: err %v, output %q", err, out)
	}
}

// TestListenInsecureOnPORT: $PORT replaces the port, as on Cloud Run, and
// --insecure-no-auth serves a client without a token.
func TestListenInsecureOnPORT(t *testing.T) {
	bin := buildServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()
	dir := t.TempDir()
	cmd := exec.Command(bin, "--listen", "127.0.0.1:9", "--insecure-no-auth", "--python", "/usr/bin/python3", "--workdir", dir)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "PORT=" + port, "TMPDIR=" + dir}
	pipe, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	listening := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "codemode-sandbox: listening on "); ok {
				listening <- a
			}
		}
		exited <- cmd.Wait()
	}()
	defer func() {
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}()
	var addr string
	select {
	case addr = <-listening:
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not listen")
	}
	if addr != "127.0.0.1:"+port {
		t.Fatalf("listening on %s, want the port from $PORT (%s)", addr, port)
	}
	resp, err := http.Get("http://" + addr + "/health")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("health: %v %v", resp, err)
	}
	resp.Body.Close()
	b, err := remote.New(remote.Config{URL: "http://" + addr})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s, err := b.Open(ctx, transport.SessionConfig{Files: map[string][]byte{"tools/__init__.py": []byte("X = 7\n")}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Exec(ctx, transport.Block{Code: "import tools\nprint(tools.X)"})
	if err != nil || r.Stdout != "7\n" {
		t.Fatalf("%+v %v", r, err)
	}
	s.Close()
	select {
	case err := <-exited:
		exited <- err
		if err != nil {
			t.Errorf("the server exited with %v after a clean session", err)
		}
	case <-time.After(15 * time.Second):
		t.Error("the server did not exit after its session")
	}
}
