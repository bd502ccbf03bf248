package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/adk-codemode/codemode/internal/both/observe"
	"github.com/adk-codemode/codemode/transport"
)

// Dispatch runs the tool calls a block's code makes: each is charged
// against the block's budgets, waits while the block is paused for
// approval, runs on the host through the adapter (Call) within its
// timeout, and, when the tool asks for a person's approval, waits for the
// answer and runs again with it, or is refused. T is the adapter's tool;
// E is its handle on the execute_code call the block runs for.
type Dispatch[T, E any] struct {
	Budgets     Budgets
	ToolTimeout time.Duration // the bound on each call, unless the sandbox asks for less; 0: none
	// Abandoned counts the calls of the turn still running on the host
	// after their timeout, which the sandbox no longer waits for.
	Abandoned *atomic.Int64
	// Current is the execute_code call the block runs for, and its
	// function call id; false when none runs.
	Current func() (exec E, id string, ok bool)
	// Call runs the tool st with args as the call id of exec, the way the
	// adapter's framework runs a direct call; conf is the person's answer
	// when it runs again after approval. It returns the result, or the
	// tool's request for approval. Effects that land after ctl was
	// abandoned are dropped (see CallControl).
	Call func(ctx context.Context, exec E, st *SurfaceTool[T], id string, args map[string]any, ctl *CallControl, conf *Confirmation) (transport.ToolResult, *ApprovalRequest)
	// Journal, if set, records each call that ends, with what the tool
	// gave, for a durable turn (see [TurnLog]).
	Journal *Journal
	// Replay, if set, answers the calls of a turn run again to resume it
	// (see [Replay]).
	Replay *Replay
}

// maxAbandonedCalls bounds the tool calls of one turn that still run on
// the host after their timeout.
const maxAbandonedCalls = 64

// Run runs call, of the tool st (described by description), for the block
// f, and returns what the code gets.
func (d Dispatch[T, E]) Run(ctx context.Context, f *Block, st *SurfaceTool[T], description string, call transport.ToolCall) transport.ToolResult {
	ctx, oc := f.Observed().StartToolCall(ctx, observe.ToolCallStart{Tool: st.Name, CodeName: st.Code, Description: description, Thread: call.Thread})
	ctx = WithObservedCall(ctx, oc)
	res, ok := f.Charge(d.Budgets, st.Name, st.Code)
	if ok {
		if d.Replay != nil && !d.Replay.Live(f.Seq()) {
			res = d.replayed(ctx, f, st, call)
		} else {
			var req *ApprovalRequest
			res, req = d.once(ctx, f, st, call)
			if req != nil {
				res = d.approved(ctx, f, st, call, req)
			}
		}
		if d.Journal != nil {
			d.Journal.Record(f.Seq(), st.Code, call.Args, res, "")
		}
		res = f.Receive(d.Budgets, st.Code, res)
	}
	EndObserved(oc, call, res)
	return res
}

// ResumeDivergedType is the Python exception a replayed block's call gets
// when the code does something else than before the restart.
const ResumeDivergedType = "ResumeDivergedError"

// replayed answers a call of a block run again to resume its turn: from
// the journal while it holds the block's calls, then, for the call the
// block paused at, by running it with the person's answer. Any other call
// is a divergence: the block is stopped there.
func (d Dispatch[T, E]) replayed(ctx context.Context, f *Block, st *SurfaceTool[T], call transport.ToolCall) transport.ToolResult {
	res, ref, done, err := d.Replay.Journal.Answer(f.Seq(), st.Code, call.Args)
	// The replayed call takes its number, so that the calls after it get
	// the ids they had (results are saved under them).
	if _, execID, ok := d.Current(); ok && (done || err == nil) {
		f.NextCallID(execID)
	}
	switch {
	case err == nil && done && ref == "":
		return res
	case err == nil && done:
		err = fmt.Errorf("the result of a call of %s was kept as an artifact, which a resumed block cannot read back yet", st.Code)
	case err == nil:
		// The pending call's digest is of its arguments as the tool got
		// them, without the parameters that name its result artifact.
		prepared, _, perr := st.PrepareArgs(call.Args)
		digest, derr := ArgsDigest(prepared)
		if perr == nil && derr == nil && d.Replay.take(f.Seq(), st.Code, digest) {
			return d.answered(ctx, f, st, call)
		}
		err = &DivergenceError{Block: f.Seq(), Tool: st.Code, Recorded: d.Replay.Journal.count(f.Seq())}
	}
	d.Replay.diverge(err)
	f.Cancel(err)
	return transport.ToolResult{Err: &transport.ToolError{Type: ResumeDivergedType, Message: err.Error()}}
}

// answered runs the call a resumed block paused at with the person's
// answer, as approved does once the answer comes in the same process.
func (d Dispatch[T, E]) answered(ctx context.Context, f *Block, st *SurfaceTool[T], call transport.ToolCall) transport.ToolResult {
	if res, ok := f.Enter(ctx); !ok {
		return res
	}
	conf := d.Replay.Answer
	if !conf.Confirmed {
		f.Leave()
		return transport.ToolResult{Err: &transport.ToolError{Type: DeniedType,
			Message: fmt.Sprintf("tool %s was not run: the person asked to approve the call declined it", st.Code)}}
	}
	res, again := d.held(ctx, f, st, call, d.Replay.Pending.CallID, &conf)
	if again != nil {
		return transport.Errorf("ToolError", "tool %s asked for confirmation again after it was approved; it was not run", st.Code)
	}
	return res
}

