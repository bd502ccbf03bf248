package codemode

// A block's lifecycle: [engine.launch] starts the code on the turn's
// sandbox, on a goroutine of its own; the execute_code call that ran it
// [engine.follow]s it until it ends or pauses at a request for a person's
// approval; [engine.settle] ends that call with the block's output, or
// with the paused result while the block waits (approval.go has the rest
// of that path); [engine.interrupt] stops it as its timeout would. The
// block's tool calls enter and leave it (dispatch.go), and its runClock
// counts the time it ran, not the time it waited.

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/adk/v2/agent"

	"github.com/adk-codemode/codemode/internal/both/observe"
	eng "github.com/adk-codemode/codemode/internal/host/engine"
	"github.com/adk-codemode/codemode/transport"
)

// block is a block of code running in a turn's sandbox on its own
// goroutine, so that execute_code can return while the block waits for
// approval.
type block struct {
	code   string
	ctx    context.Context // the block's run; cancelled to interrupt it
	cancel context.CancelCauseFunc
	clock  *runClock
	obs    *observe.Block

	mu      sync.Mutex
	calls   int           // tool calls the block made, which number their ids
	spent   eng.Spend     // what the block spent of its budgets
	changed chan struct{} // closed and replaced on every change
	active  int           // tool calls running on the host
	queue   []*approvalRequest
	asked   *approvalRequest // the request the person was asked, while paused
	paused  bool             // no execute_code call follows the block; tool calls wait
	done    bool
	res     *transport.Result
	sess    transport.Session
	err     error
}

func (f *block) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// enter waits while the block is paused, then counts a tool call in
// flight; false means the call cannot run, with the result to give.
func (f *block) enter(ctx context.Context) (transport.ToolResult, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.paused && !f.done {
		ch := f.changed
		f.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			f.mu.Lock()
			return transport.Errorf("TimeoutError", "the tool call was cancelled while the code was paused for approval"), false
		case <-f.ctx.Done():
			f.mu.Lock()
			return transport.Errorf("TimeoutError", "the tool call was cancelled while the code was paused for approval: %v", context.Cause(f.ctx)), false
		}
		f.mu.Lock()
	}
	f.active++
	return transport.ToolResult{}, true
}

func (f *block) leave() {
	f.mu.Lock()
	f.active--
	f.notifyLocked()
	f.mu.Unlock()
}

// nextCallID returns the function call id of the block's next tool call,
// under execID, the id of the execute_code call it runs for. The block
// numbers its calls itself: when it resumes after an approval, under an
// execute_code call that ADK runs again with the same id, or under one the
// plugin makes for a second request, its calls go on where they were, so
// that no two calls of an invocation share an id.
func (f *block) nextCallID(execID string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return "codemode-" + execID + "-" + itoa(f.calls)
}

// runClock bounds a block's run time, not counting the time it waits for
// approval.
type runClock struct {
	mu     sync.Mutex
	left   time.Duration
	since  time.Time
	timer  *time.Timer
	fire   func()
	paused bool // the code awaited approval (awaitApproval)
}

// awaited reports whether the code awaited approval while the clock ran.
func (c *runClock) awaited() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.paused
}

func (c *runClock) start() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timer != nil {
		return
	}
	c.since = time.Now()
	c.timer = time.AfterFunc(c.left, c.fire)
}

func (c *runClock) stop() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timer == nil {
		return
	}
	if c.timer.Stop() {
		c.left = max(c.left-time.Since(c.since), time.Millisecond)
	}
	c.timer = nil
}

// awaitApproval stops the clock while the code awaits a person's answer.
func (c *runClock) awaitApproval() {
	if c == nil {
		return
	}
	c.stop()
	c.mu.Lock()
	c.paused = true
	c.mu.Unlock()
}

