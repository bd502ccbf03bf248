package mcpserver

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"google.golang.org/genai"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/artifact"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool/toolconfirmation"
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

	// paused is a block awaiting the client's approval. Guarded by mu.
	paused *paused

	// artifacts is where the plugin saves the files the code writes, until
	// the call's result takes them; token is the secret in the URIs of the
	// files kept for links.
	artifacts artifact.Service
	token     string
	files     files

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

	sid string // the ADK session the invocation runs in
	// confirm is the confirmation a tool called from code asked for, if
	// the invocation ended for it; set before done closes.
	confirm *confirmation
}

// confirmation is a request for a person's approval that ended an
// invocation: the block is paused at the tool call until the answer.
type confirmation struct {
	id   string // the adk_request_confirmation call's id
	hint string
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

// outcome is how an execute call ends: with the block's result, or with a
// question for the client (an approval), to be answered by a retry of the
// call that carries state.
type outcome struct {
	response map[string]any
	files    []mcp.Content // the files the block wrote
	ask      *mcp.ElicitParams
	state    string
}

// paused is a block paused at a tool call that needs a person's approval,
// between the execute call that asked the client and its retry with the
// answer.
type paused struct {
	token string
	inv   *invocation
	c     *call
	notes []string
}

// approvalInput is the id of the approval among a call's input requests.
const approvalInput = "approval"

// run runs code in the session's invocation, starting one if none runs,
// and returns the execute_code result, or a question for the client. A
// ctx that ends meanwhile interrupts the block (see [client.interrupt]).
func (s *client) run(ctx context.Context, mss *mcp.ServerSession, code string) (outcome, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropPaused(ctx)
	inv, fresh, err := s.current()
	if err != nil {
		return outcome{}, err
	}
	c := &call{code: code, reply: make(chan reply, 1)}
	select {
	case inv.calls <- c:
	case <-inv.done:
		return outcome{}, fmt.Errorf("the session's invocation ended before the code was sent: %w", inv.err)
	case <-ctx.Done():
		return outcome{}, context.Cause(ctx)
	}
	var notes []string
	if fresh {
		notes = append(notes, msgFresh)
	}
	return s.follow(ctx, mss, inv, c, notes)
}

// answer resumes the block paused for the approval that state names, with
// the client's answer among responses.
func (s *client) answer(ctx context.Context, mss *mcp.ServerSession, state string, responses mcp.InputResponseMap) (outcome, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.paused
	if p == nil || subtle.ConstantTimeCompare([]byte(p.token), []byte(state)) != 1 {
		return outcome{}, errors.New("the requestState of this call names no block awaiting approval in this session (it was answered or declined already); run the code again")
	}
	s.paused = nil
	approved := false
	if r, ok := responses[approvalInput].(*mcp.ElicitResult); ok {
		ok, _ := r.Content["approve"].(bool)
		approved = r.Action == "accept" && ok
	}
	next, err := s.resume(p.inv, p.c, approved)
	if err != nil {
		return outcome{}, err
	}
	return s.follow(ctx, mss, next, p.c, p.notes)
}

// follow waits for the result of c, whose block runs in inv. A block that
// pauses for approval is declined when the client cannot be asked, and
// otherwise parked while the client is asked.
func (s *client) follow(ctx context.Context, mss *mcp.ServerSession, inv *invocation, c *call, notes []string) (outcome, error) {
	for {
		select {
		case r := <-c.reply:
			if r.err != nil {
				return outcome{}, r.err
			}
			files, fileNotes := s.collectFiles(ctx, inv.sid)
			notes = append(notes, fileNotes...)
			if len(notes) > 0 {
				stderr, _ := r.response["stderr"].(string)
				if stderr != "" && stderr[len(stderr)-1] != '\n' {
					stderr += "\n"
				}
				r.response["stderr"] = stderr + strings.Join(notes, "\n")
			}
			return outcome{response: r.response, files: files}, nil
		case <-inv.done:
			if inv.confirm == nil {
				return outcome{}, fmt.Errorf("the session's invocation ended while the code ran: %w", inv.err)
			}
			if !canElicit(mss) {
				notes = append(notes, msgNoElicitation)
				next, err := s.resume(inv, c, false)
				if err != nil {
					return outcome{}, err
				}
				inv = next
				continue
			}
			token := rand.Text()
			s.paused = &paused{token: token, inv: inv, c: c, notes: notes}
			return outcome{
				ask:   &mcp.ElicitParams{Message: clip(inv.confirm.hint), RequestedSchema: approvalSchema},
				state: token,
			}, nil
		case <-ctx.Done():
			s.interrupt(inv, c, context.Cause(ctx))
			return outcome{}, context.Cause(ctx)
		}
	}
}

// dropPaused declines a block left awaiting approval (the client never
// retried the call that asked), so that the next call can run; its result
// is dropped. Called with mu held.
func (s *client) dropPaused(ctx context.Context) {
	p := s.paused
	if p == nil {
		return
	}
	s.paused = nil
	next, err := s.resume(p.inv, p.c, false)
	if err != nil {
		return
	}
	// Without a client session, any further approval is declined too.
	_, _ = s.follow(ctx, nil, next, p.c, nil)
}

// msgNoElicitation tells the client why a tool call was declined.
const msgNoElicitation = "Note: a tool call of this block needs a person's approval, and this MCP client cannot be asked for it (it does not support elicitation), so it was declined."

// canElicit says the client of mss can be asked for input.
func canElicit(mss *mcp.ServerSession) bool {
	if mss == nil {
		return false
	}
	p := mss.InitializeParams()
	return p != nil && p.Capabilities != nil && p.Capabilities.Elicitation != nil
}

// approvalSchema is the form an approval is asked with.
var approvalSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"approve": map[string]any{"type": "boolean", "title": "Approve", "description": "Let the code make this tool call."},
	},
	"required": []string{"approve"},
}

