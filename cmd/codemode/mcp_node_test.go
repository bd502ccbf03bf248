package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
	"github.com/adk-codemode/codemode/internal/testsupport/npmtest"
)

// npm packages the node-driven tests use, at pinned versions: the official
// TypeScript SDK (its client drives the server) and the MCP reference
// server (an upstream).
const (
	sdkPackage        = "@modelcontextprotocol/sdk"
	sdkVersion        = "1.32.2"
	sdkEntry          = "node_modules/@modelcontextprotocol/sdk/dist/esm/client/index.js"
	filesystemPackage = "@modelcontextprotocol/server-filesystem"
	filesystemVersion = "2026.8.31"
	filesystemEntry   = "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
)

// npmPackage returns the directory where pkg@version is installed under
// the user's cache, installing it with npm if entry is not there yet
// (internal/testsupport/npmtest).
func npmPackage(t *testing.T, pkg, version, entry string) string {
	t.Helper()
	return npmtest.Package(t, pkg, version, entry)
}

// buildCLI builds the codemode binary into a directory of the test.
func buildCLI(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		hostcap.Missing(t, hostcap.GoCommand, err)
	}
	bin := filepath.Join(t.TempDir(), "codemode")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// nodeFixture is `codemode mcp` with its upstreams for the node-driven
// tests: server-everything as "everything", server-filesystem as "files"
// (allowed notesDir, where notes.txt is; its write_file needs approval),
// and an OpenAPI document served on loopback as "greeter".
type nodeFixture struct {
	bin, backend string
	args         []string // "mcp" and its flags
	everything   string   // server-everything's entry point
	notesDir     string
}

// mcpFixture installs the upstreams, builds the binary and starts the
// greeter; it sets GREETER_KEY and NOTES_PATH for the test.
func mcpFixture(t *testing.T) nodeFixture {
	t.Helper()
	everything := npmtest.Everything(t)
	files := filepath.Join(npmPackage(t, filesystemPackage, filesystemVersion, filesystemEntry), filesystemEntry)
	bin := buildCLI(t)
	backend := "jail"
	if out, err := exec.Command(bin, "exec", "-c", "pass").CombinedOutput(); err != nil {
		hostcap.Without(t, hostcap.UserNS, "the unsandboxed backend (the test is of the protocol)", err, ": ", strings.TrimSpace(string(out)))
		backend = "unsandboxed"
	}
	notesDir := t.TempDir()
	notes := filepath.Join(notesDir, "notes.txt")
	if err := os.WriteFile(notes, []byte("from the filesystem server"), 0o600); err != nil {
		t.Fatal(err)
	}
	spec := greeter(t)
	t.Setenv("GREETER_KEY", "sesame")
	t.Setenv("NOTES_PATH", notes)
	return nodeFixture{
		bin: bin, backend: backend, everything: everything, notesDir: notesDir,
		args: []string{"mcp", "--backend", backend, "--timeout", "2m", "--progress-interval", "500ms",
			"--mcp", "everything=node " + everything + " stdio",
			"--mcp", "files=node " + files + " " + notesDir, "--approve", "files.write_file",
			"--openapi", "greeter=" + spec, "--openapi-auth", "greeter.key=GREETER_KEY"},
	}
}

// scenarioStep is one line of the scenario's output.
type scenarioStep struct {
	Step    string `json:"step"`
	Text    string `json:"text"`
	IsError bool   `json:"isError"`
	Error   string `json:"error"`
}

// TestMCPTypeScriptClient drives `codemode mcp`, with two MCP servers from
// npm (the reference server and the filesystem server) and an OpenAPI
// document on loopback as its upstreams, with the official TypeScript
// SDK's client, over stdio and over streamable HTTP on loopback: list,
// search, describe, an execute whose Python calls tools of all three, a
// variable kept across two calls, a typed error, a cancellation that
// interrupts a block, progress notifications of a long block, a tool that
// needs approval approved and declined through elicitation, and an
// upstream killed mid-session and started again by its next call.
func TestMCPTypeScriptClient(t *testing.T) {
	sdk := npmPackage(t, sdkPackage, sdkVersion, sdkEntry)
	fx := mcpFixture(t)
	bin, serverArgs := fx.bin, fx.args
	script, err := filepath.Abs(filepath.Join("testdata", "mcpclient", "scenario.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	notesDir := fx.notesDir

	t.Run("stdio", func(t *testing.T) {
		args := append([]string{script, sdk, "stdio", bin}, serverArgs...)
		steps := runScenario(t, args)
		checkScenario(t, steps)
		// In the log: docs/mcp-server.md quotes it.
		t.Logf("no-op execute on a warm session over stdio, median of 20: %s ms (%s backend)", steps["noop-ms"].Text, fx.backend)
	})
	t.Run("http", func(t *testing.T) {
		// The approval step writes this file again.
		_ = os.Remove(filepath.Join(notesDir, "approved.txt"))
		url, pid := startHTTPServer(t, bin, serverArgs)
		checkScenario(t, runScenario(t, []string{script, sdk, "http", url}, "CODEMODE_PID="+strconv.Itoa(pid)))
	})
}

// startHTTPServer starts `codemode` with args and --http on loopback, and
// returns its URL and process id; the server stops with the test.
func startHTTPServer(t *testing.T, bin string, args []string) (string, int) {
	t.Helper()
	srv := exec.Command(bin, append(args, "--http", "127.0.0.1:0")...)
	stderr, err := srv.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = srv.Process.Signal(os.Interrupt)
		_ = srv.Wait()
	})
	url := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			if _, u, ok := strings.Cut(line, "serving MCP on "); ok {
				url <- u
			}
			t.Log("server: " + line)
		}
	}()
	select {
	case u := <-url:
		return u, srv.Process.Pid
	case <-time.After(time.Minute):
		t.Fatal("codemode mcp --http did not say where it serves")
		return "", 0
	}
}

