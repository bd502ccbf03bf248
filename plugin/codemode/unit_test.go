package codemode

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"google.golang.org/genai"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/memory"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/toolconfirmation"

	"github.com/adk-codemode/codemode/transport"
)

// fakeCtx is a bare tool context for driving execute_code without a runner.
type fakeCtx struct {
	agent.StrictContextMock
	actions *session.EventActions
}

func fakeToolContext(ctx context.Context) *fakeCtx {
	return &fakeCtx{StrictContextMock: agent.StrictContextMock{Ctx: ctx}, actions: &session.EventActions{StateDelta: map[string]any{}}}
}

func (c *fakeCtx) UserContent() *genai.Content                          { return nil }
func (c *fakeCtx) InvocationID() string                                 { return "inv" }
func (c *fakeCtx) AgentName() string                                    { return "a" }
func (c *fakeCtx) ReadonlyState() session.ReadonlyState                 { return nil }
func (c *fakeCtx) UserID() string                                       { return "u" }
func (c *fakeCtx) AppName() string                                      { return "app" }
func (c *fakeCtx) SessionID() string                                    { return "s" }
func (c *fakeCtx) Branch() string                                       { return "" }
func (c *fakeCtx) Artifacts() agent.Artifacts                           { return nil }
func (c *fakeCtx) State() session.State                                 { return nil }
func (c *fakeCtx) FunctionCallID() string                               { return "call-1" }
func (c *fakeCtx) Actions() *session.EventActions                       { return c.actions }
func (c *fakeCtx) RequestConfirmation(string, any) error                { return nil }
func (c *fakeCtx) ToolConfirmation() *toolconfirmation.ToolConfirmation { return nil }
func (c *fakeCtx) SearchMemory(context.Context, string) (*memory.SearchResponse, error) {
	return nil, errors.New("no memory")
}

var _ agent.Context = (*fakeCtx)(nil)

// failingBackend never starts a sandbox.
type failingBackend struct{}

func (failingBackend) Name() string { return "failing" }
func (failingBackend) Open(context.Context, transport.SessionConfig) (transport.Session, error) {
	return nil, errors.New("no sandbox here")
}

// scriptedBackend opens sessions whose Exec calls replay errs in order,
// then succeed. An Exec whose context is done stops the block, as a real
// session does.
type scriptedBackend struct {
	mu     sync.Mutex
	errs   []error
	opened int
	closed int
}

func (b *scriptedBackend) Name() string { return "scripted" }
func (b *scriptedBackend) Open(ctx context.Context, _ transport.SessionConfig) (transport.Session, error) {
	b.mu.Lock()
	b.opened++
	b.mu.Unlock()
	return &scriptedSession{b: b}, nil
}

type scriptedSession struct{ b *scriptedBackend }

func (s *scriptedSession) Environment() transport.Environment { return transport.Environment{} }
func (s *scriptedSession) Exec(ctx context.Context, blk transport.Block) (*transport.Result, error) {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	if ctx.Err() != nil {
		return &transport.Result{Stopped: true, ExitCode: 1, Stderr: "CodeTimeout: " + context.Cause(ctx).Error()}, nil
	}
	if len(s.b.errs) > 0 {
		err := s.b.errs[0]
		s.b.errs = s.b.errs[1:]
		return nil, err
	}
	return &transport.Result{Stdout: "ran " + blk.Code}, nil
}
func (s *scriptedSession) ReadFile(context.Context, string) ([]byte, error) { return nil, nil }
func (s *scriptedSession) Close() error {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	s.b.closed++
	return nil
}

func TestVersionMismatchDiscardsTurn(t *testing.T) {
	b := &scriptedBackend{errs: []error{&transport.VersionError{Sandbox: 1, Host: 2}}}
	h, err := newAgentHooks(Config{Backend: b})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	_, err = h.e.tool[1].Run(fakeToolContext(t.Context()), map[string]any{"code": "x"})
	var ve *transport.VersionError
	if !errors.As(err, &ve) {
		t.Fatalf("Run: %v, want a *transport.VersionError", err)
	}
	if b.closed != 1 {
		t.Errorf("closed %d sandboxes, want 1", b.closed)
	}
}

// TestLostSandboxTellsTheModel: a sandbox lost while the code may have
// run reaches the model as execute_code's result, not as a tool error:
// stderr says what may have happened, and the sandbox is dropped.
func TestLostSandboxTellsTheModel(t *testing.T) {
	b := &scriptedBackend{errs: []error{&transport.ConnectionError{Stage: transport.Unknown, Err: errors.New("socket closed")}}}
	h, err := newAgentHooks(Config{Backend: b})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	got, err := h.e.tool[1].Run(fakeToolContext(t.Context()), map[string]any{"code": "x"})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	stderr, _ := got["stderr"].(string)
	if got["stdout"] != "" || !strings.Contains(stderr, "It may or may not have run") || b.opened != 1 || b.closed != 1 {
		t.Errorf("result %v after %d opened and %d closed sandboxes; want the model told the code may have run, once, and the sandbox dropped", got, b.opened, b.closed)
	}
}

func TestErrorType(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{errors.New("x"), "ToolError"},
		{&UnsupportedToolActionError{Tool: "t"}, "UnsupportedToolActionError"},
		{errors.Join(errors.New("a")), "ToolError"},
		{context.DeadlineExceeded, "TimeoutError"},
	}
	for _, tt := range tests {
		if got := errorType(tt.err); got != tt.want {
			t.Errorf("errorType(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

func TestNotRunnableToolRefused(t *testing.T) {
	_, err := New(Config{Tools: []tool.Tool{builtinTool{}}})
	var nr *NotRunnableError
	if !errors.As(err, &nr) || nr.Tool != "google_search" {
		t.Errorf("New: %v, want a *NotRunnableError for google_search", err)
	}
}

// builtinTool is a tool the host cannot run, like a model built-in.
type builtinTool struct{}

func (builtinTool) Name() string        { return "google_search" }
func (builtinTool) Description() string { return "" }
func (builtinTool) IsLongRunning() bool { return false }

func TestClosedPluginRefusesCode(t *testing.T) {
	h, err := newAgentHooks(Config{Backend: failingBackend{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = h.e.tool[1].Run(fakeToolContext(t.Context()), map[string]any{"code": "print(1)"})
	if !errors.Is(err, ErrClosed) {
		t.Errorf("Run after Close: %v, want ErrClosed", err)
	}
}
