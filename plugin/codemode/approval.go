package codemode

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/adk-codemode/codemode/internal/both/observe"
	eng "github.com/adk-codemode/codemode/internal/host/engine"

	"google.golang.org/genai"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/toolconfirmation"

	"github.com/adk-codemode/codemode/transport"
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
	return eng.NewApprovalRequest(st.code, tc.id, args, eng.Confirmation(conf)), true
}

// confirmedContext is a tool call's context when it runs again with the
// person's answer.
type confirmedContext struct {
	*callContext
	conf *toolconfirmation.ToolConfirmation
}

func (c confirmedContext) ToolConfirmation() *toolconfirmation.ToolConfirmation { return c.conf }

// approved waits for the answer to req, then runs the call again with it
// or raises ToolDeniedError.
func (h handler) approved(ctx context.Context, f *eng.Block, st *surfaceTool, call transport.ToolCall, req *eng.ApprovalRequest) transport.ToolResult {
	oc := eng.ObservedCall(ctx)
	oc.ApprovalAsked()
	asked := time.Now()
	conf, res, ok := f.Ask(ctx, req)
	switch {
	case !ok:
		oc.ApprovalAnswered(observe.Unanswered, time.Since(asked))
		return res
	case conf.Confirmed:
		oc.ApprovalAnswered(observe.Approved, time.Since(asked))
	default:
		oc.ApprovalAnswered(observe.Declined, time.Since(asked))
	}
	// The answer came with a place among the calls in flight (see
	// [engine.resume]), so the block cannot pause again before this call
	// has run.
	if !conf.Confirmed {
		f.Leave()
		return transport.ToolResult{Err: &transport.ToolError{Type: eng.DeniedType,
			Message: fmt.Sprintf("tool %s was not run: the person asked to approve the call declined it", st.code)}}
	}
	answer := toolconfirmation.ToolConfirmation(*conf)
	res, again := h.dispatchHeld(ctx, f, st, call, req.CallID, &answer)
	if again != nil {
		return transport.Errorf("ToolError", "tool %s asked for confirmation again after it was approved; it was not run", st.code)
	}
	return res
}

// parkedBlock is a block paused for approval, held past its invocation
// until the answer comes or Config.ApprovalTimeout passes.
type parkedBlock struct {
	key     string // the session and the execute_code call id the answer comes for
	session string
	callID  string
	tn      *turn
	f       *eng.Block
	req     *eng.ApprovalRequest
	timer   *time.Timer
	// announced says the request is on an execute_code event; a block
	// that paused again waits for the call that announces it (see
	// [engine.announce]).
	announced  bool
	invocation string // the invocation whose next model request announces it
}

func sessionKey(ctx agent.ReadonlyContext) string {
	return ctx.AppName() + "\x00" + ctx.UserID() + "\x00" + ctx.SessionID()
}

// park holds the paused block of the turn tn for the answer to req, asked
// as a confirmation of the execute_code call callID. With exec, the call
// that followed the block, the request goes on its actions now.
func (e *engine) park(ctx agent.Context, tn *turn, callID string, f *eng.Block, req *eng.ApprovalRequest, exec *execCall) (map[string]any, bool) {
	announce := exec != nil
	p := &parkedBlock{key: sessionKey(ctx) + "\x00" + callID, session: sessionKey(ctx), callID: callID, tn: tn, f: f, req: req, announced: announce}
	tn.mu.Lock()
	tn.parked = p
	tn.mu.Unlock()
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		tn.shutdown()
		return result("", "The code was stopped: the plugin was closed while it awaited approval.", nil), false
	}
	if e.paused == nil {
		e.paused = map[string]*parkedBlock{}
	}
	e.paused[p.key] = p
	p.timer = time.AfterFunc(e.cfg.ApprovalTimeout, func() { e.expire(p) })
	e.mu.Unlock()
	if announce {
		// Under the call's lock: tool calls still finishing write to the
		// same actions.
		exec.mu.Lock()
		e.requestOn(ctx, callID, req)
		exec.mu.Unlock()
	}
	return pausedResult(req, ""), true
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
	a.RequestedToolConfirmations[callID] = toolconfirmation.ToolConfirmation(confirmation(req, callID))
	a.SkipSummarization = true
}

