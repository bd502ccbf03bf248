package transport

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Calls runs a session's tool calls on the host: it admits at most
// [SessionConfig.MaxConcurrentCalls] at once, refuses bad and duplicate
// ids, applies each call's own timeout, cancels a call on request, and
// turns a panicking handler into a ToolError. [Client] uses one; so does a
// host that reads the worker's frames itself.
type Calls struct {
	ctx   context.Context
	tools ToolHandler
	sem   chan struct{}

	mu    sync.Mutex
	calls map[string]context.CancelFunc
}

// NewCalls returns the call runner of a session whose calls end with ctx.
func NewCalls(ctx context.Context, cfg SessionConfig) *Calls {
	n := cfg.MaxConcurrentCalls
	if n <= 0 {
		n = 64
	}
	return &Calls{ctx: ctx, tools: cfg.Tools, sem: make(chan struct{}, n), calls: map[string]context.CancelFunc{}}
}

// Start admits the call f and returns the function that runs it and passes
// the result to reply. It returns nil if the call was refused; the refusal
// then goes to reply on another goroutine, so that the caller (the reader
// of the sandbox's frames) never blocks on writing. If reply fails for a
// reason other than [ErrClosed] (a value that cannot be encoded, or is too
// large), a ToolError saying so is sent in its place.
func (c *Calls) Start(f *ToolCallFrame, reply func(*ToolResultFrame) error) (run func()) {
	fail := func(typ, msg string) {
		go func() { _ = reply(&ToolResultFrame{ID: f.ID, Error: &ErrorInfo{Type: typ, Message: msg}}) }()
	}
	if f.ID == "" || len(f.ID) > maxCallID {
		fail("ProtocolError", "tool call id must be 1 to 128 characters")
		return nil
	}
	select {
	case c.sem <- struct{}{}:
	default:
		fail("ToolError", fmt.Sprintf("too many tool calls in flight (limit %d); wait for some to finish", cap(c.sem)))
		return nil
	}
	ctx, cancel := context.WithCancel(c.ctx)
	if f.TimeoutMS > 0 {
		ctx, cancel = context.WithTimeout(c.ctx, time.Duration(f.TimeoutMS)*time.Millisecond)
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
		call := ToolCall{ID: f.ID, Name: f.Name, Args: f.Args, Timeout: time.Duration(f.TimeoutMS) * time.Millisecond}
		res := c.run(ctx, call)
		out := &ToolResultFrame{ID: f.ID, OK: res.Err == nil, Value: res.Value, Error: res.Err}
		if res.Err != nil {
			out.Value = nil
		}
		if err := reply(out); err != nil && !errors.Is(err, ErrClosed) {
			_ = reply(&ToolResultFrame{ID: f.ID, Error: &ErrorInfo{
				Type: "ToolError", Message: fmt.Sprintf("the result of %s could not be sent to the sandbox: %v", truncate(f.Name, 200), err),
			}})
		}
	}
}

// Cancel cancels the context of the call id, if it still runs.
func (c *Calls) Cancel(id string) {
	c.mu.Lock()
	if cancel, ok := c.calls[id]; ok {
		cancel()
	}
	c.mu.Unlock()
}

func (c *Calls) run(ctx context.Context, call ToolCall) (res ToolResult) {
	defer func() {
		if r := recover(); r != nil {
			res = Errorf("ToolError", "tool %s panicked: %v", truncate(call.Name, 200), r)
		}
	}()
	if c.tools == nil {
		return Errorf("ToolNotFound", "no tool named %q: this session has no tools", truncate(call.Name, 200))
	}
	res = c.tools.CallTool(ctx, call)
	if res.Err == nil && ctx.Err() != nil && c.ctx.Err() == nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return Errorf("TimeoutError", "tool %s exceeded its timeout of %s", truncate(call.Name, 200), call.Timeout)
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
