package codemode

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/adk-codemode/codemode/internal/both/observe"
	eng "github.com/adk-codemode/codemode/internal/host/engine"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool/toolconfirmation"
)

// Durable blocks (Config.Durable), on ADK: engine.TurnLog says how.

// recordPause saves the turn's record when a block of a durable turn
// pauses under the execute_code call callID; a failure leaves the block
// resumable by this process only, and is logged.
func (e *engine) recordPause(ctx agent.Context, tn *turn, callID string, f *eng.Block, req *eng.ApprovalRequest) {
	if !e.cfg.Durable {
		return
	}
	err := fmt.Errorf("the runner has no artifact service")
	if a := artifactsOf(ctx); a != nil {
		err = eng.SaveRecord(ctx, artifactStore{a}, tn.Log(), callID, f, req, time.Now().Add(e.cfg.ApprovalTimeout))
	}
	if err != nil {
		slog.Warn("codemode: the paused block's record was not saved; only this process can resume it", "call", callID, "error", err)
	}
}

// spendHere marks the record spent when this process resumes the block it
// holds (engine.TurnLog.SpendHeld); elsewhere is true, with the result to
// give, when another process resumed the block already.
func (e *engine) spendHere(ctx agent.Context, tn *turn) (out map[string]any, elsewhere bool) {
	a := artifactsOf(ctx)
	if !e.cfg.Durable || a == nil {
		return nil, false
	}
	if !tn.Log().SpendHeld(ctx, artifactStore{a}, ctx.FunctionCallID()) {
		return eng.Result("", eng.MsgAnsweredAgain, nil), true
	}
	return nil, false
}

// resumeElsewhere resumes the block paused under ctx's call from its
// saved record, when this process does not hold it; ok is false when
// there is no record to resume. args are the execute_code call's, whose
// code is the block that paused.
func (e *engine) resumeElsewhere(ctx agent.Context, conf *toolconfirmation.ToolConfirmation, args any) (out map[string]any, ok bool) {
	a := artifactsOf(ctx)
	if !e.cfg.Durable || a == nil {
		return nil, false
	}
	callID := ctx.FunctionCallID()
	cannot := func(format string, v ...any) (map[string]any, bool) {
		return eng.CannotResume(callID, fmt.Sprintf(format, v...)), true
	}
	rec, err := eng.LoadRecord(ctx, artifactStore{a}, callID)
	switch {
	case err != nil:
		return cannot("its record could not be read (%v)", err)
	case rec == nil:
		return nil, false
	case rec.Pending == nil:
		return eng.Result("", eng.MsgAnsweredAgain, nil), true
	}
	// ADK runs the call again with the arguments it had when it paused.
	if code, err := codeArg(args); err != nil || code != rec.Blocks[rec.Pending.Block] {
		return cannot("its record is of other code than this call's")
	}
	// Another block of this invocation (answered in the same message)
	// holds its sandbox; the record is not spent, to be answered again.
	if e.turns.Lookup(ctx.InvocationID()) != nil {
		return cannot("another block of this invocation runs; answer one request at a time")
	}
	// Spent first: whatever happens next, this answer resumes the turn once.
	if err := eng.SpendRecord(ctx, artifactStore{a}, rec, callID); err != nil {
		return cannot("its record could not be marked as resumed (%v)", err)
	}
	tn, err := e.acquire(ctx.InvocationID())
	if err != nil {
		return cannot("%v", err)
	}
	exec := &execCall{parent: ctx, id: callID}
	tn.Begin(exec)
	defer tn.End(exec, func() { exec.end() })
	defer e.reportArtifacts(ctx, exec)
	defer exec.results.Flush(ctx, exec)
	if _, err := e.surfaceOf(ctx, tn, withArtifacts(ctx)); err != nil {
		return cannot("the tools could not be resolved (%v)", err)
	}
	id := observe.Identity{Invocation: ctx.InvocationID(), Session: ctx.SessionID(), Agent: ctx.AgentName(), CallID: callID}
	out, err = tn.Resume(ctx, rec, eng.Confirmation(*conf),
		func(code string) *eng.Block { return e.launch(ctx, tn, code, id) },
		// As a block resumed in this process: one that pauses again is
		// announced by a new execute_code call (see parkAgain).
		func(f *eng.Block) (map[string]any, error) { return e.settle(ctx, tn, exec, f, true) })
	if err != nil {
		return eng.Result("", fmt.Sprintf("The code resumed from its record stopped: %v.", err), nil), true
	}
	return out, true
}
