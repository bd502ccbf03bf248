package engine

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Parked holds the blocks paused for a person's approval past the
// execute_code call that ran them, until the answer comes or the approval
// timeout passes, and the notices for the model about blocks that are
// gone. T is the adapter's turn, which a parked block keeps alive. A
// block is parked by the session it belongs to and the execute_code call
// id its answer comes for. The zero Parked is not usable: see NewParked.
type Parked[T any] struct {
	timeout time.Duration
	stop    func(T) // ends the turn of a block that is stopped

	mu            sync.Mutex
	closed        bool
	paused        map[string]*ParkedBlock[T] // by session and call id
	continuations map[string]*ParkedBlock[T] // by the invocation that announces them
	notices       map[string][]notice        // by session
}

// NewParked returns a Parked whose blocks wait at most timeout for their
// answer; stop ends the turn of a block that is stopped.
func NewParked[T any](timeout time.Duration, stop func(T)) *Parked[T] {
	return &Parked[T]{timeout: timeout, stop: stop}
}

// ParkedBlock is a block paused for approval, held past its invocation.
type ParkedBlock[T any] struct {
	Session string // the session it belongs to
	CallID  string // the execute_code call id the answer comes for
	Turn    T
	Block   *Block
	Req     *ApprovalRequest

	key   string
	timer *time.Timer
	// announced says the request is on an execute_code event; a block
	// that paused again waits for the call that announces it.
	announced  bool
	invocation string // the invocation whose next model request announces it
}

// notice is a message for the model about a block it no longer has.
type notice struct {
	callID string
	msg    string
}

// Bounds on the notices kept for the model.
const (
	maxNoticeSessions = 1024
	maxNotices        = 16
)

func parkedKey(session, callID string) string { return session + "\x00" + callID }

// Park holds p until its answer comes or the timeout passes; announced
// says its request is on the event of the call that returned. It reports
// false once Parked is closed: p is then not held.
func (r *Parked[T]) Park(p *ParkedBlock[T], announced bool) bool {
	p.key, p.announced = parkedKey(p.Session, p.CallID), announced
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	if r.paused == nil {
		r.paused = map[string]*ParkedBlock[T]{}
	}
	r.paused[p.key] = p
	p.timer = time.AfterFunc(r.timeout, func() { r.expire(p) })
	return true
}

// Continue marks p, parked again after a resume, as announced by a new
// execute_code call that the invocation's next model request makes (see
// [Parked.Continuation]).
func (r *Parked[T]) Continue(p *ParkedBlock[T], invocation string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.paused[p.key] != p {
		return
	}
	p.invocation = invocation
	if r.continuations == nil {
		r.continuations = map[string]*ParkedBlock[T]{}
	}
	r.continuations[invocation] = p
}

// Continuation takes the block parked again whose request the
// invocation's next model request announces, or nil.
func (r *Parked[T]) Continuation(invocation string) *ParkedBlock[T] {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.continuations[invocation]
	delete(r.continuations, invocation)
	return p
}

// Announce returns the block parked under the call callID of session,
// not yet announced, marking it announced, or nil.
func (r *Parked[T]) Announce(session, callID string) *ParkedBlock[T] {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.paused[parkedKey(session, callID)]
	if p == nil || p.announced {
		return nil
	}
	p.announced = true
	return p
}

// Take returns the block parked under the call callID of session, no
// longer held, or nil; ErrClosed once Parked is closed.
func (r *Parked[T]) Take(session, callID string) (*ParkedBlock[T], error) {
	key := parkedKey(session, callID)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	p := r.paused[key]
	if p != nil {
		delete(r.paused, key)
		p.timer.Stop()
	}
	return p, nil
}

// expire stops a parked block whose answer did not come in time, and
// leaves the model a notice.
func (r *Parked[T]) expire(p *ParkedBlock[T]) {
	r.mu.Lock()
	if r.paused[p.key] != p {
		r.mu.Unlock()
		return
	}
	delete(r.paused, p.key)
	if p.invocation != "" && r.continuations[p.invocation] == p {
		delete(r.continuations, p.invocation)
	}
	r.noteLocked(p.Session, p.CallID, fmt.Sprintf(
		"[The code of execute_code call %s was paused at its call of %s awaiting a person's approval, and no answer came within %s: it was stopped, and the turn's variables are gone. %s was not run; the tool calls before it were.]",
		p.CallID, p.Req.Tool, Seconds(r.timeout), p.Req.Tool))
	r.mu.Unlock()
	p.Block.Cancel(fmt.Errorf("no approval came in time"))
	r.stop(p.Turn)
}

