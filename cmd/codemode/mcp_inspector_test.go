package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The MCP Inspector, whose CLI mode drives a server one request per run.
const (
	inspectorPackage = "@modelcontextprotocol/inspector"
	inspectorVersion = "2.12.0"
	inspectorEntry   = "node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"
)

// inspectorResult is what the Inspector's CLI prints for tools/list and
// tools/call.
type inspectorResult struct {
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError bool `json:"isError"`
}

func (r inspectorResult) text() string {
	var b strings.Builder
	for _, c := range r.Content {
		if c.Type == "text" {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// TestMCPInspectorCLI drives `codemode mcp`, with the upstreams of
// TestMCPTypeScriptClient, with the MCP Inspector's CLI mode: over stdio
// (the Inspector starts the server, one client session per run) it lists
// the tools, searches, describes, and runs an execute whose Python calls
// tools of both MCP servers and the OpenAPI operation; over streamable
// HTTP on loopback, the same execute.
func TestMCPInspectorCLI(t *testing.T) {
	inspector := filepath.Join(npmPackage(t, inspectorPackage, inspectorVersion, inspectorEntry), inspectorEntry)
	fx := mcpFixture(t)
	// The Inspector keeps a catalog of servers and their secrets under
	// HOME: keep them in the test's directory.
	home := t.TempDir()
	env := []string{"HOME=" + home, "MCP_CATALOG_PATH=" + filepath.Join(home, "mcp.json")}
	run := func(t *testing.T, target []string, args ...string) inspectorResult {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		argv := append([]string{inspector, "--cli"}, args...)
		if len(target) > 0 {
			// The server's environment: the Inspector passes few of its
			// own variables on.
			argv = append(argv, "-e", "GREETER_KEY="+os.Getenv("GREETER_KEY"))
		}
		argv = append(argv, target...)
		cmd := exec.CommandContext(ctx, "node", argv...)
		cmd.Env = append(os.Environ(), env...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("inspector %v: %v\nstdout:\n%s\nstderr:\n%s", args, err, out, stderr.String())
		}
		var r inspectorResult
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("inspector %v: its output is not the JSON of a result (%v):\n%s\nstderr:\n%s", args, err, out, stderr.String())
		}
		return r
	}
	code := strings.Join([]string{
		"from tools.everything import get_sum, echo",
		"from tools.files import read_text_file",
		"from tools.greeter import greet",
		"print(get_sum(a=2, b=40))",
		"print(echo(message='hi from the inspector'))",
		"print(read_text_file(path=" + jsonString(t, os.Getenv("NOTES_PATH")) + ")['content'])",
		"print(greet(name='ada')['text'])",
	}, "\n")
	checkExecute := func(t *testing.T, r inspectorResult) {
		t.Helper()
		got := r.text()
		for _, want := range []string{"The sum of 2 and 40 is 42.", "Echo: hi from the inspector", "from the filesystem server", "hello, ada"} {
			if r.IsError || !strings.Contains(got, want) {
				t.Errorf("execute (error %v): want %q in its output, got %q", r.IsError, want, got)
			}
		}
	}

	t.Run("stdio", func(t *testing.T) {
		target := append([]string{fx.bin}, fx.args...)
		r := run(t, target, "--method", "tools/list")
		var names []string
		for _, tl := range r.Tools {
			names = append(names, tl.Name)
		}
		slices.Sort(names)
		if strings.Join(names, ",") != "describe,execute,search" {
			t.Errorf("tools/list: got %v, want describe, execute, search", names)
		}
		r = run(t, target, "--method", "tools/call", "--tool-name", "search", "--tool-arg", "query=read a text file")
		if got := r.text(); r.IsError || !strings.Contains(got, "from tools.files import read_text_file") {
			t.Errorf("search (error %v): want read_text_file's import line, got %s", r.IsError, got)
		}
		r = run(t, target, "--method", "tools/call", "--tool-name", "describe", "--tool-arg", "name=greeter.greet")
		if got := r.text(); r.IsError || !strings.Contains(got, "def greet(") || !strings.Contains(got, "Greet someone by name.") {
			t.Errorf("describe (error %v): want greet's signature and summary, got %s", r.IsError, got)
		}
		checkExecute(t, run(t, target, "--method", "tools/call", "--tool-name", "execute", "--tool-arg", "code="+code))
	})
	t.Run("http", func(t *testing.T) {
		url, _ := startHTTPServer(t, fx.bin, fx.args)
		checkExecute(t, run(t, nil, "--transport", "http", "--server-url", url, "--method", "tools/call", "--tool-name", "execute", "--tool-arg", "code="+code))
	})
}

// jsonString is s as a JSON string, which is a Python string literal too
// for the paths of the test.
func jsonString(t *testing.T, s string) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