// runScenario runs the scenario script with node and returns its steps
// by name.
func runScenario(t *testing.T, args []string, env ...string) map[string]scenarioStep {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the scenario failed: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	steps := map[string]scenarioStep{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		var s scenarioStep
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("scenario output %q: %v", line, err)
		}
		steps[s.Step] = s
		t.Logf("%s: %+v", s.Step, s)
	}
	return steps
}

func checkScenario(t *testing.T, steps map[string]scenarioStep) {
	t.Helper()
	check := func(name string, ok func(s scenarioStep) bool, want string) {
		t.Helper()
		s, found := steps[name]
		if !found || s.Error != "" || !ok(s) {
			t.Errorf("step %s: want %s, got %+v", name, want, s)
		}
	}
	check("list", func(s scenarioStep) bool { return s.Text == "describe,execute,search" }, "the tools describe, execute, search")
	check("search", func(s scenarioStep) bool {
		return !s.IsError && strings.Contains(s.Text, "everything.get_sum") && strings.Contains(s.Text, "from tools.everything import get_sum")
	}, "get_sum among the matches with its import line")
	check("describe", func(s scenarioStep) bool { return !s.IsError && strings.Contains(s.Text, "def get_sum(") }, "get_sum's signature")
	check("execute1", func(s scenarioStep) bool {
		return !s.IsError && strings.Contains(s.Text, "The sum of 2 and 40 is 42.") && strings.Contains(s.Text, "Echo: hi from python") &&
			strings.Contains(s.Text, "from the filesystem server") && strings.Contains(s.Text, "hello, ada")
	}, "the results of server-everything's get-sum and echo, server-filesystem's read_text_file and the OpenAPI operation")
	check("execute2", func(s scenarioStep) bool {
		return !s.IsError && strings.Contains(s.Text, "kept: The sum of 2 and 40 is 42.")
	}, "the variable of the first call")
	check("files", func(s scenarioStep) bool {
		return !s.IsError && s.Text == `{"embedded":["a small file"],"links":["large.txt"],"read":[100000]}`
	}, "small.txt embedded, large.txt linked and read back in full")
	check("typed-error", func(s scenarioStep) bool { return !s.IsError && strings.HasPrefix(s.Text, "ToolError") }, "a ToolError for a bad argument")
	if s := steps["cancel"]; s.Error == "" {
		t.Errorf("step cancel: want the aborted call to throw, got %+v", s)
	}
	check("after-cancel", func(s scenarioStep) bool { return !s.IsError && s.Text == "True\n" }, "the variables kept: the block is interrupted in place")
	if ms, err := strconv.Atoi(steps["cancel-ms"].Text); err != nil || ms > 30_000 {
		t.Errorf("the cancelled block was not interrupted: the next call came back %s ms after the cancelled one began", steps["cancel-ms"].Text)
	}
	check("progress", func(s scenarioStep) bool { return !s.IsError && s.Text == "done\n" }, "the long block's output")
	if n, err := strconv.Atoi(steps["progress-count"].Text); err != nil || n < 2 {
		t.Errorf("a 2.5 s block asked with a progress token, reported on every 500 ms: got %s progress notifications, want 2 or more", steps["progress-count"].Text)
	}
	check("approve", func(s scenarioStep) bool {
		return !s.IsError && strings.Contains(s.Text, "written with approval") && strings.Contains(s.Text, "kept: The sum")
	}, "the approved write_file done, read back, and the session's variables kept")
	check("decline", func(s scenarioStep) bool {
		return !s.IsError && strings.HasPrefix(s.Text, "denied\n") && strings.Contains(s.Text, "kept: The sum")
	}, "ToolDeniedError for the declined write_file")
	check("elicited", func(s scenarioStep) bool { return s.Text == "2" }, "the client asked twice")
	check("killed", func(s scenarioStep) bool { return s.Text == "1" }, "the filesystem server found among the server's children")
	check("dead-upstream", func(s scenarioStep) bool {
		return !s.IsError && strings.Contains(s.Text, "from the filesystem server") && !strings.Contains(s.Text, "Error") &&
			strings.Contains(s.Text, "kept: The sum")
	}, "the killed server started again and its tool answering, the session going on")
	if ms, err := strconv.Atoi(steps["dead-upstream-ms"].Text); err != nil || ms > 30_000 {
		t.Errorf("the call of the killed server's tool took %s ms: want the server started again promptly, not a hang", steps["dead-upstream-ms"].Text)
	}
	check("after-dead", func(s scenarioStep) bool { return !s.IsError && strings.Contains(s.Text, "The sum of 1 and 1 is 2.") }, "the other upstream still served")
}
