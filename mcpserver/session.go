package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/genai"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/runner"
)

// client is the Code Mode state of one MCP client session: the
// invocation whose sandbox keeps the client's Python state.
type client struct {
	srv *Server
	id  string

	// mu lets one call at a time run; a call holds it until its result
	// is back.
	mu sync.Mutex
	// gen counts the invocations started, so each has a session id of its
	// own in the session service. Guarded by mu.
	gen int

	// invMu guards inv and closed, apart from mu, so that closing the
	// session does not wait for a running call.
	invMu  sync.Mutex
	inv    *invocation
	closed bool

	// used and busy are guarded by srv.mu.
	used time.Time
	busy int
}

// invocation is one ADK invocation of a session, running on a goroutine of
// its own until its bridge ends it or its context is cancelled.
type invocation struct {
	calls  chan *call
	end    chan struct{} // closed to end the invocation
	cancel context.CancelFunc
	done   chan struct{} // closed when the invocation has ended
	err    error         // why it ended, set before done closes

	idMu sync.Mutex
	id   string // the ADK invocation id, once the bridge has seen it
}

func (inv *invocation) setID(id string) {
	inv.idMu.Lock()
	inv.id = id
	inv.idMu.Unlock()
}

func (inv *invocation) ID() string {
	inv.idMu.Lock()
	defer inv.idMu.Unlock()
	return inv.id
}

// ended says the invocation is over.
func (inv *invocation) ended() bool {
	select {
	case <-inv.done:
		return true
	default:
		return false
	}
}

// msgFresh tells the client that the state of earlier calls is gone.
const msgFresh = "Note: this session's earlier Python state (variables, imports, files) is gone: the session idled out, other sessions needed its sandbox, or a cancelled call could not be stopped in place; this block ran in a fresh sandbox."

// run runs code in the session's invocation, starting one if none runs,
// and returns the execute_code result. A ctx that ends meanwhile
// interrupts the block (see [client.interrupt]).
func (s *client) run(ctx context.Context, code string) (map[string]any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	inv, fresh, err := s.current()
	if err != nil {
		return nil, err
	}
	c := &call{code: code, reply: make(chan reply, 1)}
	select {
	case inv.calls <- c:
	case <-inv.done:
		return nil, fmt.Errorf("the session's invocation ended before the code was sent: %w", inv.err)
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	select {
	case r := <-c.reply:
		if r.err != nil {
			return nil, r.err
		}
		if fresh {
			stderr, _ := r.response["stderr"].(string)
			if stderr != "" && stderr[len(stderr)-1] != '\n' {
				stderr += "\n"
			}
			r.response["stderr"] = stderr + msgFresh
		}
		return r.response, nil
	case <-inv.done:
		return nil, fmt.Errorf("the session's invocation ended while the code ran: %w", inv.err)
	case <-ctx.Done():
		s.interrupt(inv, c, context.Cause(ctx))
		return nil, context.Cause(ctx)
	}
}

// interrupt stops the block of c, which the client cancelled, and waits
// for it to end: interrupted in place, it keeps the session's variables,
// and its result is dropped. A block that cannot be interrupted so (it
// has not started within interruptStart, or does not end in time) ends
// with the invocation, whose context the execute_code call follows, and
// the session's state with it.
func (s *client) interrupt(inv *invocation, c *call, cause error) {
	cause = fmt.Errorf("the MCP client cancelled the call: %w", cause)
	start := time.Now()
	for !s.srv.interrupt(inv.ID(), cause) {
		// The block may not have reached the sandbox yet.
		if time.Since(start) > interruptStart {
			inv.cancel()
			<-inv.done
			return
		}
		select {
		case <-c.reply:
			return
		case <-inv.done:
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
	// The plugin gives the code its grace to stop, then restarts the
	// worker; allow for both.
	select {
	case <-c.reply:
		return
	case <-inv.done:
		return
	case <-time.After(s.srv.grace + interruptSlack):
	}
	inv.cancel()
	<-inv.done
}

// interruptStart is how long a cancelled block may take to start before
// its invocation is ended instead.
const interruptStart = 5 * time.Second

// interruptSlack is how much longer than its grace an interrupted block
// may take to come back before its invocation is ended.
const interruptSlack = 10 * time.Second

// current returns the session's invocation, started if none runs; fresh
// says an earlier one ended, and its state with it. Called with mu held,
// so that one call at a time starts one; invMu is not held while the
// server makes room, which looks at other sessions.
func (s *client) current() (inv *invocation, fresh bool, err error) {
	s.invMu.Lock()
	closed, cur := s.closed, s.inv
	s.invMu.Unlock()
	switch {
	case closed:
		return nil, false, errClosedSession
	case cur != nil && !cur.ended():
		return cur, false, nil
	}
	fresh = s.gen > 0
	if err := s.srv.admit(s); err != nil {
		return nil, false, err
	}
	defer s.srv.started()
	if inv, err = s.start(); err != nil {
		return nil, false, err
	}
	s.invMu.Lock()
	if s.closed {
		s.invMu.Unlock()
		close(inv.end)
		inv.cancel()
		<-inv.done
		return nil, false, errClosedSession
	}
	s.inv = inv
	s.invMu.Unlock()
	return inv, fresh, nil
}

// errClosedSession is a call to a session closed meanwhile.
var errClosedSession = errors.New("this MCP session was closed on the server, which is shutting down")

// live says the session holds a running invocation, and so a sandbox.
func (s *client) live() bool {
	s.invMu.Lock()
	defer s.invMu.Unlock()
	return s.inv != nil && !s.inv.ended()
}

// start starts a new invocation for the session.
func (s *client) start() (*invocation, error) {
	s.gen++
	inv := &invocation{calls: make(chan *call), end: make(chan struct{}), done: make(chan struct{})}
	a, err := llmagent.New(llmagent.Config{
		Name:        "codemode_mcp",
		Description: "Runs the code of an MCP client's execute calls.",
		Model:       &bridge{calls: inv.calls, end: inv.end, invocation: inv},
	})
	if err != nil {
		return nil, fmt.Errorf("mcpserver: make the session's agent: %w", err)
	}
	r, err := runner.New(runner.Config{
		AppName:           appName,
		Agent:             a,
		SessionService:    s.srv.sessions,
		PluginConfig:      runner.PluginConfig{Plugins: []*plugin.Plugin{s.srv.plugin}},
		AutoCreateSession: true,
	})
	if err != nil {
		return nil, fmt.Errorf("mcpserver: make the session's runner: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	inv.cancel = cancel
	sid := fmt.Sprintf("%s-%d", s.id, s.gen)
	go func() {
		defer close(inv.done)
		defer cancel()
		msg := genai.NewContentFromText("An MCP client session started.", genai.RoleUser)
		for _, err := range r.Run(ctx, "mcp", sid, msg, agent.RunConfig{}) {
			if err != nil && inv.err == nil {
				inv.err = err
			}
		}
		if inv.err == nil {
			inv.err = errors.New("the invocation ended")
		}
		// The session's events are of no further use.
		_ = s.srv.deleteSession(sid)
	}()
	return inv, nil
}

// stop ends the session's invocation: its sandbox is closed, and the next
// call starts a fresh one. final closes the session for good. An
// invocation that does not end within wait is cancelled.
func (s *client) stop(wait time.Duration, final bool) {
	s.invMu.Lock()
	inv := s.inv
	s.inv = nil
	s.closed = s.closed || final
	s.invMu.Unlock()
	if inv == nil {
		return
	}
	close(inv.end)
	select {
	case <-inv.done:
	case <-time.After(wait):
		inv.cancel()
		<-inv.done
	}
}
