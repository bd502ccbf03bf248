package codemode

import (
	"context"
	"errors"
	"fmt"
	"strings"

	eng "github.com/adk-codemode/codemode/internal/host/engine"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool/toolconfirmation"

	"github.com/adk-codemode/codemode/transport"
)

// UnsupportedToolActionError reports a tool called from code that asked for
// something code cannot honour: an agent transfer, an escalation, or (for a
// long-running tool) a result that comes later. A tool that asks for
// confirmation is not refused: the block pauses until a person answers.
type UnsupportedToolActionError struct {
	Tool    string // as code calls it: get_sum, tools.files.list_
	Actions []string
}

func (e *UnsupportedToolActionError) Error() string {
	return fmt.Sprintf("tool %q cannot be called from code: it requested %s; call it directly instead of from code",
		e.Tool, strings.Join(e.Actions, ", "))
}

// CallbackError reports that the callbacks a direct call of a tool would go
// through could not be found, so the call from code was refused.
type CallbackError struct {
	Tool string // as code calls it: get_sum, tools.files.list_
	Err  error
}

func (e *CallbackError) Error() string {
	return fmt.Sprintf("tool %q was not called: its callbacks cannot be honoured: %v", e.Tool, e.Err)
}

func (e *CallbackError) Unwrap() error { return e.Err }

// handler answers the tool calls of one turn's sandbox.
type handler struct {
	e *engine
	t *turn
}

var _ transport.ToolHandler = handler{}

func (h handler) CallTool(ctx context.Context, call transport.ToolCall) transport.ToolResult {
	// While the block is paused for approval no execute_code call runs;
	// the call waits for the block to resume (see engine.Block.Enter).
	f := h.t.CurrentBlock()
	if f == nil {
		return transport.Errorf("ToolError", "tool %s was called while no execute_code call is running; "+
			"tools can only be called while the code that calls them runs", call.Name)
	}
	s, ok := h.t.Surface()
	if !ok {
		return transport.Errorf("ToolNotFound", "no tool named %q", call.Name)
	}
	st, ok := s.Lookup(call.Name)
	if !ok {
		return transport.Errorf("ToolNotFound", "no tool named %q", call.Name)
	}
	return h.dispatch().Run(ctx, f, st, st.Tool.Description(), call)
}

// dispatch is how the engine runs the turn's tool calls from code.
func (h handler) dispatch() eng.Dispatch[runnableTool, *execCall] {
	var journal *eng.Journal
	if h.e.cfg.Durable {
		journal = &h.t.Log().Journal
	}
	return eng.Dispatch[runnableTool, *execCall]{
		Journal:     journal,
		Replay:      h.t.Replay(),
		Budgets:     eng.Budgets(h.e.cfg.Budgets),
		ToolTimeout: h.e.cfg.ToolTimeout,
		Abandoned:   &h.t.Abandoned,
		Current: func() (*execCall, string, bool) {
			exec, ok := h.t.Current()
			if !ok {
				return nil, "", false
			}
			return exec, exec.id, true
		},
		Call: h.e.callTool,
	}
}

// callTool runs one tool call from code the way ADK's flow runs a direct
// one: arguments validated, then the tool through its callbacks ([chain]),
// then what code cannot honour refused, then the result shaped for Python.
// A call that asked for confirmation returns the request instead of a
// result; conf is the approval when it runs again. id is the call's
// function call id.
func (e *engine) callTool(ctx context.Context, exec *execCall, st *surfaceTool, id string, args map[string]any, ctl *eng.CallControl, conf *eng.Confirmation) (transport.ToolResult, *eng.ApprovalRequest) {
	args, naming, err := st.PrepareArgs(args)
	if err != nil {
		return transport.ToolResult{Err: &transport.ToolError{Type: "ValidationError", Message: err.Error()}}, nil
	}
	c, err := e.chainFor(exec, st.Code)
	if err != nil {
		return errorResult(st.Name, err), nil
	}
	tc := newCallContext(ctx, exec, id, ctl)
	var run agent.Context = tc
	if conf != nil {
		answer := toolconfirmation.ToolConfirmation(*conf)
		run = confirmedContext{callContext: tc, conf: &answer}
	}
	result, via, err := c.run(run, st, args)
	eng.ObservedCall(ctx).AnsweredBy(via)
	if refused := refusal(tc, st, result, err); refused != nil {
		return errorResult(st.Name, refused), nil
	}
	if req, asked := confirmationRequest(tc, st, args); asked {
		if conf != nil {
			return transport.Errorf("ToolError", "tool %s asked for confirmation again after it was approved; it was not run", st.Code), nil
		}
		return transport.ToolResult{}, req
	}
	if !tc.merge() {
		return transport.Errorf("TimeoutError", "tool %s exceeded its timeout", st.Code), nil
	}
	if err != nil {
		return errorResult(st.Name, err), nil
	}
	return transport.ToolResult{Value: e.resultValue(ctx, exec, st, tc.id, naming, result)}, nil
}

