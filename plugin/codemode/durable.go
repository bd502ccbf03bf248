package codemode

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/adk-codemode/codemode/internal/both/observe"
	eng "github.com/adk-codemode/codemode/internal/host/engine"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool/toolconfirmation"
)

// Durable blocks (Config.Durable): a durable turn records its blocks'
// code and their tool calls (engine.TurnLog); a block that pauses saves
// the record as an artifact before the person is asked (recordPause). An
// answer that reaches a process without the block resumes the turn from
// the record (resumeElsewhere): its blocks run again in a fresh sandbox,
// answered from the record (engine.Replay), up to the call that waited,
// which runs with the answer.

// recordPause saves the turn's record when a block of a durable turn
// pauses under the execute_code call callID; a failure leaves the block
// resumable by this process only, and is logged.
func (e *engine) recordPause(ctx agent.Context, tn *turn, callID string, f *eng.Block, req *eng.ApprovalRequest) {
	if !e.cfg.Durable {
		return
	}
	err := errors.New("the runner has no artifact service")
	if a := artifactsOf(ctx); a != nil {
		err = eng.SaveRecord(ctx, artifactStore{a}, tn.Log(), callID, f, req, time.Now().Add(e.cfg.ApprovalTimeout))
	}
	if err != nil {
		slog.Warn("codemode: the paused block's record was not saved; only this process can resume it", "call", callID, "error", err)
	}
}

// spendHere marks the record of the block paused under ctx's call spent,
// when this process resumes the block itself: the answer, given again to
// another process, then resumes nothing there.
func (e *engine) spendHere(ctx agent.Context, tn *turn) {
	a := artifactsOf(ctx)
	if !e.cfg.Durable || a == nil {
		return
	}
	if err := tn.Log().Spend(ctx, artifactStore{a}, ctx.FunctionCallID()); err != nil {
		slog.Warn("codemode: the resumed block's record was not marked spent", "call", ctx.FunctionCallID(), "error", err)
	}
}

// resumeElsewhere resumes the block paused under ctx's call from its
// saved record, when this process does not hold it; ok is false when
// there is no record to resume.
func (e *engine) resumeElsewhere(ctx agent.Context, conf *toolconfirmation.ToolConfirmation) (out map[string]any, ok bool, err error) {
	a := artifactsOf(ctx)
	if !e.cfg.Durable || a == nil {
		return nil, false, nil
	}
	callID := ctx.FunctionCallID()
	rec, err := eng.LoadRecord(ctx, artifactStore{a}, callID)
	if err != nil || rec == nil {
		return nil, err != nil, err
	}
	// Spent first: whatever happens next, this answer resumes the turn once.
	if err := eng.SpendRecord(ctx, artifactStore{a}, rec, callID); err != nil {
		return nil, true, fmt.Errorf("codemode: the block paused under %s cannot be resumed: %w", callID, err)
	}
	tn, err := e.acquire(ctx.InvocationID())
	if err != nil {
		return nil, true, err
	}
	exec := &execCall{parent: ctx, id: callID}
	tn.Begin(exec)
	defer tn.End(exec, func() { exec.end() })
	defer e.reportArtifacts(ctx, exec)
	defer exec.results.Flush(ctx, exec)
	if _, err := e.surfaceOf(ctx, tn, withArtifacts(ctx)); err != nil {
		return nil, true, err
	}
	id := observe.Identity{Invocation: ctx.InvocationID(), Session: ctx.SessionID(), Agent: ctx.AgentName(), CallID: callID}
	out, err = tn.Resume(ctx, rec, eng.Confirmation(*conf),
		func(code string) *eng.Block { return e.launch(ctx, tn, code, id) },
		// As a block resumed in this process: one that pauses again is
		// announced by a new execute_code call (see parkAgain).
		func(f *eng.Block) (map[string]any, error) { return e.settle(ctx, tn, exec, f, true) })
	return out, true, err
}
