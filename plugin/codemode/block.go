package codemode

// A block's lifecycle is the engine's (internal/host/engine's Block):
// [engine.launch] starts the code on the turn's sandbox, on a goroutine of
// its own; the execute_code call that ran it follows it until it ends or
// pauses at a request for a person's approval; [engine.settle] ends that
// call with the block's output, or with the paused result while the block
// waits (approval.go has the rest of that path); [engine.interrupt] stops
// it as its timeout would. The block's tool calls enter and leave it
// (dispatch.go).

import (
	"context"

	"google.golang.org/adk/v2/agent"

	"github.com/adk-codemode/codemode/internal/both/observe"
	eng "github.com/adk-codemode/codemode/internal/host/engine"
	"github.com/adk-codemode/codemode/transport"
)

// launch starts code on the turn's sandbox, on a goroutine of its own. The
// block's run time is bounded on the host, so that the time it waits for
// approval does not count; a cancelled ctx interrupts it while a call
// follows it. A durable turn records the code as its next block.
func (e *engine) launch(ctx context.Context, tn *turn, code string, id observe.Identity) *eng.Block {
	seq := -1
	if e.cfg.Durable {
		seq = tn.Log().AddBlock(code)
	}
	return eng.Launch{
		Code: code, Seq: seq, Identity: id, Observer: e.obs, Backend: e.cfg.Backend.Name(),
		Timeout: e.cfg.Timeout, Grace: e.cfg.Grace,
		Attach: tn.SetBlock,
		Run: func(ctx context.Context, blk transport.Block, clock *eng.RunClock) (*transport.Result, transport.Session, error) {
			return eng.RunBlock(ctx, turnSandbox{e, tn}, eng.Budgets(e.cfg.Budgets), blk, clock)
		},
	}.Start(ctx)
}

// interrupt stops the block the invocation runs, if any, with cause, as
// its timeout would (see hooklink.Interrupt).
func (e *engine) interrupt(invocation string, cause error) bool {
	tn := e.turns.Lookup(invocation)
	if tn == nil {
		return false
	}
	f := tn.CurrentBlock()
	if f == nil {
		return false
	}
	f.Cancel(cause)
	return true
}

// settle ends an execute_code call that follows f: the block's output once
// it ends, or, when it pauses, the paused result, the block parked until
// the answer. resumed says the call resumed the block after an answer.
func (e *engine) settle(ctx agent.Context, tn *turn, exec *execCall, f *eng.Block, resumed bool) (map[string]any, error) {
	if req := f.Follow(ctx); req != nil {
		if resumed {
			return e.withNotices(ctx, e.parkAgain(ctx, tn, f, req)), nil
		}
		_, out := e.park(ctx, tn, exec.id, f, req, exec)
		return e.withNotices(ctx, out), nil
	}
	tn.SetBlock(nil)
	res, sess, err := f.Outcome()
	out, err := e.finish(ctx, exec, res, sess, err)
	if err != nil {
		return nil, err
	}
	if note := f.BudgetNote(eng.Budgets(e.cfg.Budgets)); note != "" {
		stderr, _ := out["stderr"].(string)
		out["stderr"] = eng.AppendLine(stderr, note)
	}
	return e.withNotices(ctx, out), nil
}
