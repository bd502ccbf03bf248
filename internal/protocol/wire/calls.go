package wire

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/adk-codemode/codemode/internal/both/clip"
	"github.com/adk-codemode/codemode/transport"
)

// Calls runs a session's tool calls on the host: it admits at most
// [transport.SessionConfig.MaxConcurrentCalls] at once, refuses bad and duplicate
// ids, applies each call's own timeout, cancels a call on request, and
// turns a panicking handler into a ToolError. [Client] uses one; so does a
// host that reads the worker's frames itself.
type Calls struct {
	ctx   context.Context
	tools transport.ToolHandler
	sem   chan struct{}

	mu    sync.Mutex
	calls map[string]context.CancelFunc

	// block, once set, is the block whose calls are admitted ("" while
	// none runs); see SetBlock.
	block atomic.Pointer[string]

	// Refusals wait in refusals for the one goroutine that sends them,
	// which runs while there are any (see refuse).
	refuseMu      sync.Mutex
	refusals      []refusal
	refusalBytes  int
	refusing      bool  // the sending goroutine runs
	refusalsError error // set when the queue overflowed; see Err
}

// refusal is a refused call's answer, waiting to be sent.
type refusal struct {
	reply func(*ToolResultFrame) error
	f     *ToolResultFrame
	size  int
}

// Bounds on the refusals waiting to be sent. A sandbox that reads has at
// most one waiting per Python thread that calls tools; one that lets more
// pile up does not read what the host sends.
const (
	maxQueuedRefusals     = 1024
	maxQueuedRefusalBytes = MaxFrameSize // bad ids are echoed, and may be long
)

// NewCalls returns the call runner of a session whose calls end with ctx.
func NewCalls(ctx context.Context, cfg transport.SessionConfig) *Calls {
	n := cfg.MaxConcurrentCalls
	if n <= 0 {
		n = 64
	}
	return &Calls{ctx: ctx, tools: cfg.Tools, sem: make(chan struct{}, n), calls: map[string]context.CancelFunc{}}
}

// SetBlock makes Start admit only calls made by block id; "" refuses every
// call until the next block. Before the first SetBlock, calls are admitted
// whatever block they name.
func (c *Calls) SetBlock(id string) { c.block.Store(&id) }

// Start admits the call f and returns the function that runs it and passes
// the result to reply. It returns nil if the call was refused; the refusal
// is then sent to reply by the one goroutine that sends this session's
// refusals, so that the caller (the reader of the sandbox's frames) never
// blocks on writing and a sandbox that does not read costs no more than a
// bounded queue: past the queue's limit, refusals are dropped and [Calls.Err]
// says why, and the session should end. If reply fails for a reason other
// than [transport.ErrClosed] (a value that cannot be encoded, or is too large), a
// ToolError saying so is sent in its place.
//
// The result of an admitted call goes to reply on the goroutine that runs
// it, which holds one of the [transport.SessionConfig.MaxConcurrentCalls] places
// until reply returns: results that wait for a slow reader are bounded by
// that, and hold new calls back.
func (c *Calls) Start(f *ToolCallFrame, reply func(*ToolResultFrame) error) (run func()) {
	fail := func(typ, msg string) {
		c.refuse(reply, &ToolResultFrame{ID: f.ID, Error: &ErrorInfo{Type: typ, Message: msg}})
	}
	if f.ID == "" || len(f.ID) > maxCallID {
		fail("ProtocolError", "tool call id must be 1 to 128 characters")
		return nil
	}
	if b := c.block.Load(); b != nil && f.Block != *b {
		fail("ToolError", (&BlockMismatchError{Kind: KindToolCall, Block: f.Block, Running: *b}).Error()+
			": a tool call counts only while the block that made it runs")
		return nil
	}
	select {
	case c.sem <- struct{}{}:
	default:
		fail("ToolError", fmt.Sprintf("too many tool calls in flight (limit %d); wait for some to finish", cap(c.sem)))
		return nil
	}
	// One context per call, released when the call ends: a context that
	// is not cancelled stays registered with the session's until that ends.
	var timeout time.Duration
	if f.TimeoutMS > 0 && f.TimeoutMS <= math.MaxInt64/int64(time.Millisecond) {
		timeout = time.Duration(f.TimeoutMS) * time.Millisecond
	}
	var ctx context.Context
	var cancel context.CancelFunc
	if timeout > 0 {
		ctx, cancel = context.WithTimeout(c.ctx, timeout)
	} else {
		ctx, cancel = context.WithCancel(c.ctx)
	}
	c.mu.Lock()
	if _, dup := c.calls[f.ID]; dup {
		c.mu.Unlock()
		cancel()
		<-c.sem
		fail("ProtocolError", "duplicate tool call id "+strconv.Quote(f.ID))
		return nil
	}
	c.calls[f.ID] = cancel
	c.mu.Unlock()

	return func() {
		defer func() {
			c.mu.Lock()
			delete(c.calls, f.ID)
			c.mu.Unlock()
			cancel()
			<-c.sem
		}()
		call := transport.ToolCall{ID: f.ID, Name: f.Name, Args: f.Args, Timeout: timeout, Thread: max(f.Thread, 0)}
		res := c.run(ctx, call)
		out := &ToolResultFrame{ID: f.ID, OK: res.Err == nil, Value: res.Value, Error: errorInfo(res.Err)}
		if res.Err != nil {
			out.Value = nil
		}
		if err := reply(out); err != nil && !errors.Is(err, transport.ErrClosed) {
			_ = reply(&ToolResultFrame{ID: f.ID, Error: &ErrorInfo{
				Type: "ToolError", Message: fmt.Sprintf("the result of %s could not be sent to the sandbox: %v", clip.String(f.Name, 200), err),
			}})
		}
	}
}

