package wire

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/adk-codemode/codemode/internal/both/clip"
	"github.com/adk-codemode/codemode/transport"
)

// DefaultGrace is the grace period of a block that sets none: how long an
// interrupted block may take to stop before its worker is reset.
const DefaultGrace = time.Second

// ErrNotReady is [NewClient]'s error when the sandbox sent no ready frame
// within ClientOptions.ReadyTimeout.
var ErrNotReady = errors.New("wire: the sandbox did not become ready")

// ClientOptions tune [NewClient].
type ClientOptions struct {
	// ReadyTimeout bounds the wait for the ready frame. Zero means 60s.
	ReadyTimeout time.Duration
	// OnClose runs once when the session closes, after the stream is
	// closed: stop the sandbox here and wait for it.
	OnClose func() error
	// Logger receives the sandbox's log frames. Nil means slog.Default().
	Logger *slog.Logger
}

// Client is a [transport.Session] over a frame stream to a sandbox server.
type Client struct {
	conn    *Conn
	cfg     transport.SessionConfig
	opts    ClientOptions
	env     transport.Environment
	replies chan Frame // done, output and file frames, in order

	execMu sync.Mutex // serialises Exec and ReadFile
	seq    atomic.Uint64

	calls *Calls

	running atomic.Pointer[string] // the block whose done and output are awaited
	dropped atomic.Int64           // frames for a block not running, dropped

	ctx       context.Context // cancelled on Close
	cancel    context.CancelFunc
	readerErr error         // set before readerDone closes
	readerEnd chan struct{} // closed when the reader stops
	closeOnce sync.Once
	closeErr  error
}

var _ transport.Session = (*Client)(nil)

const maxCallID = 128

// handOverAfter is how long a tool call may run on the reading goroutine
// before another goroutine takes over reading.
const handOverAfter = 200 * time.Microsecond