// once runs one tool call while the block's execute_code call is
// attached: it waits while the block is paused for approval, and counts
// as a call in flight, so the block pauses only once it ends. It returns
// the request when the tool asked for confirmation.
func (d Dispatch[T, E]) once(ctx context.Context, f *Block, st *SurfaceTool[T], call transport.ToolCall) (transport.ToolResult, *ApprovalRequest) {
	if res, ok := f.Enter(ctx); !ok {
		return res, nil
	}
	return d.held(ctx, f, st, call, "", nil)
}

// approved waits for the answer to req, then runs the call again with it
// or raises ToolDeniedError.
func (d Dispatch[T, E]) approved(ctx context.Context, f *Block, st *SurfaceTool[T], call transport.ToolCall, req *ApprovalRequest) transport.ToolResult {
	oc := ObservedCall(ctx)
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
	// [Block.Answer]), so the block cannot pause again before this call
	// has run.
	if !conf.Confirmed {
		f.Leave()
		return transport.ToolResult{Err: &transport.ToolError{Type: DeniedType,
			Message: fmt.Sprintf("tool %s was not run: the person asked to approve the call declined it", st.Code)}}
	}
	res, again := d.held(ctx, f, st, call, req.CallID, conf)
	if again != nil {
		return transport.Errorf("ToolError", "tool %s asked for confirmation again after it was approved; it was not run", st.Code)
	}
	return res
}

// held is once for a call already counted in flight; it ends the count.
// id and conf are the call's function call id and the person's answer
// when it runs again after approval; a new call, with no id, gets the
// block's next one.
func (d Dispatch[T, E]) held(ctx context.Context, f *Block, st *SurfaceTool[T], call transport.ToolCall, id string, conf *Confirmation) (transport.ToolResult, *ApprovalRequest) {
	defer f.Leave()
	exec, execID, ok := d.Current()
	if !ok {
		return transport.Errorf("ToolError", "tool %s was called while no execute_code call is running", st.Code), nil
	}
	if id == "" {
		id = f.NextCallID(execID)
	}
	ObservedCall(ctx).SetCallID(id)
	limit := d.ToolTimeout
	if call.Timeout > 0 && (limit == 0 || call.Timeout < limit) {
		limit = call.Timeout
	}
	ctl := &CallControl{}
	if limit <= 0 {
		return d.Call(ctx, exec, st, id, call.Args, ctl, conf)
	}
	// Abandoned calls still running count against the sandbox's bound on
	// calls in flight, which no longer sees them.
	if n := d.Abandoned.Load(); n >= maxAbandonedCalls {
		return transport.Errorf("ToolError", "too many tool calls still running on the host after their timeout (%d); wait for them to finish", n), nil
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	timedOut := func() (transport.ToolResult, *ApprovalRequest) {
		return transport.Errorf("TimeoutError", "tool %s exceeded its timeout of %s", st.Code, Seconds(limit)), nil
	}
	type outcome struct {
		res transport.ToolResult
		req *ApprovalRequest
	}
	// The call runs on its own goroutine so that the timeout holds even
	// for a tool that does not watch its context; one abandoned at the
	// timeout has its later effects dropped.
	done := make(chan outcome, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- outcome{res: transport.Errorf("ToolError", "tool %s panicked: %v", st.Code, r)}
			}
			ctl.finish(d.Abandoned)
		}()
		res, req := d.Call(ctx, exec, st, id, call.Args, ctl, conf)
		done <- outcome{res, req}
	}()
	select {
	case o := <-done:
		if o.res.Err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return timedOut()
		}
		return o.res, o.req
	case <-ctx.Done():
		if ctl.abandon(d.Abandoned) {
			return timedOut()
		}
		// The call completed meanwhile: its effects landed, so its
		// result stands.
		o := <-done
		if o.res.Err != nil {
			return timedOut()
		}
		return o.res, o.req
	}
}

// CallControl is the fate of one tool call from code: abandoned at its
// timeout, or completed (its effects merged into the execute_code call's),
// never both.
type CallControl struct {
	mu        sync.Mutex
	abandoned atomic.Bool
	completed bool
}

// Abandoned says whether the call was abandoned at its timeout: its
// effects are to be dropped.
func (c *CallControl) Abandoned() bool { return c.abandoned.Load() }

// Complete runs merge, which lands the call's effects, and marks the call
// completed, unless it was abandoned first: then it reports false and
// runs nothing.
func (c *CallControl) Complete(merge func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.abandoned.Load() {
		return false
	}
	c.completed = true
	merge()
	return true
}

// abandon marks the call abandoned unless it completed first, and says
// whether it did; running counts it.
func (c *CallControl) abandon(running *atomic.Int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.completed {
		return false
	}
	c.abandoned.Store(true)
	running.Add(1)
	return true
}

// finish marks the call's goroutine done: no longer counted as abandoned
// and running, or completed if it was not abandoned.
func (c *CallControl) finish(running *atomic.Int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.abandoned.Load() {
		running.Add(-1)
	} else {
		c.completed = true
	}
}
