package codemode

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/adk-codemode/codemode/internal/both/observe"
	eng "github.com/adk-codemode/codemode/internal/host/engine"

	"github.com/adk-codemode/codemode/transport"
)

// turn is the state of one invocation: its tool surface and its sandbox.
// It owns the sandbox's lifetime. A use ([turn.begin] to [turn.end]) keeps
// the sandbox open; once the turn is released ([turn.release]) the sandbox
// closes when the last use ends, and [turn.shutdown] closes it at once.
type turn struct {
	id string

	exec sync.Mutex // serialises the invocation's execute_code calls

	abandoned atomic.Int64 // tool calls still running after their timeout

	mu       sync.Mutex // guards the fields below
	surf     *surface
	sess     transport.Session
	running  *execCall
	blk      *eng.Block   // the block running or paused in the sandbox
	parked   *parkedBlock // set while a block of the turn awaits approval
	inUse    int
	lastUsed time.Time
	released bool
	blocks   int // execute_code calls that ran code
	refused  int // execute_code calls refused by Budgets.BlocksPerTurn
	models   int // model calls of the invocation (Budgets.ModelCallsPerTurn)
}

// countBlock counts one more block of the turn, unless limit are counted
// already, and says whether it did; a call it refuses is counted as such.
func (t *turn) countBlock(limit int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.blocks >= limit {
		t.refused++
		return false
	}
	t.blocks++
	return true
}

// modelCall counts a model call of the turn and returns how many there
// have been, and how many execute_code calls the block budget refused.
func (t *turn) modelCall() (models, refused int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.models++
	return t.models, t.refused
}

func (t *turn) current() *execCall {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.running
}

func (t *turn) currentBlock() *eng.Block {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.blk
}

func (t *turn) setBlock(f *eng.Block) {
	t.mu.Lock()
	t.blk = f
	t.mu.Unlock()
}

func (t *turn) surface() *surface {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.surf
}

// settledSurface returns the turn's surface, and whether it is settled: it
// is, unless it lacks a toolset that failed and no sandbox was opened from
// it yet.
func (t *turn) settledSurface() (*surface, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.surf, t.surf != nil && (len(t.surf.Unavailable) == 0 || t.sess != nil)
}

// begin makes exec the turn's running call once the calls before it have
// ended. The turn must be in use (see [engine.acquire]); end ends both.
func (t *turn) begin(exec *execCall) {
	t.exec.Lock()
	t.mu.Lock()
	t.running = exec
	t.mu.Unlock()
}

// end ends exec: its late effects are refused, the next call may run, and
// the use that [engine.acquire] marked ends.
func (t *turn) end(exec *execCall) {
	exec.end()
	t.mu.Lock()
	if t.running == exec {
		t.running = nil
	}
	t.inUse--
	t.lastUsed = time.Now()
	s := t.closableLocked()
	t.mu.Unlock()
	t.exec.Unlock()
	closeSession(s)
}

// release ends the turn: its sandbox closes now, or when the use in
// flight ends.
func (t *turn) release() {
	t.mu.Lock()
	t.released = true
	s := t.closableLocked()
	t.mu.Unlock()
	closeSession(s)
}

// shutdown ends the turn and closes its sandbox at once, which unblocks a
// running Exec.
func (t *turn) shutdown() {
	t.mu.Lock()
	t.released = true
	s := t.sess
	t.sess = nil
	t.mu.Unlock()
	closeSession(s)
}

// closableLocked is the release rule, the one place it is written: a
// released turn's sandbox is taken for closing once nothing uses it and
// no block of it awaits approval. t.mu is held.
func (t *turn) closableLocked() transport.Session {
	if !t.released || t.inUse > 0 || t.parked != nil {
		return nil
	}
	s := t.sess
	t.sess = nil
	return s
}

func closeSession(s transport.Session) {
	if s != nil {
		_ = s.Close()
	}
}

// session returns the turn's sandbox, opening it if needed; fresh says it
// was opened now.
func (e *engine) session(ctx context.Context, t *turn) (_ transport.Session, fresh bool, _ error) {
	t.mu.Lock()
	s, surf := t.sess, t.surf
	t.mu.Unlock()
	if s != nil {
		return s, false, nil
	}
	if e.isClosed() {
		return nil, false, ErrClosed
	}
	if surf == nil {
		return nil, false, errors.New("codemode: the turn has no tool surface")
	}
	sctx, start := e.obs.StartSandbox(ctx, e.cfg.Backend.Name())
	s, err := e.cfg.Backend.Open(sctx, transport.SessionConfig{Files: surf.Files, Tools: handler{e: e, t: t}})
	if err != nil {
		start.End("", "", err)
		return nil, false, err
	}
	var path, reason string
	if r, ok := s.(transport.StartReporter); ok {
		path, reason = r.StartPath()
	}
	start.End(path, reason, nil)
	s = &countedSession{Session: s, obs: e.obs, backend: e.cfg.Backend.Name()}
	eng.RecordEnvironment(e.cfg.Backend, s.Environment())
	t.mu.Lock()
	t.sess = s
	t.mu.Unlock()
	// Close may have run meanwhile and missed this session.
	if e.isClosed() {
		t.discard(s)
		return nil, false, ErrClosed
	}
	return s, true, nil
}

// discard closes s if it is still the turn's sandbox.
func (t *turn) discard(s transport.Session) {
	t.mu.Lock()
	if t.sess == s {
		t.sess = nil
	}
	t.mu.Unlock()
	_ = s.Close()
}

// countedSession is a sandbox counted open (codemode.sandboxes.open) until
// its first Close.
type countedSession struct {
	transport.Session
	obs     *observe.Observer
	backend string
	closed  atomic.Bool
}

// Unwrap is the backend's session ([transport.EgressMeterOf]).
func (s *countedSession) Unwrap() transport.Session { return s.Session }

func (s *countedSession) Close() error {
	if !s.closed.Swap(true) {
		s.obs.SandboxClosed(s.backend)
	}
	return s.Session.Close()
}