// NewClient reads the sandbox's ready frame from conn, checks its protocol
// version, and returns a session that runs blocks over conn. On error conn
// is closed and opts.OnClose has run.
func NewClient(ctx context.Context, conn *Conn, cfg transport.SessionConfig, opts ClientOptions) (*Client, error) {
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = 60 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if cfg.MaxConcurrentCalls <= 0 {
		cfg.MaxConcurrentCalls = 64
	}
	c := &Client{
		conn:      conn,
		cfg:       cfg,
		opts:      opts,
		replies:   make(chan Frame, 4),
		readerEnd: make(chan struct{}),
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.calls = NewCalls(c.ctx, cfg)
	c.calls.SetBlock("") // no block runs yet: calls are refused until one does

	ready := make(chan error, 1)
	go func() {
		f, err := conn.Read()
		if err == nil {
			switch f := f.(type) {
			case *ReadyFrame:
				c.env = transport.Environment{PythonVersion: f.PythonVersion, Packages: f.Packages}
			case *ErrorFrame:
				err = fmt.Errorf("wire: the sandbox failed to start: %s", clip.String(f.Message, 4096))
			default:
				err = fmt.Errorf("%w: expected a ready frame first, got %s", ErrProtocol, f.Kind())
			}
		}
		ready <- err
	}()
	timer := time.NewTimer(opts.ReadyTimeout)
	defer timer.Stop()
	var err error
	got := false
	select {
	case err = <-ready:
		got = true
	case <-ctx.Done():
		err = ctx.Err()
	case <-timer.C:
		err = fmt.Errorf("%w within %s", ErrNotReady, opts.ReadyTimeout)
	}
	if err != nil {
		_ = c.closeConn()
		if !got {
			<-ready //nolint:errcheck // closing the stream ends the read; err says why
		}
		return nil, err
	}
	go c.readLoop()
	return c, nil
}

// Environment reports the sandbox's interpreter.
func (c *Client) Environment() transport.Environment { return c.env }

// readLoop reads frames. Exactly one goroutine reads at a time: on a tool
// call, the reader hands reading over to a fresh goroutine and runs the
// call itself, so a call starts without waiting for another thread.
func (c *Client) readLoop() {
	for {
		f, err := c.conn.Read()
		if err != nil {
			c.readerErr = err
			close(c.readerEnd)
			return
		}
		switch f := f.(type) {
		case *ToolCallFrame:
			if run := c.calls.Start(f, c.sendResult); run != nil {
				if !RunInline(run, c.readLoop) {
					return
				}
			} else if err := c.calls.Err(); err != nil {
				// The sandbox does not read: end the session, and the
				// writes waiting for it with the stream.
				c.readerErr = err
				close(c.readerEnd)
				_ = c.conn.Close()
				return
			}
		case *CancelFrame:
			c.calls.Cancel(f.ID)
		case *LogFrame:
			c.log(f)
		case *DoneFrame, *OutputFrame, *FileFrame:
			if _, file := f.(*FileFrame); !file && !c.awaited(f) {
				continue
			}
			select {
			case c.replies <- f:
			default:
				c.readerErr = fmt.Errorf("%w: unexpected %s frame", ErrProtocol, f.Kind())
				close(c.readerEnd)
				return
			}
		case *ErrorFrame:
			c.readerErr = fmt.Errorf("wire: the sandbox failed: %s", clip.String(f.Message, 4096))
			close(c.readerEnd)
			return
		default:
			c.readerErr = fmt.Errorf("%w: the sandbox sent a %s frame, which only a host sends", ErrProtocol, f.Kind())
			close(c.readerEnd)
			return
		}
	}
}

// awaited says whether f, a done or output frame, is for the block that
// runs; one for another block is dropped and counted, never applied.
func (c *Client) awaited(f Frame) bool {
	var id string
	switch f := f.(type) {
	case *DoneFrame:
		id = f.ID
	case *OutputFrame:
		id = f.ID
	}
	running := ""
	if p := c.running.Load(); p != nil {
		running = *p
	}
	if id == running && running != "" {
		return true
	}
	c.dropped.Add(1)
	c.opts.Logger.Warn("sandbox: " + (&BlockMismatchError{Kind: f.Kind(), Block: id, Running: running}).Error())
	return false
}

// Dropped is the number of frames the sandbox sent for a block that was not
// running, which were dropped.
func (c *Client) Dropped() int64 { return c.dropped.Load() }

func (c *Client) log(f *LogFrame) {
	level := slog.LevelInfo
	switch f.Level {
	case "debug":
		level = slog.LevelDebug
	case "warning", "warn":
		level = slog.LevelWarn
	case "error", "critical":
		level = slog.LevelError
	}
	c.opts.Logger.Log(c.ctx, level, "sandbox: "+clip.String(f.Msg, 4096))
}

// sendResult sends a tool result to the sandbox.
func (c *Client) sendResult(f *ToolResultFrame) error { return c.conn.Write(f) }

// Exec runs one block.
func (c *Client) Exec(ctx context.Context, b transport.Block) (*transport.Result, error) {
	c.execMu.Lock()
	defer c.execMu.Unlock()
	if err := c.failed(); err != nil {
		return nil, &transport.ConnectionError{Stage: transport.NotRun, Err: err}
	}
	grace := b.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	id := "b" + strconv.FormatUint(c.seq.Add(1), 10)
	start := time.Now()
	run := &RunFrame{ID: id, Code: b.Code, GraceMS: grace.Milliseconds(), MaxOutputBytes: b.MaxOutputBytes}
	if b.Timeout > 0 {
		run.TimeoutMS = max(1, b.Timeout.Milliseconds())
	}
	c.running.Store(&id)
	c.calls.SetBlock(id)
	defer func() {
		none := ""
		c.calls.SetBlock(none)
		c.running.Store(&none)
	}()
	if err := c.conn.Write(run); err != nil {
		if errors.Is(err, ErrFrameTooLarge) {
			return nil, fmt.Errorf("wire: code of %d bytes is too large to send", len(b.Code))
		}
		c.Close()
		return nil, &transport.ConnectionError{Stage: transport.NotRun, Err: err}
	}

	// The server enforces the timeout; the host only steps in when ctx
	// ends, and gives up on a server that does not answer at all.
	var backstop <-chan time.Time
	if b.Timeout > 0 {
		t := time.NewTimer(b.Timeout + 2*grace + 10*time.Second)
		defer t.Stop()
		backstop = t.C
	}
	ctxDone := ctx.Done()
	var done *DoneFrame
	for done == nil {
		select {
		case f := <-c.replies:
			d, ok := f.(*DoneFrame)
			if !ok {
				c.Close()
				return nil, &transport.ConnectionError{Stage: transport.Unknown, Err: fmt.Errorf("%w: expected done for block %s, got %s", ErrProtocol, id, f.Kind())}
			}
			done = d
		case <-c.readerEnd:
			// Frames read before the end still count.
			if len(c.replies) > 0 {
				continue
			}
			return nil, &transport.ConnectionError{Stage: transport.Unknown, Err: c.endErr()}
		case <-ctxDone:
			ctxDone = nil
			_ = c.conn.Write(&InterruptFrame{Block: id, Message: stopMessage(context.Cause(ctx))})
			t := time.NewTimer(2*grace + 10*time.Second)
			defer t.Stop()
			backstop = t.C
		case <-backstop:
			c.Close()
			return nil, &transport.ConnectionError{Stage: transport.Unknown, Err: errors.New("the sandbox did not finish the block after its timeout and grace period; the sandbox was stopped")}
		}
	}
	var out *OutputFrame
	select {
	case f := <-c.replies:
		out, _ = f.(*OutputFrame)
	case <-c.readerEnd:
		select { // frames read before the end still count
		case f := <-c.replies:
			out, _ = f.(*OutputFrame)
		default:
			return nil, &transport.ConnectionError{Stage: transport.Ran, Err: c.endErr()}
		}
	}
	if out == nil || out.ID != id {
		c.Close()
		return nil, &transport.ConnectionError{Stage: transport.Ran, Err: fmt.Errorf("%w: expected output for block %s", ErrProtocol, id)}
	}
	return &transport.Result{
		ExitCode:      done.ExitCode,
		Stdout:        out.Stdout,
		Stderr:        out.Stderr,
		StdoutDropped: out.StdoutDropped,
		StderrDropped: out.StderrDropped,
		Stopped:       done.Stopped,
		Reset:         done.Reset,
		OutOfMemory:   done.OOM,
		Background:    done.Background,
		Files:         files(out.Files),
		Duration:      time.Since(start),
	}, nil
}

// ReadFile fetches a workspace file.
func (c *Client) ReadFile(ctx context.Context, path string) ([]byte, error) {
	c.execMu.Lock()
	defer c.execMu.Unlock()
	if err := c.failed(); err != nil {
		return nil, err
	}
	id := "f" + strconv.FormatUint(c.seq.Add(1), 10)
	if err := c.conn.Write(&GetFileFrame{ID: id, Path: path}); err != nil {
		return nil, err
	}
	select {
	case f := <-c.replies:
		ff, ok := f.(*FileFrame)
		if !ok || ff.ID != id {
			c.Close()
			return nil, fmt.Errorf("%w: expected file %s, got %s", ErrProtocol, id, f.Kind())
		}
		if ff.Error != "" {
			return nil, fmt.Errorf("wire: read %s from the sandbox: %s", path, clip.String(ff.Error, 1024))
		}
		return ff.Data, nil
	case <-c.readerEnd:
		return nil, c.endErr()
	case <-ctx.Done():
		// The reply may still come and would confuse the next call.
		c.Close()
		return nil, ctx.Err()
	}
}

// Err returns nil while the connection to the sandbox is up, and why it
// ended once it has.
func (c *Client) Err() error { return c.failed() }

func (c *Client) failed() error {
	select {
	case <-c.readerEnd:
		return c.endErr()
	default:
		return nil
	}
}

func (c *Client) endErr() error {
	<-c.readerEnd
	if c.ctx.Err() != nil {
		return transport.ErrClosed
	}
	if c.readerErr == nil {
		return errors.New("the sandbox closed the connection")
	}
	return c.readerErr
}

// Close ends the session: it asks the sandbox to shut down, closes the
// stream, cancels in-flight tool calls and stops the sandbox.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.cancel()
		// Best effort: a sandbox that does not read must not block Close.
		sent := make(chan struct{})
		go func() {
			_ = c.conn.Write(&ShutdownFrame{})
			close(sent)
		}()
		select {
		case <-sent:
		case <-time.After(100 * time.Millisecond):
		}
		c.closeErr = c.closeConn()
		<-c.readerEnd
	})
	return c.closeErr
}

func (c *Client) closeConn() error {
	err := c.conn.Close()
	if c.opts.OnClose != nil {
		if cerr := c.opts.OnClose(); cerr != nil {
			err = cerr
		}
	}
	return err
}

// stopMessage is what the code is told when the host stops it for cause:
// a [transport.StopReason]'s own message, else that the host cancelled it.
func stopMessage(cause error) string {
	var r transport.StopReason
	if errors.As(cause, &r) {
		return r.StopMessage()
	}
	return "The host cancelled the code: " + cause.Error()
}
