package engine

import (
	"context"
	"errors"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/adk-codemode/codemode/transport"
)

// Turn is the state of one invocation: its tool surface (S, the
// adapter's) and its sandbox, whose lifetime it owns. A use (acquired from
// [Turns] to [Turn.End]) keeps the sandbox open; once the turn is released
// ([Turn.Release]) the sandbox closes when the last use ends, and
// [Turn.Shutdown] closes it at once. X is the adapter's handle on an
// execute_code call in flight.
type Turn[S any, X comparable] struct {
	exec sync.Mutex // serialises the invocation's execute_code calls

	// Abandoned counts the tool calls still running after their timeout.
	Abandoned atomic.Int64

	mu       sync.Mutex // guards the fields below
	surf     S
	hasSurf  bool
	sess     transport.Session
	running  X
	blk      *Block                    // the block running or paused in the sandbox
	parked   *ParkedBlock[*Turn[S, X]] // set while a block of the turn awaits approval
	inUse    int
	lastUsed time.Time
	released bool
	blocks   int // execute_code calls that ran code
	refused  int // execute_code calls refused by the block budget
	models   int // model calls of the invocation
	log      *TurnLog
	replay   *Replay
}

// Log is the turn's record, for a durable turn (see [TurnLog]).
func (t *Turn[S, X]) Log() *TurnLog {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.log == nil {
		t.log = &TurnLog{}
	}
	return t.log
}

// Replay is the replay that resumes the turn, if it is one (see [Replay]).
func (t *Turn[S, X]) Replay() *Replay {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.replay
}

// SetReplay makes the turn the replay r, before its first block.
func (t *Turn[S, X]) SetReplay(r *Replay) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.replay = r
}

// CountBlock counts one more block of the turn, unless limit are counted
// already, and says whether it did; a call it refuses is counted as such.
func (t *Turn[S, X]) CountBlock(limit int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.blocks >= limit {
		t.refused++
		return false
	}
	t.blocks++
	return true
}

// ModelCall counts a model call of the turn and returns how many there
// have been, and how many execute_code calls the block budget refused.
func (t *Turn[S, X]) ModelCall() (models, refused int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.models++
	return t.models, t.refused
}

// Current is the execute_code call running, if any.
func (t *Turn[S, X]) Current() (X, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var none X
	return t.running, t.running != none
}

// CurrentBlock is the block running or paused in the sandbox, or nil.
func (t *Turn[S, X]) CurrentBlock() *Block {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.blk
}

// SetBlock makes f the turn's block (nil: none).
func (t *Turn[S, X]) SetBlock(f *Block) {
	t.mu.Lock()
	t.blk = f
	t.mu.Unlock()
}

// Surface is the turn's surface, and whether it has one.
func (t *Turn[S, X]) Surface() (S, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.surf, t.hasSurf
}

// SettledSurface returns the turn's surface, and whether it is settled:
// it is, unless it lacks a toolset that failed (missing) and no sandbox
// was opened from it yet.
func (t *Turn[S, X]) SettledSurface(missing func(S) bool) (S, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.surf, t.hasSurf && (!missing(t.surf) || t.sess != nil)
}

// SetSurface makes s the turn's surface.
func (t *Turn[S, X]) SetSurface(s S) {
	t.mu.Lock()
	t.surf, t.hasSurf = s, true
	t.mu.Unlock()
}

// SettleSurface makes s the turn's surface unless it has a settled one
// (see SettledSurface), and returns the surface it has.
func (t *Turn[S, X]) SettleSurface(s S, missing func(S) bool) S {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.hasSurf || missing(t.surf) && t.sess == nil {
		t.surf, t.hasSurf = s, true
	}
	return t.surf
}

// Begin makes exec the turn's running call once the calls before it have
// ended. The turn must be in use (see [Turns.Acquire]); End ends both.
func (t *Turn[S, X]) Begin(exec X) {
	t.exec.Lock()
	t.mu.Lock()
	t.running = exec
	t.mu.Unlock()
}

// End ends exec, whose late effects ended refuses first: the next call
// may run, and the use that Acquire marked ends.
func (t *Turn[S, X]) End(exec X, ended func()) {
	ended()
	t.mu.Lock()
	if t.running == exec {
		var none X
		t.running = none
	}
	t.inUse--
	t.lastUsed = time.Now()
	s := t.closableLocked()
	t.mu.Unlock()
	t.exec.Unlock()
	closeSession(s)
}

// Release ends the turn: its sandbox closes now, or when the use in
// flight ends.
func (t *Turn[S, X]) Release() {
	t.mu.Lock()
	t.released = true
	s := t.closableLocked()
	t.mu.Unlock()
	closeSession(s)
}