// confirmation is what the person is asked, as the confirmation of the
// execute_code call callID: the tool's own hint after a sentence that says
// which tool the code calls and with which arguments (bounded), and the
// tool's own payload, or, when it gave none (as a tool that only requires
// confirmation does), those facts as data for a client to show. The
// block's code goes with it, at most maxShownCode bytes of it: in the
// payload that Code Mode makes, as "code", and, when the tool gave a
// payload of its own (which goes back to the tool with the answer, so
// nothing is added to it), at the end of the hint. The tool runs again
// with the person's answer, never with this text.
func confirmation(r *eng.ApprovalRequest, callID string) eng.Confirmation {
	conf := r.Conf
	args, shown := boundedArgs(r.Args)
	with := "arguments too long to show here"
	if b, err := json.Marshal(args); shown && err == nil {
		with = string(b)
	}
	lead := fmt.Sprintf("The code of execute_code call %s calls the tool %s with %s.", callID, r.Tool, with)
	if conf.Hint != "" {
		lead += " " + conf.Hint
	}
	code, cut := boundedCode(r.Code)
	if conf.Payload == nil {
		p := map[string]any{"tool": r.Tool, "execute_code_call": callID, "code": code}
		if cut {
			p["code_truncated"] = true
		}
		if shown {
			p["args"] = args
		}
		conf.Payload = p
	} else if code != "" {
		lead += "\n\nThe block's code"
		if cut {
			lead += fmt.Sprintf(" (its first %d bytes)", len(code))
		}
		lead += ":\n" + code
	}
	conf.Hint = lead
	return conf
}

// maxShownCode bounds the block's code shown with a paused call, in bytes.
const maxShownCode = 8192

// boundedCode is code cut to at most maxShownCode bytes at a character's
// start, and whether it was cut.
func boundedCode(code string) (string, bool) {
	if len(code) <= maxShownCode {
		return code, false
	}
	n := maxShownCode
	for n > 0 && !utf8.RuneStart(code[n]) {
		n--
	}
	return code[:n], true
}

// parkAgain parks a resumed block that paused at another request. The
// request is announced by a new execute_code call that the invocation's
// next model request answers with (see [engine.continuation]).
func (e *engine) parkAgain(ctx agent.Context, tn *turn, f *eng.Block, req *eng.ApprovalRequest) map[string]any {
	callID := "codemode-approval-" + randomID()
	if out, ok := e.park(ctx, tn, callID, f, req, nil); !ok {
		return out
	}
	e.mu.Lock()
	if p := e.paused[sessionKey(ctx)+"\x00"+callID]; p != nil {
		p.invocation = ctx.InvocationID()
		if e.continuations == nil {
			e.continuations = map[string]*parkedBlock{}
		}
		e.continuations[p.invocation] = p
	}
	e.mu.Unlock()
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
	e.mu.Lock()
	p := e.continuations[invocation]
	delete(e.continuations, invocation)
	e.mu.Unlock()
	if p == nil {
		return nil
	}
	return &model.LLMResponse{
		Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{
			ID: p.callID, Name: ToolName, Args: map[string]any{"code": p.f.Code()},
		}}}},
		TurnComplete: true,
	}
}

// announce answers the execute_code call that continues a block paused
// again: the request goes on its actions, and the block stays parked.
func (e *engine) announce(ctx agent.Context) (map[string]any, bool) {
	key := sessionKey(ctx) + "\x00" + ctx.FunctionCallID()
	e.mu.Lock()
	p := e.paused[key]
	if p == nil || p.announced {
		e.mu.Unlock()
		return nil, false
	}
	p.announced = true
	e.mu.Unlock()
	e.requestOn(ctx, p.callID, p.req)
	return pausedResult(p.req, ""), true
}

// pausedResult is execute_code's result for a block paused at req. next,
// if set, is the execute_code call that asks for the answer.
func pausedResult(req *eng.ApprovalRequest, next string) map[string]any {
	msg := fmt.Sprintf("The code is paused at its call of %s, which asks a person for approval; it continues when they answer.", req.Tool)
	if next != "" {
		msg = fmt.Sprintf("The code paused again at its call of %s, which asks a person for approval; the request is made as execute_code call %s, and the code continues when they answer.", req.Tool, next)
	}
	out := result("", "", nil)
	pending := map[string]any{"tool": req.Tool, "hint": req.Conf.Hint, "message": msg}
	if args, ok := boundedArgs(req.Args); ok {
		pending["args"] = args
	}
	out["awaiting_approval"] = pending
	return out
}

// maxShownArgs bounds the arguments shown with a paused call, in bytes of
// JSON; larger ones are left out.
const maxShownArgs = 4096

func boundedArgs(args map[string]any) (any, bool) {
	safe := eng.JSONSafe(args)
	b, err := json.Marshal(safe)
	if err != nil || len(b) > maxShownArgs {
		return nil, false
	}
	return safe, true
}

// resume continues the block parked for the answer conf to ctx's call,
// on behalf of that call run again by ADK.
func (e *engine) resume(ctx agent.Context, conf *toolconfirmation.ToolConfirmation) (map[string]any, error) {
	key := sessionKey(ctx) + "\x00" + ctx.FunctionCallID()
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, ErrClosed
	}
	p := e.paused[key]
	if p != nil {
		delete(e.paused, key)
		p.timer.Stop()
	}
	e.mu.Unlock()
	if p == nil {
		return e.withNotices(ctx, result("", e.unknownApproval(ctx), nil)), nil
	}
	tn := p.tn
	e.adopt(ctx.InvocationID(), tn)
	// ADK's span of this execute_code call links to the block it resumes.
	p.f.Observed().LinkFrom(ctx)
	exec := &execCall{parent: ctx, id: ctx.FunctionCallID()}
	tn.begin(exec)
	defer tn.end(exec)
	defer e.reportArtifacts(ctx, exec)
	defer exec.flushResults(ctx)
	p.f.Answer(eng.Confirmation(*conf))
	return e.settle(ctx, tn, exec, p.f, true)
}