// refusal is the error for a call that asked for what code cannot
// honour, or nil.
func refusal(tc *callContext, st *surfaceTool, result map[string]any, err error) error {
	if unsupported := unsupportedActions(tc); len(unsupported) > 0 {
		return &UnsupportedToolActionError{Tool: st.Code, Actions: unsupported}
	}
	if err == nil && st.Tool.IsLongRunning() && len(result) == 0 {
		return &UnsupportedToolActionError{Tool: st.Code, Actions: []string{"a long-running operation without an immediate result"}}
	}
	return nil
}

// resultValue is a tool's result as the code gets it: taken out of the
// tool's wrapper when it has one (a callback that returned another shape
// is passed as it is), made JSON-safe, and saved as an artifact when the
// tool's results are.
func (e *engine) resultValue(ctx context.Context, exec *execCall, st *surfaceTool, callID string, naming eng.ResultNaming, result map[string]any) any {
	var value any = result
	if st.ResultKey != "" {
		if v, ok := result[st.ResultKey]; ok && len(result) == 1 {
			value = v
		}
	}
	value = eng.JSONSafe(value)
	if st.SaveResult {
		value = e.saveToolResult(ctx, exec, st, callID, naming, value)
	}
	return value
}

// unsupportedActions lists what the call's actions ask for that code
// cannot honour.
func unsupportedActions(tc *callContext) []string {
	tc.exec.mu.Lock()
	defer tc.exec.mu.Unlock()
	var out []string
	a := tc.actions
	if a.TransferToAgent != "" {
		out = append(out, "agent transfer")
	}
	if a.Escalate {
		out = append(out, "escalation")
	}
	return out
}

// errorResult turns err into the failure the sandbox raises: its type is
// the most specific named Go error type in err's chain, else ToolError;
// an error that reports an HTTP status is raised as HTTPStatusError.
func errorResult(toolName string, err error) transport.ToolResult {
	if info := statusError(toolName, err); info != nil {
		return transport.ToolResult{Err: info}
	}
	return transport.ToolResult{Err: &transport.ToolError{Type: eng.ErrorType(err), Message: eng.SandboxText(toolName, err)}}
}

// StatusCoder is implemented by tool errors that carry an HTTP status. Such
// an error, anywhere in the chain of a tool's error, is raised in Python as
// HTTPStatusError with its status_code, and with its body when the error
// also has a method ResponseBody() any.
type StatusCoder interface {
	StatusCode() int
}

// statusError describes err as an HTTPStatusError, or returns nil if no
// error in its chain reports a status.
func statusError(toolName string, err error) *transport.ToolError {
	var sc StatusCoder
	if !errors.As(err, &sc) {
		return nil
	}
	code := sc.StatusCode()
	if code < 100 || code > 999 {
		return nil
	}
	info := &transport.ToolError{Type: "HTTPStatusError", Message: eng.SandboxText(toolName, err), StatusCode: code}
	var rb interface{ ResponseBody() any }
	if errors.As(err, &rb) {
		info.Body = eng.JSONSafe(rb.ResponseBody())
	}
	return info
}
