package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/adk-codemode/codemode/plugin/codemode"
)

// The names of the server's tools.
const (
	ExecuteTool  = "execute"
	SearchTool   = "search"
	DescribeTool = "describe"
)

// Limits of the discovery tools' input.
const (
	maxQueryChars = 1_000
	maxNameChars  = 500
	maxLimit      = 50
)

// ExecuteInput is the input of the execute tool.
type ExecuteInput struct {
	Code string `json:"code" jsonschema:"the Python code to run"`
}

// SearchInput is the input of the search tool.
type SearchInput struct {
	Query string `json:"query" jsonschema:"what the tool should do, in a few words"`
	Limit int    `json:"limit,omitempty" jsonschema:"the most matches to return (default 10, at most 50)"`
}

// DescribeInput is the input of the describe tool.
type DescribeInput struct {
	Name string `json:"name" jsonschema:"the tool's dotted name as search returns it, such as github.list_issues"`
}

// executeDescription is the how-to of the execute tool: what the
// <code-mode> block and the execute_code description tell an agent's
// model, sized for a client's tool list.
func executeDescription(timeout time.Duration) string {
	var b strings.Builder
	b.WriteString("Run Python code in a sandbox where the server's tools are importable as typed functions from the `tools` package. ")
	b.WriteString("Find the tools with the search tool and read one with describe before calling it (in code: `from tools._discovery import search, describe`). ")
	b.WriteString("Import each tool as its import line shows and pass arguments by keyword; a call returns plain Python data of the type its stub annotates, and arguments are checked against the tool's schema first. ")
	b.WriteString("A failed tool call raises `ToolError` (`HTTPStatusError` for an HTTP failure; `ToolDeniedError` when a person declines a call that needs their approval), importable from `tools`. ")
	b.WriteString("Only what you print comes back: filter or summarise large results in Python first, and make several calls in one block rather than one block per call. ")
	b.WriteString("Variables, imports and files in the working directory persist across execute calls of this MCP session; a cancelled call, or a session idle for long, starts over in a fresh sandbox. The files a call creates or changes come back in its result as resources.")
	if timeout > 0 {
		fmt.Fprintf(&b, " Each call can run for up to %s.", strings.TrimSuffix(timeout.String(), "0s"))
	}
	return b.String()
}

const searchDescription = "Search the tools callable from the execute tool's Python: returns the best matches for a query (BM25 over names, namespaces, descriptions and parameters), each with its dotted name, its Python import line and a one-line summary, as JSON."

const describeDescription = "Describe one tool callable from the execute tool's Python: its import line, its signature and its docstring (what it does, its parameters, what it returns), by the dotted name search returns."

func (s *Server) addTools(cm codemode.Config) {
	timeout := cm.Timeout
	if timeout == 0 {
		timeout = codemode.DefaultTimeout
	}
	s.timeout = max(timeout, 0)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: ExecuteTool, Description: executeDescription(timeout)}, s.execute)
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true}
	mcp.AddTool(s.mcp, &mcp.Tool{Name: SearchTool, Description: searchDescription, Annotations: readOnly}, s.search)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: DescribeTool, Description: describeDescription, Annotations: readOnly}, s.describe)
}

// runCode runs code in the client session of req and returns the
// execute_code result. A question for the client (an approval) is an
// error here: only execute asks.
func (s *Server) runCode(ctx context.Context, req *mcp.CallToolRequest, code string) (map[string]any, error) {
	o, err := s.runOrAnswer(ctx, req, code)
	if err != nil {
		return nil, err
	}
	if o.ask != nil {
		return nil, errors.New("the code paused for an approval")
	}
	return o.response, nil
}

// runOrAnswer runs code in the client session of req or, for the retry of
// a call that asked the client for input, resumes its block with the
// answer.
func (s *Server) runOrAnswer(ctx context.Context, req *mcp.CallToolRequest, code string) (outcome, error) {
	c, err := s.acquire(req.Session)
	if err != nil {
		return outcome{}, err
	}
	defer s.release(c)
	if req.Params != nil && req.Params.RequestState != "" {
		return c.answer(ctx, req.Session, req.Params.RequestState, req.Params.InputResponses)
	}
	return c.run(ctx, req.Session, code)
}

func (s *Server) execute(ctx context.Context, req *mcp.CallToolRequest, in ExecuteInput) (*mcp.CallToolResult, any, error) {
	retry := req.Params != nil && req.Params.RequestState != ""
	if !retry && strings.TrimSpace(in.Code) == "" {
		return errorResult("execute: the code argument is empty; give the Python code to run"), nil, nil
	}
	if tok := req.Params.GetProgressToken(); tok != nil && req.Session != nil {
		defer s.reportProgress(ctx, req.Session, tok)()
	}
	o, err := s.runOrAnswer(ctx, req, in.Code)
	if err != nil {
		return errorResult("execute: " + err.Error()), nil, nil
	}
	if o.ask != nil {
		// The block waits for a person's approval: the client asks its
		// user and calls again with the answer and the state.
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{approvalInput: o.ask}, RequestState: o.state}, nil, nil
	}
	res := blockResult(o.response)
	if !res.IsError {
		res.Content = append(res.Content, o.files...)
	}
	return res, nil, nil
}

