package codemode

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	eng "github.com/adk-codemode/codemode/internal/host/engine"

	"google.golang.org/genai"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/toolconfirmation"
)

// Approval from code.
//
// A tool called from code that asks for confirmation (ctx.RequestConfirmation,
// functiontool's RequireConfirmation) does not get an answer at once: the
// Python thread stays blocked in its call, the host keeps the call, and
// execute_code returns with the tool's request on its own actions, keyed by
// execute_code's function call id. ADK's flow turns that into its
// adk_request_confirmation function call, whose originalFunctionCall is the
// execute_code call, and ends the invocation. The block, its sandbox and its
// variables stay alive (Config.ApprovalTimeout). When the person's answer
// comes back, ADK runs execute_code again with the same id and the answer
// as its ToolConfirmation; the plugin then resumes the paused block instead
// of running the code: approved, the tool runs and the code continues with
// its result; denied, the code gets ToolDeniedError. The block's final
// output is execute_code's result.
//
// ADK resumes only the tools of the agent, and execute_code, which the
// plugin adds to each model request, is not one of them: the flow reports it
// as not found to the on-tool-error callbacks, with the answer on the tool
// context, and the plugin's callback resumes the block there.
//
// A block that asks again after being resumed pauses again. ADK makes no
// confirmation request for a call it resumed, so the plugin answers the
// invocation's next model request itself with a new execute_code call (same
// code, a fresh id): running that call announces the request, and ADK asks
// the person as for any call. Requests from several threads are queued and
// asked one at a time, in the order they were made.

// confirmationRequest returns the request a tool call made, if it made one.
func confirmationRequest(tc *callContext, st *surfaceTool, args map[string]any) (*eng.ApprovalRequest, bool) {
	tc.exec.mu.Lock()
	defer tc.exec.mu.Unlock()
	reqs := tc.actions.RequestedToolConfirmations
	if len(reqs) == 0 {
		return nil, false
	}
	conf, ok := reqs[tc.id]
	if !ok {
		// A request under another id: take the first, in a stable order.
		keys := make([]string, 0, len(reqs))
		for k := range reqs {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		conf = reqs[keys[0]]
	}
	return eng.NewApprovalRequest(st.Code, tc.id, args, eng.Confirmation(conf)), true
}

// confirmedContext is a tool call's context when it runs again with the
// person's answer.
type confirmedContext struct {
	*callContext
	conf *toolconfirmation.ToolConfirmation
}

func (c confirmedContext) ToolConfirmation() *toolconfirmation.ToolConfirmation { return c.conf }

// parkedBlock is a block paused for approval, held past its invocation
// (engine.Parked).
type parkedBlock = eng.ParkedBlock[*turn]

func sessionKey(ctx agent.ReadonlyContext) string {
	return ctx.AppName() + "\x00" + ctx.UserID() + "\x00" + ctx.SessionID()
}

// park holds the paused block of the turn tn for the answer to req, asked
// as a confirmation of the execute_code call callID. With exec, the call
// that followed the block, the request goes on its actions now.
func (e *engine) park(ctx agent.Context, tn *turn, callID string, f *eng.Block, req *eng.ApprovalRequest, exec *execCall) (*parkedBlock, map[string]any) {
	announce := exec != nil
	p := &parkedBlock{Session: sessionKey(ctx), CallID: callID, Turn: tn, Block: f, Req: req}
	tn.Park(p)
	if !e.parked.Park(p, announce) {
		tn.Shutdown()
		return nil, eng.Result("", "The code was stopped: the plugin was closed while it awaited approval.", nil)
	}
	// Before the person is asked: the answer may reach another process.
	e.recordPause(ctx, tn, callID, f, req)
	if announce {
		// Under the call's lock: tool calls still finishing write to the
		// same actions.
		exec.mu.Lock()
		e.requestOn(ctx, callID, req)
		exec.mu.Unlock()
	}
	return p, pausedResult(req, "")
}

// requestOn puts req on ctx's actions as the confirmation of the call
// callID, the way ctx.RequestConfirmation does for a direct call.
func (e *engine) requestOn(ctx agent.Context, callID string, req *eng.ApprovalRequest) {
	a := ctx.Actions()
	if a == nil {
		return
	}
	if a.RequestedToolConfirmations == nil {
		a.RequestedToolConfirmations = map[string]toolconfirmation.ToolConfirmation{}
	}
	a.RequestedToolConfirmations[callID] = toolconfirmation.ToolConfirmation(req.Confirmation(callID))
	a.SkipSummarization = true
}

// parkAgain parks a resumed block that paused at another request. The
// request is announced by a new execute_code call that the invocation's
// next model request answers with (see [engine.continuation]).
func (e *engine) parkAgain(ctx agent.Context, tn *turn, f *eng.Block, req *eng.ApprovalRequest) map[string]any {
	callID := "codemode-approval-" + randomID()
	p, out := e.park(ctx, tn, callID, f, req, nil)
	if p == nil {
		return out
	}
	e.parked.Continue(p, ctx.InvocationID())
	return pausedResult(req, callID)
}

func randomID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// continuation is the model response that announces a block paused again
// in this invocation: an execute_code call with the block's code and the
// id the block is parked under, or nil.
func (e *engine) continuation(invocation string) *model.LLMResponse {
	p := e.parked.Continuation(invocation)
	if p == nil {
		return nil
	}
	return &model.LLMResponse{
		Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{
			ID: p.CallID, Name: ToolName, Args: map[string]any{"code": p.Block.Code()},
		}}}},
		TurnComplete: true,
	}
}

