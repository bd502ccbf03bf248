package codemode

import (
	"context"
	"errors"
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