// Shutdown ends the turn and closes its sandbox at once, which unblocks a
// running Exec.
func (t *Turn[S, X]) Shutdown() {
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
func (t *Turn[S, X]) closableLocked() transport.Session {
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

// Park marks a block of the turn parked for approval.
func (t *Turn[S, X]) Park(p *ParkedBlock[*Turn[S, X]]) {
	t.mu.Lock()
	t.parked = p
	t.mu.Unlock()
}

// AwaitingApproval says whether a block of the turn is parked.
func (t *Turn[S, X]) AwaitingApproval() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.parked != nil
}

// OpenSession returns the turn's sandbox, opening it with open (from the
// turn's surface) if needed; fresh says it was opened now. closed says
// whether Code Mode is closed: a sandbox opened meanwhile is dropped.
func (t *Turn[S, X]) OpenSession(ctx context.Context, closed func() bool, open func(context.Context, S) (transport.Session, error)) (_ transport.Session, fresh bool, _ error) {
	t.mu.Lock()
	s, surf, has := t.sess, t.surf, t.hasSurf
	t.mu.Unlock()
	if s != nil {
		return s, false, nil
	}
	if closed() {
		return nil, false, ErrClosed
	}
	if !has {
		return nil, false, errors.New("codemode: the turn has no tool surface")
	}
	s, err := open(ctx, surf)
	if err != nil {
		return nil, false, err
	}
	t.mu.Lock()
	t.sess = s
	t.mu.Unlock()
	// Close may have run meanwhile and missed this session.
	if closed() {
		t.Discard(s)
		return nil, false, ErrClosed
	}
	return s, true, nil
}

// Discard closes s, dropping it if it is still the turn's sandbox.
func (t *Turn[S, X]) Discard(s transport.Session) {
	t.mu.Lock()
	if t.sess == s {
		t.sess = nil
	}
	t.mu.Unlock()
	_ = s.Close()
}

// Turns are the turns by invocation id, and the reaper that releases
// those idle past a timeout. The zero Turns is not usable: see NewTurns.
type Turns[S any, X comparable] struct {
	idle time.Duration

	mu         sync.Mutex
	turns      map[string]*Turn[S, X]
	closed     bool
	reaperStop chan struct{}
	reaperDone chan struct{}
}

// NewTurns returns Turns whose turns are released once idle for longer
// than idle.
func NewTurns[S any, X comparable](idle time.Duration) *Turns[S, X] {
	return &Turns[S, X]{idle: idle, turns: map[string]*Turn[S, X]{}}
}

// Get returns the turn of an invocation, creating it.
func (r *Turns[S, X]) Get(id string) (*Turn[S, X], error) { return r.get(id, false) }

// Acquire returns the turn of an invocation, creating it, marked in use so
// that the reaper leaves it alone; the caller ends the use with
// [Turn.End].
func (r *Turns[S, X]) Acquire(id string) (*Turn[S, X], error) { return r.get(id, true) }

func (r *Turns[S, X]) get(id string, use bool) (*Turn[S, X], error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	t := r.turns[id]
	if t == nil {
		t = &Turn[S, X]{lastUsed: time.Now()}
		r.turns[id] = t
		r.startReaperLocked()
	}
	if use {
		// Under r.mu, which the reaper holds while it looks at inUse.
		t.mu.Lock()
		t.inUse++
		t.mu.Unlock()
	}
	return t, nil
}

// Lookup returns the turn of an invocation, or nil.
func (r *Turns[S, X]) Lookup(id string) *Turn[S, X] {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.turns[id]
}

// All returns the turns by invocation id, as they are now.
func (r *Turns[S, X]) All() map[string]*Turn[S, X] {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.turns)
}

// Closed says whether Close was called.
func (r *Turns[S, X]) Closed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// Release ends an invocation's turn and closes its sandbox. It is a no-op
// for an unknown invocation. A call still running keeps the sandbox until
// it returns.
func (r *Turns[S, X]) Release(id string) {
	r.mu.Lock()
	t := r.turns[id]
	delete(r.turns, id)
	r.mu.Unlock()
	if t != nil {
		t.Release()
	}
}

// Adopt makes the parked turn t, resumed by an answer, the turn of the
// invocation that resumes it, so that later blocks of that invocation
// share its variables; when the invocation has a turn already, or Turns
// are closed, t closes once its block ends. The resume is a use of t.
func (r *Turns[S, X]) Adopt(id string, t *Turn[S, X]) {
	r.mu.Lock()
	defer r.mu.Unlock()
	own := r.turns[id] == nil && !r.closed
	if own {
		r.turns[id] = t
		r.startReaperLocked()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.parked = nil
	t.inUse++
	t.released = !own
}

// Close shuts every turn down and stops the reaper; later turns are
// refused with ErrClosed. It reports false when Turns were closed already.
func (r *Turns[S, X]) Close() bool {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return false
	}
	r.closed = true
	turns := r.turns
	r.turns = map[string]*Turn[S, X]{}
	stop, done := r.reaperStop, r.reaperDone
	r.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
	var wg sync.WaitGroup
	for _, t := range turns {
		wg.Go(t.Shutdown)
	}
	wg.Wait()
	return true
}

// startReaperLocked starts the idle reaper once; r.mu is held.
func (r *Turns[S, X]) startReaperLocked() {
	if r.reaperStop != nil {
		return
	}
	r.reaperStop, r.reaperDone = make(chan struct{}), make(chan struct{})
	every := min(r.idle/2, 30*time.Second)
	every = max(every, 50*time.Millisecond)
	go r.reap(every, r.reaperStop, r.reaperDone)
}

// reap releases the turns that have been idle longer than the timeout.
func (r *Turns[S, X]) reap(every time.Duration, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-tick.C:
			var idle []*Turn[S, X]
			r.mu.Lock()
			for id, t := range r.turns {
				t.mu.Lock()
				if t.inUse == 0 && now.Sub(t.lastUsed) > r.idle {
					idle = append(idle, t)
					delete(r.turns, id)
				}
				t.mu.Unlock()
			}
			r.mu.Unlock()
			for _, t := range idle {
				t.Release()
			}
		}
	}
}
