package mcpcommand

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/adk-codemode/codemode/internal/both/tailbuf"
)

// ErrClosed is the error of a Connect after [Transport.Close].
var ErrClosed = errors.New("mcpcommand: the transport is closed")

// DefaultTerminateDuration is how long a connection's Close waits for the
// process to exit after closing its standard input, and then again after
// SIGTERM, before it kills it.
const DefaultTerminateDuration = 5 * time.Second

// stderrTail is how much of a process's standard error is kept for errors.
const stderrTail = 2 << 10

// exitWait is how long an error on the connection waits for the process to
// exit, so that the error can say how it ended: a server that closes its
// output is usually exiting.
const exitWait = 500 * time.Millisecond

// Transport is an [mcp.Transport] that runs Args as a child process for
// each connection. Set the fields before the first Connect and do not
// change them afterwards.
type Transport struct {
	// Args is the command: Args[0] is looked up in PATH as exec.Command
	// does.
	Args []string
	// Env is the process's environment; nil gives it this process's.
	Env []string
	// Dir is its working directory; empty means this process's.
	Dir string
	// Stderr receives the process's standard error; nil discards it.
	// Either way the last lines are kept for errors.
	Stderr io.Writer
	// TerminateDuration is how long closing a connection waits for the
	// process to exit before signalling it; zero means
	// [DefaultTerminateDuration].
	TerminateDuration time.Duration

	mu     sync.Mutex
	cur    *process
	closed bool
}

var _ mcp.Transport = (*Transport)(nil)

// Connect starts a fresh process and connects to it. A process of an
// earlier connection that is still running is ended first. ctx bounds
// only the start: the process lives until the connection or the
// transport is closed.
func (t *Transport) Connect(ctx context.Context) (mcp.Connection, error) {
	if len(t.Args) == 0 {
		return nil, errors.New("mcpcommand: Transport.Args is empty: give the MCP server's command")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, ErrClosed
	}
	if old := t.cur; old != nil {
		go old.stop(t.terminate())
	}
	p, err := t.start()
	if err != nil {
		return nil, err
	}
	t.cur = p
	conn, err := (&mcp.IOTransport{Reader: p.stdout, Writer: &closer{p: p, wait: t.terminate()}}).Connect(ctx)
	if err != nil {
		go p.stop(0)
		return nil, err
	}
	return &connection{Connection: conn, p: p}, nil
}

// Pid is the process ID of the running process, or 0 if none runs.
func (t *Transport) Pid() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cur == nil || t.cur.exited() {
		return 0
	}
	return t.cur.cmd.Process.Pid
}

// Close ends the running process, if any, and makes later Connects fail
// with [ErrClosed]. It waits for the process to exit.
func (t *Transport) Close() error {
	t.mu.Lock()
	t.closed = true
	p := t.cur
	t.cur = nil
	t.mu.Unlock()
	if p != nil {
		p.stop(0)
	}
	return nil
}

func (t *Transport) terminate() time.Duration {
	if t.TerminateDuration > 0 {
		return t.TerminateDuration
	}
	return DefaultTerminateDuration
}

// process is one run of the command.
type process struct {
	name   string // the command, for errors
	cmd    *exec.Cmd
	stdin  *os.File // the write end of its standard input
	stdout *os.File // the read end of its standard output
	tail   *tailbuf.Buffer
	done   chan struct{} // closed once it has exited; err is set
	err    error
	once   sync.Once
}

func (t *Transport) start() (*process, error) {
	p := &process{name: strings.Join(t.Args, " "), tail: &tailbuf.Buffer{Max: stderrTail}, done: make(chan struct{})}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("mcpcommand: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("mcpcommand: %w", err)
	}
	cmd := exec.Command(t.Args[0], t.Args[1:]...)
	cmd.Env, cmd.Dir = t.Env, t.Dir
	cmd.Stdin, cmd.Stdout = inR, outW
	cmd.Stderr = p.tail
	if t.Stderr != nil {
		cmd.Stderr = io.MultiWriter(t.Stderr, p.tail)
	}
	err = cmd.Start()
	// The child has its own copies of these ends.
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("mcpcommand: start the MCP server %q: %w", p.name, err)
	}
	p.cmd, p.stdin, p.stdout = cmd, inW, outR
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop closes the process's standard input, as the MCP specification has
// a client end a stdio server, waits up to wait for it to exit, then sends
// SIGTERM and waits again, then kills it; it returns once it has exited.
func (p *process) stop(wait time.Duration) {
	p.once.Do(func() {
		p.stdin.Close()
		if wait > 0 && p.waitExit(wait) {
			p.stdout.Close()
			return
		}
		if wait > 0 {
			_ = p.cmd.Process.Signal(terminateSignal)
			if p.waitExit(wait) {
				p.stdout.Close()
				return
			}
		}
		_ = p.cmd.Process.Kill()
		<-p.done
		p.stdout.Close()
	})
	<-p.done
}

func (p *process) waitExit(d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-p.done:
		return true
	case <-timer.C:
		return false
	}
}

// explain adds to err, an error of the connection, how the process ended
// and the last of its standard error, if it has ended or does so soon.
func (p *process) explain(err error) error {
	if !p.waitExit(exitWait) {
		return err
	}
	how := "exited with status 0"
	if p.err != nil {
		how = p.err.Error()
		var ee *exec.ExitError
		if errors.As(p.err, &ee) && ee.Exited() {
			how = fmt.Sprintf("exited with status %d", ee.ExitCode())
		} else if ee != nil {
			how = "ended: " + ee.String()
		}
	}
	msg := fmt.Sprintf("the MCP server %q %s", p.name, how)
	if s := strings.TrimSpace(p.tail.String()); s != "" {
		msg += "; its standard error ended with: " + s
	}
	return fmt.Errorf("%w (%s)", err, msg)
}

// closer is the connection's writer: closing it ends the process.
type closer struct {
	p    *process
	wait time.Duration
}

func (c *closer) Write(b []byte) (int, error) { return c.p.stdin.Write(b) }

func (c *closer) Close() error {
	c.p.stop(c.wait)
	return nil
}

// connection names the cause when the connection fails because the
// process ended.
type connection struct {
	mcp.Connection
	p *process
}

func (c *connection) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if err != nil && ctx.Err() == nil {
		err = c.p.explain(err)
	}
	return m, err
}

func (c *connection) Write(ctx context.Context, m jsonrpc.Message) error {
	err := c.Connection.Write(ctx, m)
	if err != nil && ctx.Err() == nil {
		err = c.p.explain(err)
	}
	return err
}
