package codemode

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/adk-codemode/codemode/internal/both/observe"
	eng "github.com/adk-codemode/codemode/internal/host/engine"

	"google.golang.org/genai"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool"

	"github.com/adk-codemode/codemode/transport"
)

// execTool is the execute_code tool.
type execTool struct {
	e    *engine
	decl *genai.FunctionDeclaration
}

var (
	_ tool.Tool    = (*execTool)(nil)
	_ runnableTool = (*execTool)(nil)
)

func (t *execTool) Name() string                            { return ToolName }
func (t *execTool) Description() string                     { return t.decl.Description }
func (t *execTool) IsLongRunning() bool                     { return false }
func (t *execTool) Declaration() *genai.FunctionDeclaration { return t.decl }

// msgBlocksPerTurn is the result of a call past Budgets.BlocksPerTurn.
const msgBlocksPerTurn = "The code did not run: this turn has made %d execute_code calls, the most Budgets.BlocksPerTurn allows. Answer with what you have found so far."

// Run runs the code in the invocation's sandbox, opening it on the first
// call of the turn. Calls of one invocation run one at a time. A block
// whose tool call asks for confirmation pauses there, and Run returns
// with the request on its actions (see approval.go); called again with
// the answer, Run resumes that block instead of running the code.
func (t *execTool) Run(ctx agent.Context, args any) (map[string]any, error) {
	e := t.e
	if conf := ctx.ToolConfirmation(); conf != nil {
		return e.resume(ctx, conf, args)
	}
	code, err := codeArg(args)
	if err != nil {
		return nil, err
	}
	if out, ok := e.announce(ctx); ok {
		return out, nil
	}
	if msg := e.tooLong(code); msg != "" {
		return eng.Result("", msg, nil), nil
	}
	tn, err := e.acquire(ctx.InvocationID())
	if err != nil {
		return nil, err
	}
	exec := &execCall{parent: ctx, id: ctx.FunctionCallID()}
	tn.Begin(exec)
	defer tn.End(exec, func() { exec.end() })
	// First on every way out (tool calls may have saved artifacts before
	// a lost connection): no save is accepted once the delta is taken, so
	// the hook sees what the event records.
	defer e.reportArtifacts(ctx, exec)
	// The block's tool results are saved before they are reported.
	defer exec.results.Flush(ctx, exec)
	// The surface is resolved on the turn the call runs on: a turn looked
	// up again could be another one, created after this one was released.
	if _, err := e.surfaceOf(ctx, tn, withArtifacts(ctx)); err != nil {
		return nil, err
	}
	if tn.AwaitingApproval() {
		return e.withNotices(ctx, eng.Result("", msgBusy, nil)), nil
	}
	if limit := e.cfg.Budgets.blocksPerTurn(); limit > 0 && !tn.CountBlock(limit) {
		return e.withNotices(ctx, eng.Result("", fmt.Sprintf(msgBlocksPerTurn, limit), nil)), nil
	}
	f := e.launch(ctx, tn, code, observe.Identity{
		Invocation: ctx.InvocationID(), Session: ctx.SessionID(), Agent: ctx.AgentName(), CallID: ctx.FunctionCallID(),
	})
	return e.settle(ctx, tn, exec, f, false)
}

// finish shapes the outcome of a block that ended.
func (e *engine) finish(ctx agent.Context, exec *execCall, res *transport.Result, sess transport.Session, err error) (map[string]any, error) {
	var lost *eng.LostError
	if errors.As(err, &lost) {
		return eng.Result("", lost.Msg, nil), nil
	}
	if err != nil {
		return nil, err
	}
	out := eng.Output{MaxChars: e.cfg.MaxOutputChars, LoadArtifact: !e.cfg.DisableArtifactTools, Observer: e.obs}
	return out.Shape(ctx, exec, exec.id, sess, res), nil
}

// codeArg is execute_code's code argument.
func codeArg(args any) (string, error) {
	m, _ := args.(map[string]any)
	code, ok := m["code"].(string)
	if !ok {
		return "", fmt.Errorf("execute_code: the code argument must be a string, got %T", m["code"])
	}
	return code, nil
}

// tooLong is the model's message for code over MaxCodeChars, or "".
func (e *engine) tooLong(code string) string {
	limit := e.cfg.MaxCodeChars
	if limit <= 0 || len(code) <= limit {
		return ""
	}
	if n := utf8.RuneCountInString(code); n > limit {
		return fmt.Sprintf("Code exceeds maximum allowed length (%s > %s chars).", eng.Thousands(n), eng.Thousands(limit))
	}
	return ""
}

// reportArtifacts ends exec's saves and passes what it saved to
// OnArtifactsSaved.
func (e *engine) reportArtifacts(ctx agent.Context, exec *execCall) {
	if delta := exec.end(); len(delta) > 0 && e.cfg.OnArtifactsSaved != nil {
		e.cfg.OnArtifactsSaved(ctx, delta)
	}
}

// turnSandbox is the sandbox of the turn tn, as the engine runs blocks in
// it.
type turnSandbox struct {
	e  *engine
	tn *turn
}

func (s turnSandbox) Session(ctx context.Context) (transport.Session, bool, error) {
	return s.e.session(ctx, s.tn)
}

func (s turnSandbox) Discard(sess transport.Session) { s.tn.Discard(sess) }

func (s turnSandbox) Closed() bool { return s.e.isClosed() }

func (e *engine) isClosed() bool { return e.turns.Closed() }