// adopt makes the parked turn tn the turn of the invocation that resumes
// it, so that later blocks of that invocation share its variables; when
// the invocation has a turn already, tn closes once its block ends.
func (e *engine) adopt(invocation string, tn *turn) {
	e.mu.Lock()
	defer e.mu.Unlock()
	own := e.turns[invocation] == nil && !e.closed
	if own {
		e.turns[invocation] = tn
		e.startReaperLocked()
	}
	tn.mu.Lock()
	defer tn.mu.Unlock()
	tn.parked = nil
	tn.inUse++
	if own {
		tn.id, tn.released = invocation, false
	} else {
		tn.released = true
	}
}

// awaitingApproval says whether a block of the turn is parked.
func (t *turn) awaitingApproval() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.parked != nil
}

// msgBusy is the result of code sent while a block of the same turn awaits
// approval.
const msgBusy = "This code did not run: an earlier block of this turn is paused awaiting a person's approval, and the sandbox runs one block at a time. Wait for the answer before running more code."

// expire stops a parked block whose answer did not come in time.
func (e *engine) expire(p *parkedBlock) {
	e.mu.Lock()
	if e.paused[p.key] != p {
		e.mu.Unlock()
		return
	}
	delete(e.paused, p.key)
	if p.invocation != "" && e.continuations[p.invocation] == p {
		delete(e.continuations, p.invocation)
	}
	e.noteLocked(p.session, p.callID, fmt.Sprintf(
		"[The code of execute_code call %s was paused at its call of %s awaiting a person's approval, and no answer came within %s: it was stopped, and the turn's variables are gone. %s was not run; the tool calls before it were.]",
		p.callID, p.req.Tool, eng.Seconds(e.cfg.ApprovalTimeout), p.req.Tool))
	e.mu.Unlock()
	p.f.Cancel(errors.New("no approval came in time"))
	p.tn.shutdown()
}

// notice is a message for the model about a block it no longer has.
type notice struct {
	callID string
	msg    string
}

// Bounds on the notices kept for the model.
const (
	maxNoticeSessions = 1024
	maxNotices        = 16
)

func (e *engine) noteLocked(session, callID, msg string) {
	if e.notices == nil {
		e.notices = map[string][]notice{}
	}
	if _, ok := e.notices[session]; !ok && len(e.notices) >= maxNoticeSessions {
		for k := range e.notices {
			delete(e.notices, k)
			break
		}
	}
	ns := append(e.notices[session], notice{callID, msg})
	if len(ns) > maxNotices {
		ns = ns[len(ns)-maxNotices:]
	}
	e.notices[session] = ns
}

// withNotices adds the session's pending notices to out's stderr, once.
func (e *engine) withNotices(ctx agent.ReadonlyContext, out map[string]any) map[string]any {
	e.mu.Lock()
	ns := e.notices[sessionKey(ctx)]
	delete(e.notices, sessionKey(ctx))
	e.mu.Unlock()
	if len(ns) == 0 {
		return out
	}
	stderr, _ := out["stderr"].(string)
	for _, n := range ns {
		stderr = eng.AppendLine(stderr, n.msg)
	}
	out["stderr"] = stderr
	return out
}

// unknownApproval tells the model about an answer for a block this host
// does not hold.
func (e *engine) unknownApproval(ctx agent.Context) string {
	id := ctx.FunctionCallID()
	e.mu.Lock()
	defer e.mu.Unlock()
	ns := e.notices[sessionKey(ctx)]
	for i, n := range ns {
		if n.callID == id {
			e.notices[sessionKey(ctx)] = slices.Delete(ns, i, i+1)
			return strings.Trim(n.msg, "[]")
		}
	}
	return fmt.Sprintf("A person answered a request for approval made by execute_code call %s, but this host no longer holds that code: "+
		"it was restarted, or the code was already resumed or stopped. The code did not continue: the turn's variables are gone and the tool call "+
		"that awaited approval was not run; the tool calls the code made before it were. Check their effects before running the code again.", id)
}

// shutdownParked stops every parked block; e.mu is not held.
func (e *engine) shutdownParked(paused map[string]*parkedBlock) {
	for _, p := range paused {
		p.timer.Stop()
		p.f.Cancel(ErrClosed)
		p.tn.shutdown()
	}
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
	return h.e.resume(ctx, ctx.ToolConfirmation())
}