func (r *Parked[T]) noteLocked(session, callID, msg string) {
	if r.notices == nil {
		r.notices = map[string][]notice{}
	}
	if _, ok := r.notices[session]; !ok && len(r.notices) >= maxNoticeSessions {
		for k := range r.notices {
			delete(r.notices, k)
			break
		}
	}
	ns := append(r.notices[session], notice{callID, msg})
	if len(ns) > maxNotices {
		ns = ns[len(ns)-maxNotices:]
	}
	r.notices[session] = ns
}

// Notices takes the session's pending notices, each once, appended to
// stderr.
func (r *Parked[T]) Notices(session, stderr string) string {
	r.mu.Lock()
	ns := r.notices[session]
	delete(r.notices, session)
	r.mu.Unlock()
	for _, n := range ns {
		stderr = AppendLine(stderr, n.msg)
	}
	return stderr
}

// Unknown tells the model about an answer, to the call callID of session,
// for a block this host does not hold: the notice left when it was
// stopped, taken, or why there is none.
func (r *Parked[T]) Unknown(session, callID string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ns := r.notices[session]
	for i, n := range ns {
		if n.callID == callID {
			r.notices[session] = slices.Delete(ns, i, i+1)
			return strings.Trim(n.msg, "[]")
		}
	}
	return fmt.Sprintf("A person answered a request for approval made by execute_code call %s, but this host no longer holds that code: "+
		"it was restarted, or the code was already resumed or stopped. The code did not continue: the turn's variables are gone and the tool call "+
		"that awaited approval was not run; the tool calls the code made before it were. Check their effects before running the code again.", callID)
}

// Close stops every parked block, with ErrClosed, and their turns; later
// blocks are not parked.
func (r *Parked[T]) Close() {
	r.mu.Lock()
	r.closed = true
	paused := r.paused
	r.paused, r.continuations = nil, nil
	r.mu.Unlock()
	for _, p := range paused {
		p.timer.Stop()
		p.Block.Cancel(ErrClosed)
		r.stop(p.Turn)
	}
}

// Confirmation is what the person is asked, as the confirmation of the
// execute_code call callID: the tool's own hint after a sentence that says
// which tool the code calls and with which arguments (bounded), and the
// tool's own payload, or, when it gave none (as a tool that only requires
// confirmation does), those facts as data for a client to show. The
// block's code goes with it, at most MaxShownCode bytes of it: in the
// payload that Code Mode makes, as "code", and, when the tool gave a
// payload of its own (which goes back to the tool with the answer, so
// nothing is added to it), at the end of the hint. The tool runs again
// with the person's answer, never with this text.
func (r *ApprovalRequest) Confirmation(callID string) Confirmation {
	conf := r.Conf
	args, shown := BoundedArgs(r.Args)
	with := "arguments too long to show here"
	if b, err := json.Marshal(args); shown && err == nil {
		with = string(b)
	}
	lead := fmt.Sprintf("The code of execute_code call %s calls the tool %s with %s.", callID, r.Tool, with)
	if conf.Hint != "" {
		lead += " " + conf.Hint
	}
	code, cut := boundedCode(r.Code)
	if conf.Payload == nil {
		p := map[string]any{"tool": r.Tool, "execute_code_call": callID, "code": code}
		if cut {
			p["code_truncated"] = true
		}
		if shown {
			p["args"] = args
		}
		conf.Payload = p
	} else if code != "" {
		lead += "\n\nThe block's code"
		if cut {
			lead += fmt.Sprintf(" (its first %d bytes)", len(code))
		}
		lead += ":\n" + code
	}
	conf.Hint = lead
	return conf
}

// MaxShownCode bounds the block's code shown with a paused call, in bytes.
const MaxShownCode = 8192

// boundedCode is code cut to at most MaxShownCode bytes at a character's
// start, and whether it was cut.
func boundedCode(code string) (string, bool) {
	if len(code) <= MaxShownCode {
		return code, false
	}
	n := MaxShownCode
	for n > 0 && !utf8.RuneStart(code[n]) {
		n--
	}
	return code[:n], true
}

// maxShownArgs bounds the arguments shown with a paused call, in bytes of
// JSON; larger ones are left out.
const maxShownArgs = 4096

// BoundedArgs are args made JSON-safe, and whether they are small enough
// to show with a paused call.
func BoundedArgs(args map[string]any) (any, bool) {
	safe := JSONSafe(args)
	b, err := json.Marshal(safe)
	if err != nil || len(b) > maxShownArgs {
		return nil, false
	}
	return safe, true
}
