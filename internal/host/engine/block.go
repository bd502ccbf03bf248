package engine

// A block's lifecycle: [Launch] starts the code on a sandbox, on a
// goroutine of its own; the execute_code call that ran it follows it
// ([Block.Follow]) until it ends or pauses at a request for a person's
// approval; an answer ([Block.Answer]) resumes it; [Block.Cancel] stops
// it as its timeout would. The block's tool calls enter and leave it
// ([Block.Enter], [Block.Leave]), so that it pauses only between calls,
// and its RunClock counts the time it ran, not the time it waited.

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/adk-codemode/codemode/internal/both/observe"
	"github.com/adk-codemode/codemode/transport"
)

// Confirmation is a tool's request for a person's approval, or the
// person's answer to one: ADK's tool confirmation, without ADK.
type Confirmation struct {
	Hint      string
	Confirmed bool
	Payload   any
}

// ApprovalRequest is a tool call from code that asked for confirmation and
// waits for the answer.
type ApprovalRequest struct {
	Tool   string         // the tool's name in the tools package
	CallID string         // the call's function call id, which it keeps when it runs again
	Args   map[string]any // the call's arguments
	Code   string         // the block's code, which the person is shown
	Conf   Confirmation   // the hint and payload the tool gave
	answer chan *Confirmation
}

// NewApprovalRequest is the request of the call callID of tool, made with
// args, that asked for conf.
func NewApprovalRequest(tool, callID string, args map[string]any, conf Confirmation) *ApprovalRequest {
	conf.Confirmed = false
	return &ApprovalRequest{Tool: tool, CallID: callID, Args: args, Conf: conf, answer: make(chan *Confirmation, 1)}
}

// Block is a block of code running in a sandbox on its own goroutine, so
// that the execute_code call that ran it can return while it waits for
// approval.
type Block struct {
	code   string
	seq    int             // the block's number in its turn, from 0; -1 when not counted
	ctx    context.Context // the block's run; cancelled to interrupt it
	cancel context.CancelCauseFunc
	clock  *RunClock
	obs    *observe.Block

	mu      sync.Mutex
	calls   int           // tool calls the block made, which number their ids
	spent   Spend         // what the block spent of its budgets
	changed chan struct{} // closed and replaced on every change
	active  int           // tool calls running on the host
	queue   []*ApprovalRequest
	asked   *ApprovalRequest // the request the person was asked, while paused
	paused  bool             // no execute_code call follows the block; tool calls wait
	done    bool
	res     *transport.Result
	sess    transport.Session
	err     error
}

// RunFunc runs blk on a sandbox and returns its result and the session it
// ran in; clock runs while the code is sent and runs (see [RunClock]).
type RunFunc func(ctx context.Context, blk transport.Block, clock *RunClock) (*transport.Result, transport.Session, error)

// Launch says how to start a block.
type Launch struct {
	Code     string
	Identity observe.Identity
	Observer *observe.Observer
	Backend  string        // the backend's name, for the block's span
	Timeout  time.Duration // the run time allowed, not counting waits for approval; 0: none
	Grace    time.Duration // transport.Block.Grace
	// Seq is the block's number in its turn, from 0, for a turn that keeps
	// a record (see [TurnLog]); -1 otherwise.
	Seq int
	// Attach, if set, is called with the block before it starts, so that
	// its tool calls find it.
	Attach func(*Block)
	Run    RunFunc
}