// reportProgress tells the client every ProgressInterval how long the
// call has run, in seconds, out of its timeout if there is one, until the
// function it returns is called.
func (s *Server) reportProgress(ctx context.Context, ss *mcp.ServerSession, token any) (stop func()) {
	done := make(chan struct{})
	exited := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(exited)
		t := time.NewTicker(s.cfg.ProgressInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			ran := time.Since(start)
			p := &mcp.ProgressNotificationParams{
				ProgressToken: token,
				Progress:      ran.Seconds(),
				Message:       "the code has run for " + ran.Round(time.Second).String(),
			}
			if s.timeout > 0 {
				p.Total = s.timeout.Seconds()
			}
			if err := ss.NotifyProgress(ctx, p); err != nil {
				return
			}
		}
	}()
	return func() {
		close(done)
		<-exited
	}
}

// blockResult is an execute_code result as the client sees it: stdout,
// then stderr under a heading, and the fields as structured content.
func blockResult(out map[string]any) *mcp.CallToolResult {
	if msg, ok := out["error"].(string); ok {
		return errorResult(msg)
	}
	stdout, _ := out["stdout"].(string)
	stderr, _ := out["stderr"].(string)
	var text strings.Builder
	text.WriteString(stdout)
	if stderr != "" {
		if text.Len() > 0 && !strings.HasSuffix(stdout, "\n") {
			text.WriteByte('\n')
		}
		text.WriteString("[stderr]\n")
		text.WriteString(stderr)
	}
	if text.Len() == 0 {
		text.WriteString("(no output: print what you want to see)")
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: text.String()}},
		StructuredContent: map[string]any{"stdout": stdout, "stderr": stderr},
	}
}

func errorResult(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

// discoveryCode is Python that prints the JSON of search or describe
// called with args, leaving no name behind in the session.
func discoveryCode(fn string, args ...any) (string, error) {
	lits := make([]string, len(args))
	for i, a := range args {
		// A JSON string or number is a Python literal too.
		b, err := json.Marshal(a)
		if err != nil {
			return "", err
		}
		lits[i] = string(b)
	}
	return fmt.Sprintf(`def __codemode_discover():
    import json
    from tools._discovery import %[1]s
    print(json.dumps(%[1]s(%[2]s)))
try:
    __codemode_discover()
finally:
    del __codemode_discover
`, fn, strings.Join(lits, ", ")), nil
}

// discover runs search or describe in the client session and decodes the
// printed JSON.
func (s *Server) discover(ctx context.Context, req *mcp.CallToolRequest, fn string, args ...any) (*mcp.CallToolResult, any) {
	code, err := discoveryCode(fn, args...)
	if err != nil {
		return errorResult(fn + ": " + err.Error()), nil
	}
	out, err := s.runCode(ctx, req, code)
	if err != nil {
		return errorResult(fn + ": " + err.Error()), nil
	}
	if msg, ok := out["error"].(string); ok {
		return errorResult(fn + ": " + msg), nil
	}
	stdout, _ := out["stdout"].(string)
	stderr, _ := out["stderr"].(string)
	var v any
	if err := json.Unmarshal([]byte(stdout), &v); err != nil {
		// describe and search raise with a message for the caller (an
		// unknown name, a bad query): the exception's line of the
		// traceback.
		return errorResult(fn + ": " + exceptionLine(stderr)), nil
	}
	return nil, v
}

// exceptionRE matches the line of a traceback that names the exception.
var exceptionRE = regexp.MustCompile(`^[A-Za-z_][\w.]*: `)

// exceptionLine is the last line of stderr that names an exception, or
// stderr itself, bounded.
func exceptionLine(stderr string) string {
	lines := strings.Split(stderr, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if exceptionRE.MatchString(lines[i]) {
			return clip(lines[i])
		}
	}
	return clip(strings.TrimSpace(stderr))
}

// clip bounds a message from the sandbox.
func clip(s string) string {
	const limit = 2_000
	if len(s) <= limit {
		return s
	}
	return strings.ToValidUTF8(s[:limit], "") + "…"
}

func (s *Server) search(ctx context.Context, req *mcp.CallToolRequest, in SearchInput) (*mcp.CallToolResult, any, error) {
	q := strings.TrimSpace(in.Query)
	if q == "" || len(q) > maxQueryChars {
		return errorResult(fmt.Sprintf("search: give a query of 1 to %d characters", maxQueryChars)), nil, nil
	}
	limit := in.Limit
	if limit <= 0 {
		limit = 10
	}
	limit = min(limit, maxLimit)
	res, v := s.discover(ctx, req, "search", q, limit)
	if res != nil {
		return res, nil, nil
	}
	b, _ := json.MarshalIndent(v, "", " ")
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: string(b)}},
		StructuredContent: map[string]any{"matches": v},
	}, nil, nil
}

func (s *Server) describe(ctx context.Context, req *mcp.CallToolRequest, in DescribeInput) (*mcp.CallToolResult, any, error) {
	name := strings.TrimSpace(in.Name)
	if name == "" || len(name) > maxNameChars {
		return errorResult(fmt.Sprintf("describe: give a tool's name as search returns it, of 1 to %d characters", maxNameChars)), nil, nil
	}
	res, v := s.discover(ctx, req, "describe", name)
	if res != nil {
		return res, nil, nil
	}
	text, _ := v.(string)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
}
