package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/adk/v2/tool/mcptoolset"

	"github.com/adk-codemode/codemode/backend/unsandboxed"
	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
	"github.com/adk-codemode/codemode/plugin/codemode"
)

type addArgs struct {
	A int `json:"a"`
	B int `json:"b"`
}

type refuseArgs struct {
	Reason string `json:"reason"`
}

// testTools are a Go function tool that adds and one that always fails.
func testTools(t *testing.T) []tool.Tool {
	t.Helper()
	add, err := functiontool.New(functiontool.Config{Name: "add_numbers", Description: "Add two whole numbers and return their sum."},
		func(_ agent.Context, a addArgs) (map[string]any, error) {
			return map[string]any{"sum": a.A + a.B}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	refuse, err := functiontool.New(functiontool.Config{Name: "refuse", Description: "Always fails, with the reason given."},
		func(_ agent.Context, a refuseArgs) (map[string]any, error) {
			return nil, errors.New("refused: " + a.Reason)
		})
	if err != nil {
		t.Fatal(err)
	}
	hold, err := functiontool.New(functiontool.Config{Name: "hold", Description: "Waits until the call is cancelled, or 30 seconds."},
		func(ctx agent.Context, _ struct{}) (map[string]any, error) {
			select {
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			case <-time.After(30 * time.Second):
				return map[string]any{"held": true}, nil
			}
		})
	if err != nil {
		t.Fatal(err)
	}
	return []tool.Tool{add, refuse, hold}
}

// newTestServer returns a server with testTools on the unsandboxed
// backend (the protocol, not the sandbox, is under test), closed with the
// test.
func newTestServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		hostcap.Missing(t, hostcap.Python, err)
	}
	cfg.CodeMode.Tools = append(cfg.CodeMode.Tools, testTools(t)...)
	if cfg.CodeMode.Backend == nil {
		cfg.CodeMode.Backend = &unsandboxed.Backend{}
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// connect connects a client of the Go SDK to s in memory.
func connect(t *testing.T, s *Server) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx := t.Context()
	if _, err := s.MCP().Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil)
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// callTool calls a tool and returns its text and whether it is an error.
func callTool(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	return text.String(), res.IsError
}

func TestListTools(t *testing.T) {
	cs := connect(t, newTestServer(t, Config{}))
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
		if tl.Description == "" {
			t.Errorf("tool %s has no description", tl.Name)
		}
	}
	slices.Sort(names)
	if want := []string{"describe", "execute", "search"}; !slices.Equal(names, want) {
		t.Errorf("tools %v, want %v", names, want)
	}
	for _, tl := range res.Tools {
		if tl.Name == ExecuteTool {
			for _, want := range []string{"`tools` package", "ToolError", "persist across execute calls", "up to 1m"} {
				if !strings.Contains(tl.Description, want) {
					t.Errorf("execute's description lacks %q: %s", want, tl.Description)
				}
			}
		}
	}
}

func TestSearchAndDescribe(t *testing.T) {
	cs := connect(t, newTestServer(t, Config{}))
	ctx := t.Context()
	text, isErr := callTool(t, ctx, cs, SearchTool, map[string]any{"query": "add two numbers", "limit": 3})
	if isErr {
		t.Fatalf("search failed: %s", text)
	}
	var hits []map[string]string
	if err := json.Unmarshal([]byte(text), &hits); err != nil {
		t.Fatalf("search's text is not the JSON of its matches: %v\n%s", err, text)
	}
	if len(hits) == 0 || hits[0]["name"] != "add_numbers" || hits[0]["import"] != "from tools import add_numbers" {
		t.Errorf("search's best match is not add_numbers with its import line: %v", hits)
	}
	text, isErr = callTool(t, ctx, cs, DescribeTool, map[string]any{"name": "add_numbers"})
	if isErr || !strings.Contains(text, "def add_numbers(") || !strings.Contains(text, "Add two whole numbers") {
		t.Errorf("describe add_numbers (error %v): want its signature and docstring, got:\n%s", isErr, text)
	}
	text, isErr = callTool(t, ctx, cs, DescribeTool, map[string]any{"name": "no_such_tool"})
	if !isErr || !strings.Contains(text, "no_such_tool") {
		t.Errorf("describe of an unknown tool: want an error naming it, got (error %v) %q", isErr, text)
	}
	text, isErr = callTool(t, ctx, cs, SearchTool, map[string]any{"query": " "})
	if !isErr {
		t.Errorf("search with an empty query: want an error, got %q", text)
	}
}

func TestExecuteKeepsState(t *testing.T) {
	s := newTestServer(t, Config{})
	cs := connect(t, s)
	ctx := t.Context()
	text, isErr := callTool(t, ctx, cs, ExecuteTool, map[string]any{"code": "from tools import add_numbers\nx = add_numbers(a=2, b=40)['sum']\nprint(x)"})
	if isErr || text != "42\n" {
		t.Fatalf("first execute: got (error %v) %q, want 42", isErr, text)
	}
	text, isErr = callTool(t, ctx, cs, ExecuteTool, map[string]any{"code": "print(x + 1)"})
	if isErr || text != "43\n" {
		t.Fatalf("second execute: got (error %v) %q, want 43: the variable did not persist", isErr, text)
	}
	// A second client session has a sandbox of its own.
	other := connect(t, s)
	text, _ = callTool(t, ctx, other, ExecuteTool, map[string]any{"code": "print('x' in globals())"})
	if text != "False\n" {
		t.Errorf("another session sees the first one's variable: %q", text)
	}
}