// resume answers the confirmation that ended inv: a new invocation in the
// same ADK session, whose first message is the answer, resumes the paused
// block; its result goes to c.
func (s *client) resume(inv *invocation, c *call, approved bool) (*invocation, error) {
	answer := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
		ID: inv.confirm.id, Name: toolconfirmation.FunctionCallName, Response: map[string]any{"confirmed": approved},
	}}}}
	next, err := s.launch(inv.sid, answer, c)
	if err != nil {
		return nil, err
	}
	s.invMu.Lock()
	if s.closed {
		s.invMu.Unlock()
		close(next.end)
		next.cancel()
		<-next.done
		return nil, errClosedSession
	}
	s.inv = next
	s.invMu.Unlock()
	return next, nil
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

// start starts a new invocation for the session, in a new ADK session.
func (s *client) start() (*invocation, error) {
	s.gen++
	msg := genai.NewContentFromText("An MCP client session started.", genai.RoleUser)
	return s.launch(fmt.Sprintf("%s-%d", s.id, s.gen), msg, nil)
}

// launch starts an invocation in the ADK session sid with the user
// message msg; pending, if set, is a call whose block the invocation
// resumes.
func (s *client) launch(sid string, msg *genai.Content, pending *call) (*invocation, error) {
	inv := &invocation{calls: make(chan *call), end: make(chan struct{}), done: make(chan struct{}), sid: sid}
	a, err := llmagent.New(llmagent.Config{
		Name:        "codemode_mcp",
		Description: "Runs the code of an MCP client's execute calls.",
		Model:       &bridge{calls: inv.calls, end: inv.end, invocation: inv, pending: pending},
	})
	if err != nil {
		return nil, fmt.Errorf("mcpserver: make the session's agent: %w", err)
	}
	r, err := runner.New(runner.Config{
		AppName:           appName,
		Agent:             a,
		SessionService:    s.srv.sessions,
		ArtifactService:   s.artifacts,
		PluginConfig:      runner.PluginConfig{Plugins: []*plugin.Plugin{s.srv.plugin}},
		AutoCreateSession: true,
	})
	if err != nil {
		return nil, fmt.Errorf("mcpserver: make the session's runner: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	inv.cancel = cancel
	go func() {
		defer close(inv.done)
		defer cancel()
		for ev, err := range r.Run(ctx, userID, sid, msg, agent.RunConfig{}) {
			if err != nil && inv.err == nil {
				inv.err = err
			}
			if cf := confirmationOf(ev); cf != nil {
				inv.confirm = cf
			}
		}
		if inv.err == nil {
			inv.err = errors.New("the invocation ended")
		}
		if inv.confirm == nil {
			// The session's events are of no further use, nor are files
			// no result took.
			_ = s.srv.deleteSession(sid)
			s.purgeFiles(sid)
		}
	}()
	return inv, nil
}

// confirmationOf returns the request for confirmation that ev carries, or
// nil.
func confirmationOf(ev *session.Event) *confirmation {
	if ev == nil || ev.Content == nil {
		return nil
	}
	for _, p := range ev.Content.Parts {
		fc := p.FunctionCall
		if fc == nil || fc.Name != toolconfirmation.FunctionCallName {
			continue
		}
		cf := &confirmation{id: fc.ID, hint: "A tool called from code needs your approval."}
		// The confirmation is a struct in process and a map once stored:
		// read its hint through JSON either way.
		if b, err := json.Marshal(fc.Args["toolConfirmation"]); err == nil {
			var tc struct {
				Hint string `json:"hint"`
			}
			if json.Unmarshal(b, &tc) == nil && tc.Hint != "" {
				cf.hint = tc.Hint
			}
		}
		return cf
	}
	return nil
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
