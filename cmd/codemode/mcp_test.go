package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// greetingSpec is an OpenAPI document of one operation behind an API key.
const greetingSpec = `openapi: 3.0.3
info: {title: Greeter, version: "1"}
servers: [{url: %q}]
components:
  securitySchemes:
    key: {type: apiKey, in: header, name: X-Key}
security: [{key: []}]
paths:
  /greet/{name}:
    get:
      operationId: greet
      summary: Greet someone by name.
      parameters:
        - {name: name, in: path, required: true, schema: {type: string}}
      responses:
        "200":
          description: the greeting
          content:
            application/json:
              schema:
                type: object
                properties: {text: {type: string}}
`

// greeter serves greetingSpec's operation on loopback, for the key
// "sesame" only.
func greeter(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Key") != "sesame" {
			http.Error(w, `{"error":"bad key"}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"text":"hello, %s"}`, strings.TrimPrefix(r.URL.Path, "/greet/"))
	}))
	t.Cleanup(srv.Close)
	spec := filepath.Join(t.TempDir(), "greeter.yaml")
	if err := os.WriteFile(spec, fmt.Appendf(nil, greetingSpec, srv.URL), 0o600); err != nil {
		t.Fatal(err)
	}
	return spec
}

// serveCLI runs "codemode mcp args..." in process over pipes and returns
// a client session of the Go SDK connected to it; the command ends with
// the test, and its stderr is logged.
func serveCLI(t *testing.T, args ...string) *mcp.ClientSession {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var errb lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(append([]string{"mcp"}, args...), inR, outW, &errb)
		_ = outW.Close()
	}()
	c := mcp.NewClient(&mcp.Implementation{Name: "cli-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatalf("connect: %v; stderr:\n%s", err, errb.String())
	}
	t.Cleanup(func() {
		_ = cs.Close()
		_ = inW.Close()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("codemode mcp exited %d; stderr:\n%s", code, errb.String())
			}
		case <-time.After(30 * time.Second):
			t.Errorf("codemode mcp did not exit when its input closed")
		}
	})
	return cs
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func toolText(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var sb strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			sb.WriteString(tc.Text)
		}
	}
	return sb.String(), res.IsError
}

func TestMCPServeOpenAPI(t *testing.T) {
	spec := greeter(t)
	t.Setenv("GREETER_KEY", "sesame")
	cs := serveCLI(t, "--backend", "unsandboxed", "--openapi", "greeter="+spec, "--openapi-auth", "greeter.key=GREETER_KEY")
	text, isErr := toolText(t, cs, "search", map[string]any{"query": "greet someone"})
	if isErr || !strings.Contains(text, "from tools.greeter import greet") {
		t.Fatalf("search (error %v): want the greet operation's import line, got %s", isErr, text)
	}
	text, isErr = toolText(t, cs, "execute", map[string]any{"code": "from tools.greeter import greet\ng = greet(name='ada')\nprint(g['text'])"})
	if isErr || text != "hello, ada\n" {
		t.Fatalf("execute (error %v): got %q, want the greeting (the key from the environment must reach the API)", isErr, text)
	}
	text, _ = toolText(t, cs, "execute", map[string]any{"code": "print(g['text'].upper())"})
	if text != "HELLO, ADA\n" {
		t.Errorf("the variable did not persist to the second execute: %q", text)
	}
}

func TestMCPConfigFile(t *testing.T) {
	spec := greeter(t)
	t.Setenv("GREETER_KEY", "sesame")
	cfg := filepath.Join(filepath.Dir(spec), "codemode-mcp.json")
	body := `{"openapi": {"hello": {"file": "greeter.yaml", "auth": {"key": {"api_key_env": "GREETER_KEY"}}}}}`
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cs := serveCLI(t, "--backend", "unsandboxed", "--config", cfg)
	text, isErr := toolText(t, cs, "execute", map[string]any{"code": "from tools.hello import greet\nprint(greet(name='bo')['text'])"})
	if isErr || text != "hello, bo\n" {
		t.Fatalf("execute (error %v): got %q", isErr, text)
	}
}

func TestMCPUsageErrors(t *testing.T) {
	t.Setenv("CODEMODE_TEST_UNSET", "")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--http", "0.0.0.0:8765"}, 2, "not a loopback address"},
		{[]string{"--http", "8765"}, 2, "give HOST:PORT"},
		{[]string{"--mcp", "everything"}, 2, "want NAME=VALUE"},
		{[]string{"--mcp-url", "x=ftp://example.invalid"}, 2, "not http:// or https://"},
		{[]string{"--mcp", "a=true", "--mcp-url", "a=http://127.0.0.1:1/"}, 2, `namespace "a" is given twice`},
		{[]string{"--openapi-auth", "doc.key=CODEMODE_TEST_UNSET"}, 2, "CODEMODE_TEST_UNSET is not set"},
		{[]string{"--backend", "nope"}, 2, "unknown backend"},
		{[]string{"--config", "does-not-exist.json"}, 1, "does-not-exist.json"},
		{[]string{"--approve", "write_file"}, 2, "want NAME.TOOL"},
		{[]string{"--approve", "ghost.write_file"}, 1, `--approve names "ghost", which no upstream is called`},
	} {
		code, _, stderr := runCLI(t, "", append([]string{"mcp"}, tc.args...)...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("mcp %v: exit %d, stderr %q; want exit %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}

// TestMCPApprove: a tool named by --approve needs a person's approval; a
// client that cannot be asked (this one has no elicitation handler) has
// the call declined, and the code sees ToolDeniedError.
func TestMCPApprove(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(mcpServeEnv, "1")
	cs := serveCLI(t, "--backend", "unsandboxed", "--mcp", "weather="+exe, "--approve", "weather.get-forecast")
	code := "from tools.weather import get_forecast\nfrom tools import ToolDeniedError\ntry:\n    get_forecast(city='Oslo')\nexcept ToolDeniedError:\n    print('denied')"
	text, isErr := toolText(t, cs, "execute", map[string]any{"code": code})
	if isErr || !strings.HasPrefix(text, "denied\n") || !strings.Contains(text, "does not support elicitation") {
		t.Errorf("execute (error %v): want the call declined with the reason, got %q", isErr, text)
	}
	// The Python name matches too, and an OpenAPI document is refused.
	spec := greeter(t)
	code2, _, stderr := runCLI(t, "", "mcp", "--openapi", "greeter="+spec, "--approve", "greeter.greet")
	if code2 != 1 || !strings.Contains(stderr, "approvals are for MCP servers' tools") {
		t.Errorf("--approve of an OpenAPI operation: exit %d, stderr %q", code2, stderr)
	}
	if approvalKey("get-forecast") != approvalKey("get_forecast") || approvalKey("Get_Forecast") != "get_forecast" {
		t.Errorf("approvalKey does not match a server's name with Python's")
	}
}