func TestExecuteTypedError(t *testing.T) {
	cs := connect(t, newTestServer(t, Config{}))
	text, isErr := callTool(t, t.Context(), cs, ExecuteTool, map[string]any{"code": `from tools import refuse, ToolError
try:
    refuse(reason="not today")
except ToolError as e:
    print(type(e).__name__, "|", e)
refuse(reason="uncaught")`})
	if isErr {
		t.Fatalf("execute: a Python exception is output, not a failed call: %s", text)
	}
	if !strings.HasPrefix(text, "ToolError | ") || !strings.Contains(text, "refused: not today") {
		t.Errorf("the caught error is not a ToolError with the tool's message:\n%s", text)
	}
	if !strings.Contains(text, "[stderr]") || !strings.Contains(text, "refused: uncaught") {
		t.Errorf("the uncaught error's traceback is not under [stderr]:\n%s", text)
	}
}

func TestExecuteCancel(t *testing.T) {
	cs := connect(t, newTestServer(t, Config{}))
	ctx := t.Context()
	if text, _ := callTool(t, ctx, cs, ExecuteTool, map[string]any{"code": "y = 7\nprint(y)"}); text != "7\n" {
		t.Fatalf("execute: %q", text)
	}
	cctx, cancel := context.WithTimeout(ctx, 700*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: ExecuteTool, Arguments: map[string]any{"code": "import time\ntime.sleep(30)\nprint('slept')"}})
	if err == nil {
		t.Fatal("a cancelled execute returned no error")
	}
	// The next call waits for the server to have ended the cancelled
	// block: it must come back long before the sleep would have ended.
	text, isErr := callTool(t, ctx, cs, ExecuteTool, map[string]any{"code": "print(y, 'slept' in globals())"})
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("the cancelled block was not interrupted: the next call came back after %s", d)
	}
	// Interrupted in place, as at a timeout, the block leaves the
	// session's variables.
	if isErr || text != "7 False\n" {
		t.Errorf("after a cancelled call: want the session's variables kept, got (error %v) %q", isErr, text)
	}
}

func TestExecuteProgress(t *testing.T) {
	s := newTestServer(t, Config{ProgressInterval: 100 * time.Millisecond})
	var mu sync.Mutex
	var got []*mcp.ProgressNotificationParams
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			got = append(got, req.Params)
			mu.Unlock()
		},
	})
	ct, st := mcp.NewInMemoryTransports()
	if _, err := s.MCP().Connect(t.Context(), st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := c.Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	params := &mcp.CallToolParams{Name: ExecuteTool, Arguments: map[string]any{"code": "import time\ntime.sleep(0.6)\nprint('done')"}}
	params.SetProgressToken("p1")
	if _, err := cs.CallTool(t.Context(), params); err != nil {
		t.Fatal(err)
	}
	// Without a token, no progress.
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: ExecuteTool, Arguments: map[string]any{"code": "import time\ntime.sleep(0.3)"}}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) < 3 {
		t.Fatalf("got %d progress notifications for a 0.6s block at 0.1s intervals, want at least 3", len(got))
	}
	for i, p := range got {
		if p.ProgressToken != "p1" || p.Total != 60 || !strings.HasPrefix(p.Message, "the code has run for") {
			t.Errorf("notification %d: %+v", i, p)
		}
		if i > 0 && p.Progress <= got[i-1].Progress {
			t.Errorf("progress did not increase: %v then %v", got[i-1].Progress, p.Progress)
		}
	}
}

// TestExecuteCancelInToolCall cancels a block while it waits for a tool
// call on the host.
func TestExecuteCancelInToolCall(t *testing.T) {
	cs := connect(t, newTestServer(t, Config{}))
	ctx := t.Context()
	cctx, cancel := context.WithTimeout(ctx, 700*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: ExecuteTool, Arguments: map[string]any{"code": "from tools import hold\nq = 5\nhold()\nq = 6"}})
	if err == nil {
		t.Fatal("a cancelled execute returned no error")
	}
	text, isErr := callTool(t, ctx, cs, ExecuteTool, map[string]any{"code": "print(q)"})
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("the cancelled tool call held the block: the next call came back after %s", d)
	}
	if isErr || text != "5\n" {
		t.Errorf("after a cancelled tool call: want the variable set before it, got (error %v) %q", isErr, text)
	}
}

