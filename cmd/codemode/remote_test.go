package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
)

var (
	sandboxBinOnce sync.Once
	sandboxBin     string
	sandboxBinErr  error
)

func TestMain(m *testing.M) {
	if os.Getenv(mcpServeEnv) == "1" {
		os.Exit(serveTestMCP())
	}
	code := m.Run()
	if sandboxBin != "" {
		os.RemoveAll(filepath.Dir(sandboxBin))
	}
	os.Exit(code)
}

// listenServer starts the real codemode-sandbox --listen on 127.0.0.1 with
// secret and returns its address; it is stopped when the test ends.
func listenServer(t *testing.T, secret string) string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		hostcap.Missing(t, hostcap.Python, err)
	}
	sandboxBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "codemode-cli-test-")
		if err != nil {
			sandboxBinErr = err
			return
		}
		sandboxBin = filepath.Join(dir, "codemode-sandbox")
		if out, err := exec.Command("go", "build", "-o", sandboxBin, "github.com/adk-codemode/codemode/cmd/codemode-sandbox").CombinedOutput(); err != nil {
			sandboxBinErr = err
			t.Logf("%s", out)
		}
	})
	if sandboxBinErr != nil {
		t.Fatalf("build codemode-sandbox: %v", sandboxBinErr)
	}
	dir := t.TempDir()
	cmd := exec.Command(sandboxBin, "--listen", "127.0.0.1:0", "--python", "/usr/bin/python3", "--workdir", dir)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "TMPDIR=" + dir, "CODEMODE_SANDBOX_TOKEN=" + secret}
	pipe, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "codemode-sandbox: listening on "); ok {
				addr <- a
			}
		}
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	select {
	case a := <-addr:
		return a
	case <-exited:
		t.Fatal("codemode-sandbox exited before listening")
	case <-time.After(30 * time.Second):
		t.Fatal("codemode-sandbox did not listen")
	}
	return ""
}

const cliSecret = "cli-test-secret-0123456789"

func TestExecRemote(t *testing.T) {
	addr := listenServer(t, cliSecret)
	t.Setenv(remoteTokenEnv, cliSecret)
	code, out, errs := runCLI(t, "", "exec", "--backend", "remote", "--url", "http://"+addr, "-c", "x = 40", "-c", "print(x + 2)")
	if code != 0 || out != "42\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

func TestExecRemoteNeedsURL(t *testing.T) {
	code, _, errs := runCLI(t, "", "exec", "--backend", "remote", "-c", "pass")
	if code != 2 || !strings.Contains(errs, "needs --url") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	code, _, errs = runCLI(t, "", "exec", "--backend", "unsandboxed", "--url", "ws://127.0.0.1:1", "-c", "pass")
	if code != 2 || !strings.Contains(errs, "--url is for --backend remote") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}

func TestDoctorRemote(t *testing.T) {
	t.Run("ok", func(t *testing.T) {
		addr := listenServer(t, cliSecret)
		t.Setenv(remoteTokenEnv, cliSecret)
		code, out, errs := runCLI(t, "", "doctor", "--url", "http://"+addr)
		for _, want := range []string{"health: ok", "auth: ok, a token signed", "session ready", "Python 3.", "round trip (a block with one tool call): ok", "egress: the server reports no allowlist"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q", want)
			}
		}
		if code != 0 {
			t.Errorf("exit %d\n%s\n%s", code, out, errs)
		}
	})
	t.Run("wrong secret", func(t *testing.T) {
		addr := listenServer(t, cliSecret)
		t.Setenv(remoteTokenEnv, "not-the-secret-0123456789")
		code, out, errs := runCLI(t, "", "doctor", "--url", "ws://"+addr)
		if code != 1 || !strings.Contains(out, "health: ok") || !strings.Contains(out, "auth: FAILED") || !strings.Contains(errs, "401") {
			t.Errorf("exit %d\n%s\n%s", code, out, errs)
		}
	})
	t.Run("egress declared, none enforced", func(t *testing.T) {
		addr := listenServer(t, cliSecret)
		t.Setenv(remoteTokenEnv, cliSecret)
		code, out, errs := runCLI(t, "", "doctor", "--url", "http://"+addr, "--egress", "api.example.com:443")
		if code != 1 || !strings.Contains(out, "egress: FAILED") || !strings.Contains(errs, "enforces the egress allowlist [none], but this host declares [api.example.com:443]") {
			t.Errorf("exit %d\n%s\n%s", code, out, errs)
		}
	})
	t.Run("nothing listening", func(t *testing.T) {
		code, out, _ := runCLI(t, "", "doctor", "--url", "ws://127.0.0.1:1")
		if code != 1 || !strings.Contains(out, "health: FAILED") {
			t.Errorf("exit %d\n%s", code, out)
		}
	})
}
