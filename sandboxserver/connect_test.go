package sandboxserver_test

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
	"github.com/adk-codemode/codemode/sandboxserver"
	"github.com/adk-codemode/codemode/transport"
	"github.com/adk-codemode/codemode/transport/transporttest"
)

// TestABackendOfYourOwn holds the example backend, processBackend, to the
// contract every backend meets: Connect is all a backend of one's own
// needs of this library.
func TestABackendOfYourOwn(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		hostcap.Missing(t, hostcap.Python, err)
	}
	if _, err := exec.LookPath("go"); err != nil {
		hostcap.Missing(t, hostcap.GoCommand, "to build the codemode-sandbox command: ", err)
	}
	bin := filepath.Join(t.TempDir(), "codemode-sandbox")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/codemode-sandbox").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatal(err)
	}
	transporttest.Run(t, func(t *testing.T) transport.Backend { return &processBackend{bin: bin, python: python} }, transporttest.Options{})
}

// TestConnectMismatches pairs a host and a server that disagree about the
// files preamble, or a server with no place for the files: each ends with
// an error that says what to change, not a bare EOF, a broken pipe or a
// wait with no reason.
func TestConnectMismatches(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		hostcap.Missing(t, hostcap.Python, err)
	}
	if _, err := exec.LookPath("go"); err != nil {
		hostcap.Missing(t, hostcap.GoCommand, "to build the codemode-sandbox command: ", err)
	}
	bin := filepath.Join(t.TempDir(), "codemode-sandbox")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/codemode-sandbox").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	small := map[string][]byte{"tools/__init__.py": []byte("X = 1\n")}
	// Larger than a pipe's buffer: the server refuses the stream before
	// the host has written it all.
	large := map[string][]byte{"tools/__init__.py": []byte("X = '" + strings.Repeat("x", 256<<10) + "'\n")}
	filesDir := t.TempDir()
	for _, tc := range []struct {
		name      string
		flags     []string
		sendFiles bool
		files     map[string][]byte
		want      string
	}{
		{"files sent to a server that does not read them", nil, true, small, "--files-over-stdin"},
		{"large files sent to a server that does not read them", nil, true, large, "--files-over-stdin"},
		{"files not sent to a server that waits for them", []string{"--files-over-stdin", "--files", filesDir}, false, small, "set ConnectOptions.SendFiles"},
		{"files directory missing", []string{"--files-over-stdin", "--files", "/nonexistent/files"}, true, small, "--files /nonexistent/files"},
		{"no files directory", []string{"--files-over-stdin"}, true, small, "--files-over-stdin needs --files"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			cmd := exec.Command(bin, append([]string{"--python", python, "--workdir", ws}, tc.flags...)...)
			stdin, _ := cmd.StdinPipe()
			stdout, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			stream := struct {
				io.Reader
				io.WriteCloser
			}{stdout, stdin}
			s, err := sandboxserver.Connect(t.Context(), stream, transport.SessionConfig{Files: tc.files},
				sandboxserver.ConnectOptions{SendFiles: tc.sendFiles, ReadyTimeout: 3 * time.Second, OnClose: func() error {
					_ = cmd.Process.Kill()
					_ = cmd.Wait()
					return nil
				}})
			if err == nil {
				// The server was ready before it read the stream: the first
				// block finds out.
				_, err = s.Exec(t.Context(), transport.Block{Code: "print(1)"})
				s.Close()
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v; want an error that names %q", err, tc.want)
			}
		})
	}
}