// announce answers the execute_code call that continues a block paused
// again: the request goes on its actions, and the block stays parked.
func (e *engine) announce(ctx agent.Context) (map[string]any, bool) {
	p := e.parked.Announce(sessionKey(ctx), ctx.FunctionCallID())
	if p == nil {
		return nil, false
	}
	e.requestOn(ctx, p.CallID, p.Req)
	return pausedResult(p.Req, ""), true
}

// pausedResult is execute_code's result for a block paused at req. next,
// if set, is the execute_code call that asks for the answer.
func pausedResult(req *eng.ApprovalRequest, next string) map[string]any {
	msg := fmt.Sprintf("The code is paused at its call of %s, which asks a person for approval; it continues when they answer.", req.Tool)
	if next != "" {
		msg = fmt.Sprintf("The code paused again at its call of %s, which asks a person for approval; the request is made as execute_code call %s, and the code continues when they answer.", req.Tool, next)
	}
	out := eng.Result("", "", nil)
	pending := map[string]any{"tool": req.Tool, "hint": req.Conf.Hint, "message": msg}
	if args, ok := eng.BoundedArgs(req.Args); ok {
		pending["args"] = args
	}
	out["awaiting_approval"] = pending
	return out
}

// resume continues the block parked for the answer conf to ctx's call,
// on behalf of that call run again by ADK with the code args.
func (e *engine) resume(ctx agent.Context, conf *toolconfirmation.ToolConfirmation, args any) (map[string]any, error) {
	p, err := e.parked.Take(sessionKey(ctx), ctx.FunctionCallID())
	if err != nil {
		return nil, err
	}
	if p == nil {
		if out, ok := e.resumeElsewhere(ctx, conf, args); ok {
			return out, nil
		}
		return e.withNotices(ctx, eng.Result("", e.parked.Unknown(sessionKey(ctx), ctx.FunctionCallID()), nil)), nil
	}
	tn := p.Turn
	if out, elsewhere := e.spendHere(ctx, tn); elsewhere {
		p.Block.Cancel(errors.New("the block was resumed by another process"))
		tn.Shutdown()
		return out, nil
	}
	e.turns.Adopt(ctx.InvocationID(), tn)
	// ADK's span of this execute_code call links to the block it resumes.
	p.Block.Observed().LinkFrom(ctx)
	exec := &execCall{parent: ctx, id: ctx.FunctionCallID()}
	tn.Begin(exec)
	defer tn.End(exec, func() { exec.end() })
	defer e.reportArtifacts(ctx, exec)
	defer exec.results.Flush(ctx, exec)
	p.Block.Answer(eng.Confirmation(*conf))
	return e.settle(ctx, tn, exec, p.Block, true)
}

// msgBusy is the result of code sent while a block of the same turn awaits
// approval.
const msgBusy = "This code did not run: an earlier block of this turn is paused awaiting a person's approval, and the sandbox runs one block at a time. Wait for the answer before running more code."

// withNotices adds the session's pending notices to out's stderr, once.
func (e *engine) withNotices(ctx agent.ReadonlyContext, out map[string]any) map[string]any {
	stderr, _ := out["stderr"].(string)
	if s := e.parked.Notices(sessionKey(ctx), stderr); s != stderr {
		out["stderr"] = s
	}
	return out
}

// OnToolError is the on-tool-error callback through which ADK's flow hands
// the plugin the answer to a request for approval made from code: the flow
// runs the execute_code call again, finds no tool of the agent by that
// name, and reports it here with the answer on ctx. Other errors are left
// alone. The plugin registers it; without the plugin, package callbacks
// gives it as the agent's on-tool-error callback.
func (h *hookSet) OnToolError(ctx agent.Context, t tool.Tool, args map[string]any, err error) (map[string]any, error) {
	if t == nil || t.Name() != ToolName || ctx.ToolConfirmation() == nil {
		return nil, nil
	}
	if _, ours := t.(*execTool); ours {
		return nil, nil
	}
	if _, inner := ctx.(confirmedContext); inner {
		return nil, nil
	}
	return h.e.resume(ctx, ctx.ToolConfirmation(), args)
}