func TestIdleSessionsReaped(t *testing.T) {
	s := newTestServer(t, Config{IdleTimeout: 200 * time.Millisecond})
	cs := connect(t, s)
	ctx := t.Context()
	if text, _ := callTool(t, ctx, cs, ExecuteTool, map[string]any{"code": "z = 1"}); !strings.Contains(text, "no output") {
		t.Fatalf("execute: %q", text)
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.liveSessions() > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the idle session's sandbox was not closed")
		}
		time.Sleep(50 * time.Millisecond)
	}
	text, _ := callTool(t, ctx, cs, ExecuteTool, map[string]any{"code": "print('z' in globals())"})
	if !strings.HasPrefix(text, "False\n") || !strings.Contains(text, "fresh sandbox") {
		t.Errorf("after idling out: want a fresh sandbox, said so, got %q", text)
	}
}

func TestMaxSessions(t *testing.T) {
	s := newTestServer(t, Config{MaxSessions: 1})
	ctx := t.Context()
	a, b := connect(t, s), connect(t, s)
	callTool(t, ctx, a, ExecuteTool, map[string]any{"code": "v = 'a'"})
	callTool(t, ctx, b, ExecuteTool, map[string]any{"code": "v = 'b'"})
	if n := s.liveSessions(); n != 1 {
		t.Errorf("%d sessions hold a sandbox, want at most 1", n)
	}
	text, _ := callTool(t, ctx, a, ExecuteTool, map[string]any{"code": "print('v' in globals())"})
	if !strings.HasPrefix(text, "False\n") {
		t.Errorf("the session idle longest kept its sandbox past MaxSessions: %q", text)
	}
}

func TestCloseEndsSessions(t *testing.T) {
	s := newTestServer(t, Config{})
	cs := connect(t, s)
	callTool(t, t.Context(), cs, ExecuteTool, map[string]any{"code": "w = 1"})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := s.liveSessions(); n != 0 {
		t.Errorf("%d sessions hold a sandbox after Close", n)
	}
	text, isErr := callTool(t, t.Context(), cs, ExecuteTool, map[string]any{"code": "print(1)"})
	if !isErr || !strings.Contains(text, "shut down") {
		t.Errorf("a call after Close: want an error saying the server is shut down, got (error %v) %q", isErr, text)
	}
}

func TestDiscoveryCodeQuotes(t *testing.T) {
	code, err := discoveryCode("search", "a\"b'c\\\n</x>", 3)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("print(json.dumps(search(%s, 3)))", `"a\"b'c\\\n\u003c/x\u003e"`)
	if !strings.Contains(code, want) {
		t.Errorf("the query is not one Python string literal:\n%s", code)
	}
}

type pingArgs struct {
	Text string `json:"text"`
}

// TestDeadUpstream ends an upstream MCP server's session mid-session: the
// next call to its tool raises ToolError in Python, and does not hang.
func TestDeadUpstream(t *testing.T) {
	up := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, nil)
	mcp.AddTool(up, &mcp.Tool{Name: "ping", Description: "Echo the text back."}, func(_ context.Context, _ *mcp.CallToolRequest, in pingArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong " + in.Text}}}, nil, nil
	})
	ct, st := mcp.NewInMemoryTransports()
	upSession, err := up.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := mcptoolset.New(mcptoolset.Config{Transport: ct})
	if err != nil {
		t.Fatal(err)
	}
	s := newTestServer(t, Config{CodeMode: codemode.Config{
		Toolsets:   []tool.Toolset{ts},
		Namespaces: []codemode.Namespace{{Toolset: ts, Name: "up"}},
	}})
	cs := connect(t, s)
	ctx := t.Context()
	text, isErr := callTool(t, ctx, cs, ExecuteTool, map[string]any{"code": "from tools.up import ping\nfrom tools import ToolError\nprint(ping(text='a'))"})
	if isErr || !strings.Contains(text, "pong a") {
		t.Fatalf("the upstream's tool: got (error %v) %q", isErr, text)
	}
	if err := upSession.Close(); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: ExecuteTool, Arguments: map[string]any{"code": "try:\n    ping(text='b')\n    print('no error')\nexcept ToolError as e:\n    print('ToolError')"}})
	if err != nil {
		t.Fatalf("a call to a dead upstream: %v", err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; !strings.HasPrefix(got, "ToolError") {
		t.Errorf("a call to a dead upstream: want ToolError, got %q", got)
	}
}

// TestManySessionsAtOnce runs clients at once past MaxSessions: every call
// comes back, with its output or the message that the server is full.
func TestManySessionsAtOnce(t *testing.T) {
	s := newTestServer(t, Config{MaxSessions: 2})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var clients []*mcp.ClientSession
	for range 6 {
		clients = append(clients, connect(t, s))
	}
	errs := make(chan string, 6*3)
	var wg sync.WaitGroup
	for i, cs := range clients {
		wg.Go(func() {
			for j := range 3 {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: ExecuteTool, Arguments: map[string]any{"code": fmt.Sprintf("print(%d)", i*10+j)}})
				if err != nil {
					errs <- err.Error()
					continue
				}
				text := res.Content[0].(*mcp.TextContent).Text
				if want := fmt.Sprintf("%d\n", i*10+j); !strings.HasPrefix(text, want) && !strings.Contains(text, "running code; try again") {
					errs <- fmt.Sprintf("client %d call %d: %q", i, j, text)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if n := s.liveSessions(); n > 2 {
		t.Errorf("%d sessions hold a sandbox, want at most 2", n)
	}
}