// Start starts the block on a goroutine of its own. A cancelled ctx does
// not stop it: the call that follows it does (see [Block.Follow]).
func (l Launch) Start(ctx context.Context) *Block {
	bctx, obs := l.Observer.StartBlock(context.WithoutCancel(ctx), l.Identity, l.Backend, l.Code)
	fctx, cancel := context.WithCancelCause(bctx)
	f := &Block{code: l.Code, seq: l.Seq, ctx: fctx, cancel: cancel, changed: make(chan struct{}), obs: obs}
	if limit := l.Timeout; limit > 0 {
		clock := &RunClock{left: limit}
		clock.fire = func() {
			msg := fmt.Sprintf("The code ran for longer than %s and was stopped.", Seconds(limit))
			if clock.awaited() {
				msg = fmt.Sprintf("The code ran for longer than %s and was stopped (the time it awaited approval does not count).", Seconds(limit))
			}
			cancel(&CodeTimeout{Msg: msg})
		}
		f.clock = clock
	}
	if l.Attach != nil {
		l.Attach(f)
	}
	go func() {
		// The clock starts when the code is sent: starting the sandbox
		// does not count.
		res, sess, err := l.Run(fctx, transport.Block{Code: l.Code, Grace: l.Grace}, f.clock)
		f.clock.stop()
		end := BlockEnd(fctx, res, err)
		if sess != nil {
			end.EgressBytes, end.EgressExceeded, end.EgressMetered = f.egressSpent(sess)
		}
		obs.End(end)
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

// Code is the block's code.
func (f *Block) Code() string { return f.code }

// Seq is the block's number in its turn (see [Launch.Seq]).
func (f *Block) Seq() int { return f.seq }

// Observed is the block's span and audit record.
func (f *Block) Observed() *observe.Block { return f.obs }

// Cancel stops the block with cause, as its timeout would.
func (f *Block) Cancel(cause error) { f.cancel(cause) }

// Outcome is how the block ended: its result and the session it ran in,
// or the error; valid once [Block.Follow] returned nil.
func (f *Block) Outcome() (*transport.Result, transport.Session, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.res, f.sess, f.err
}

func (f *Block) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// Enter waits while the block is paused, then counts a tool call in
// flight; false means the call cannot run, with the result to give.
func (f *Block) Enter(ctx context.Context) (transport.ToolResult, bool) {
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

// Leave ends a tool call counted by [Block.Enter] or given a place by
// [Block.Answer].
func (f *Block) Leave() {
	f.mu.Lock()
	f.active--
	f.notifyLocked()
	f.mu.Unlock()
}

// NextCallID returns the function call id of the block's next tool call,
// under execID, the id of the execute_code call it runs for. The block
// numbers its calls itself: when it resumes after an approval, under an
// execute_code call that ADK runs again with the same id, or under one the
// adapter makes for a second request, its calls go on where they were, so
// that no two calls of an invocation share an id.
func (f *Block) NextCallID(execID string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return "codemode-" + execID + "-" + strconv.Itoa(f.calls)
}

// Ask queues req and waits for the person's answer; false means the call
// is not to run, with the result to give. req.Code is set to the block's.
func (f *Block) Ask(ctx context.Context, req *ApprovalRequest) (*Confirmation, transport.ToolResult, bool) {
	req.Code = f.code
	f.mu.Lock()
	if f.done {
		f.mu.Unlock()
		return nil, transport.Errorf("ToolError", "tool %s asked for confirmation after the code ended", req.Tool), false
	}
	f.queue = append(f.queue, req)
	f.notifyLocked()
	f.mu.Unlock()
	// A call given up while it waits is taken out of the queue, or, if the
	// person was asked already, its answer will find no call to resume.
	withdraw := func() {
		f.mu.Lock()
		f.queue = slices.DeleteFunc(f.queue, func(r *ApprovalRequest) bool { return r == req })
		if f.asked == req {
			f.asked = nil
		}
		f.mu.Unlock()
		// An answer sent before that came with a place among the calls in
		// flight; give it back.
		select {
		case conf := <-req.answer:
			if conf != nil {
				f.Leave()
			}
		default:
		}
	}
	select {
	case conf := <-req.answer:
		if conf == nil {
			return nil, transport.Errorf("ToolError", "tool %s was not run: the code ended before it was approved", req.Tool), false
		}
		return conf, transport.ToolResult{}, true
	case <-ctx.Done():
		withdraw()
		return nil, transport.Errorf("TimeoutError", "tool %s was not run: the call was cancelled while it awaited approval", req.Tool), false
	case <-f.ctx.Done():
		withdraw()
		return nil, transport.Errorf("TimeoutError", "tool %s was not run: %v", req.Tool, context.Cause(f.ctx)), false
	}
}

// Follow waits, for the execute_code call whose context is ctx, until the
// block ends (nil) or pauses at a request for confirmation, which it
// returns: the block is then paused, its clock stopped, until
// [Block.Answer]. A ctx that ends meanwhile interrupts the block.
func (f *Block) Follow(ctx context.Context) *ApprovalRequest {
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

// Answer resumes the paused block with the person's answer to the request
// it was asked: the answered call counts as in flight from now on (the
// call leaves it with [Block.Leave]), so that the block does not pause at
// another request before that call has run, and the clock runs again.
func (f *Block) Answer(conf Confirmation) {
	f.mu.Lock()
	defer f.mu.Unlock()
	req := f.asked
	f.asked, f.paused = nil, false
	if req != nil {
		f.active++
		req.answer <- &conf
	}
	f.clock.start()
	f.notifyLocked()
}

// Charge admits a call of the tool name (code in the tools package)
// against the block's budgets, counting it, or refuses it.
func (f *Block) Charge(b Budgets, name, code string) (transport.ToolResult, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.spent.Charge(b, name, code)
}

// Receive charges the result of a call of code that was made against the
// block's budget of result bytes: a result that would pass it is withheld.
func (f *Block) Receive(b Budgets, code string, res transport.ToolResult) transport.ToolResult {
	n := ResultSize(b, res) // before the lock: it encodes the result
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.spent.Receive(b, code, res, n)
}

// egressSpent records what the block moved through the egress proxy of s,
// when s meters its egress, and says whether s does.
func (f *Block) egressSpent(s transport.Session) (bytes int64, exceeded, metered bool) {
	m := transport.EgressMeterOf(s)
	if m == nil {
		return 0, false, false
	}
	bytes, exceeded = m.EgressUsage()
	f.mu.Lock()
	f.spent.Egress(bytes, exceeded)
	f.mu.Unlock()
	return bytes, exceeded, true
}

// BudgetNote tells the model which budgets of the block ran out, or is "".
func (f *Block) BudgetNote(b Budgets) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.spent.Note(b)
}

// RunClock bounds a block's run time, not counting the time it waits for
// approval. A nil RunClock bounds nothing.
type RunClock struct {
	mu     sync.Mutex
	left   time.Duration
	since  time.Time
	timer  *time.Timer
	fire   func()
	paused bool // the code awaited approval
}

// awaited reports whether the code awaited approval while the clock ran.
func (c *RunClock) awaited() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.paused
}

// Start runs the clock, unless it runs already.
func (c *RunClock) Start() { c.start() }

// Stop stops the clock, keeping the time left.
func (c *RunClock) Stop() { c.stop() }

func (c *RunClock) start() {
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

func (c *RunClock) stop() {
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
func (c *RunClock) awaitApproval() {
	if c == nil {
		return
	}
	c.stop()
	c.mu.Lock()
	c.paused = true
	c.mu.Unlock()
}

// Seconds formats d like "30s" or "1.5s".
func Seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
}