// launch starts code on the turn's sandbox, on a goroutine of its own. The
// block's run time is bounded on the host, so that the time it waits for
// approval does not count; a cancelled ctx interrupts it while a call
// follows it (see [engine.follow]).
func (e *engine) launch(ctx context.Context, tn *turn, code string, id observe.Identity) *block {
	bctx, blk := e.obs.StartBlock(context.WithoutCancel(ctx), id, e.cfg.Backend.Name(), code)
	fctx, cancel := context.WithCancelCause(bctx)
	f := &block{code: code, ctx: fctx, cancel: cancel, changed: make(chan struct{}), obs: blk}
	if limit := e.cfg.Timeout; limit > 0 {
		clock := &runClock{left: limit}
		clock.fire = func() {
			msg := fmt.Sprintf("The code ran for longer than %s and was stopped.", seconds(limit))
			if clock.awaited() {
				msg = fmt.Sprintf("The code ran for longer than %s and was stopped (the time it awaited approval does not count).", seconds(limit))
			}
			cancel(&eng.CodeTimeout{Msg: msg})
		}
		f.clock = clock
	}
	tn.setBlock(f)
	go func() {
		// The clock starts when the code is sent: starting the sandbox
		// does not count.
		res, sess, err := e.runBlock(fctx, tn, transport.Block{Code: code, Grace: e.cfg.Grace}, f.clock)
		f.clock.stop()
		end := eng.BlockEnd(fctx, res, err)
		if sess != nil {
			end.EgressBytes, end.EgressExceeded, end.EgressMetered = f.egressSpent(sess)
		}
		blk.End(end)
		f.mu.Lock()
		f.done, f.res, f.sess, f.err = true, res, sess, err
		for _, r := range f.queue {
			r.answer <- nil
		}
		f.queue = nil
		f.notifyLocked()
		f.mu.Unlock()
		cancel(nil)
	}()
	return f
}

// interrupt stops the block the invocation runs, if any, with cause, as
// its timeout would (see hooklink.Interrupt).
func (e *engine) interrupt(invocation string, cause error) bool {
	e.mu.Lock()
	tn := e.turns[invocation]
	e.mu.Unlock()
	if tn == nil {
		return false
	}
	f := tn.currentBlock()
	if f == nil {
		return false
	}
	f.cancel(cause)
	return true
}

// follow waits, for the execute_code call whose context is ctx, until the
// block ends or pauses at a request for confirmation, which it returns. A
// ctx that ends meanwhile interrupts the block.
func (e *engine) follow(ctx context.Context, f *block) *approvalRequest {
	stop := context.AfterFunc(ctx, func() { f.cancel(context.Cause(ctx)) })
	defer stop()
	f.mu.Lock()
	defer f.mu.Unlock()
	for {
		if f.done {
			return nil
		}
		if len(f.queue) > 0 && f.active == 0 && f.ctx.Err() == nil {
			req := f.queue[0]
			f.queue = f.queue[1:]
			f.asked, f.paused = req, true
			f.clock.awaitApproval()
			return req
		}
		ch := f.changed
		f.mu.Unlock()
		<-ch
		f.mu.Lock()
	}
}

// settle ends an execute_code call that follows f: the block's output once
// it ends, or, when it pauses, the paused result, the block parked until
// the answer. resumed says the call resumed the block after an answer.
func (e *engine) settle(ctx agent.Context, tn *turn, exec *execCall, f *block, resumed bool) (map[string]any, error) {
	if req := e.follow(ctx, f); req != nil {
		if resumed {
			return e.withNotices(ctx, e.parkAgain(ctx, tn, f, req)), nil
		}
		out, _ := e.park(ctx, tn, exec.id, f, req, exec)
		return e.withNotices(ctx, out), nil
	}
	tn.setBlock(nil)
	out, err := e.finish(ctx, exec, f.res, f.sess, f.err)
	if err != nil {
		return nil, err
	}
	if note := f.budgetNote(e.cfg.Budgets); note != "" {
		stderr, _ := out["stderr"].(string)
		out["stderr"] = appendLine(stderr, note)
	}
	return e.withNotices(ctx, out), nil
}