// refuse queues a refusal for the sending goroutine, starting it if it
// does not run. It never blocks.
func (c *Calls) refuse(reply func(*ToolResultFrame) error, f *ToolResultFrame) {
	r := refusal{reply: reply, f: f, size: len(f.ID) + len(f.Error.Message) + 64}
	c.refuseMu.Lock()
	defer c.refuseMu.Unlock()
	if c.refusalsError != nil {
		return
	}
	if n := len(c.refusals); n > 0 && (n >= maxQueuedRefusals || c.refusalBytes+r.size > maxQueuedRefusalBytes) {
		c.refusalsError = fmt.Errorf("wire: the sandbox does not read what the host sends: %d refusals of its tool calls were waiting to be sent (limit %d)", n, maxQueuedRefusals)
		clear(c.refusals)
		c.refusals, c.refusalBytes = nil, 0
		return
	}
	c.refusals = append(c.refusals, r)
	c.refusalBytes += r.size
	if !c.refusing {
		c.refusing = true
		go c.sendRefusals()
	}
}

// sendRefusals sends the queued refusals, and returns once there are none
// or the session has ended.
func (c *Calls) sendRefusals() {
	for {
		c.refuseMu.Lock()
		if len(c.refusals) == 0 || c.ctx.Err() != nil {
			clear(c.refusals)
			c.refusals, c.refusalBytes = nil, 0
			c.refusing = false
			c.refuseMu.Unlock()
			return
		}
		r := c.refusals[0]
		c.refusals[0] = refusal{}
		c.refusals = c.refusals[1:]
		c.refusalBytes -= r.size
		c.refuseMu.Unlock()
		_ = r.reply(r.f)
	}
}

// Err returns nil until the refusals waiting to be sent overflowed their
// queue, which means that the sandbox does not read what the host sends;
// then it returns an error saying so, and later refusals are dropped. The
// session should then end with that error.
func (c *Calls) Err() error {
	c.refuseMu.Lock()
	defer c.refuseMu.Unlock()
	return c.refusalsError
}

// Cancel cancels the context of the call id, if it still runs.
func (c *Calls) Cancel(id string) {
	c.mu.Lock()
	if cancel, ok := c.calls[id]; ok {
		cancel()
	}
	c.mu.Unlock()
}

func (c *Calls) run(ctx context.Context, call transport.ToolCall) (res transport.ToolResult) {
	defer func() {
		if r := recover(); r != nil {
			res = transport.Errorf("ToolError", "tool %s panicked: %v", clip.String(call.Name, 200), r)
		}
	}()
	if c.tools == nil {
		return transport.Errorf("ToolNotFound", "no tool named %q: this session has no tools", clip.String(call.Name, 200))
	}
	res = c.tools.CallTool(ctx, call)
	if res.Err == nil && ctx.Err() != nil && c.ctx.Err() == nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return transport.Errorf("TimeoutError", "tool %s exceeded its timeout of %s", clip.String(call.Name, 200), call.Timeout)
		}
	}
	return res
}

// RunInline runs a call on the calling goroutine, which is the reader of
// the sandbox's frames, and reports whether that goroutine should go on
// reading. If the call takes longer than a moment, another goroutine is
// started with readMore and takes over reading: most calls are quick, and
// starting a goroutine for each would wake a second thread every time.
//
// One watcher per process looks at the calls running inline, every
// millisecond while there are any, rather than a timer per call: arming a
// timer that is due before every other one wakes the runtime's poller,
// which cost about a fifth of a no-op call's throughput.
func RunInline(run func(), readMore func()) (keepReading bool) {
	c := &inlineCall{start: time.Now(), readMore: readMore}
	inline.add(c)
	run()
	inline.remove(c)
	return c.handedOver.CompareAndSwap(false, true)
}

type inlineCall struct {
	start      time.Time
	readMore   func()
	handedOver atomic.Bool
}

// inlineWatch is the set of calls running inline, and its watcher.
type inlineWatch struct {
	mu       sync.Mutex
	calls    map[*inlineCall]struct{}
	watching bool
}

var inline inlineWatch

// watchEvery is how often the watcher looks; a slow call hands reading
// over after handOverAfter plus at most this.
const watchEvery = time.Millisecond

func (w *inlineWatch) add(c *inlineCall) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.calls == nil {
		w.calls = map[*inlineCall]struct{}{}
	}
	w.calls[c] = struct{}{}
	if !w.watching {
		w.watching = true
		go w.watch()
	}
}

func (w *inlineWatch) remove(c *inlineCall) {
	w.mu.Lock()
	delete(w.calls, c)
	w.mu.Unlock()
}

// watch hands reading over for the calls that ran too long. It stops after
// a few looks that found no call, and add starts it again.
func (w *inlineWatch) watch() {
	idle := 0
	for {
		time.Sleep(watchEvery)
		w.mu.Lock()
		if len(w.calls) == 0 {
			if idle++; idle >= 8 {
				w.watching = false
				w.mu.Unlock()
				return
			}
		} else {
			idle = 0
		}
		now := time.Now()
		for c := range w.calls {
			if now.Sub(c.start) >= handOverAfter && c.handedOver.CompareAndSwap(false, true) {
				go c.readMore()
			}
		}
		w.mu.Unlock()
	}
}
