package wsproto

import (
	"context"
	"crypto/hmac"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/adk-codemode/codemode/internal/protocol/wire"
)

// ErrNotResumed is wrapped by the error of a session whose connection was
// lost and not resumed within the resume window.
var ErrNotResumed = errors.New("wsproto: the connection was lost and not resumed")

// errClosed is the error of a closed Resumable.
var errClosed = errors.New("wsproto: the connection is closed")

// ErrResumeSuperseded is the error of [Resumable.Attach] for a resume
// that a later one overtook: [Resumable.CheckResume] accepted the later one
// before this one was attached.
var ErrResumeSuperseded = errors.New("wsproto: a later resume of the session was accepted; this connection was dropped")

// Redial is how a client's [Resumable] reconnects after a lost
// connection.
type Redial struct {
	// Dial makes one attempt: a WebSocket to the same sandbox, with
	// credential as the value of the [ResumeHeader] request header.
	Dial func(ctx context.Context, credential string) (*websocket.Conn, error)
	// Delay is the wait before attempt k+1 (k >= 1); the first attempt
	// is made at once.
	Delay func(k int) time.Duration
	// Permanent says whether a failed attempt means the session cannot
	// be resumed at all (a refused credential, a session that has ended).
	Permanent func(error) bool
}

// Resumable is the byte stream of one session over a sequence of
// WebSocket connections: writes go out as numbered data messages, which
// the peer acknowledges; reads return the data received, in order. When
// a connection is lost, writes are kept and reads wait; a client dials
// again (see [Redial]), and a server takes the client's next connection
// ([Resumable.CheckResume], [Resumable.Attach]); then both sides say what
// they have received and send the rest again, so that nothing is lost or
// delivered twice. A session not resumed within [Options.ResumeWindow]
// fails with [ErrNotResumed].
//
// Read must not be called concurrently, nor Write; Close may be called
// from any goroutine. It is what wire.NewConn needs.
//
// The connection is read by the goroutine that needs a message: a Read
// with nothing queued reads the next message itself, so no hand-off
// between goroutines stands between the network and the reader. While a
// Write waits for acknowledgements and no Read is reading, a helper
// goroutine reads for it. Keep a Read pending (as a frame reader does) for
// the peer's pings, acknowledgements and a lost connection to be noticed
// promptly.
type Resumable struct {
	opts   Options
	server bool
	redial Redial

	wmu sync.Mutex // serialises the writes on a connection

	mu      sync.Mutex
	cond    *sync.Cond
	link    *Stream // the connection; nil while there is none
	sending *Stream // link, once what it must send again has been sent
	first   bool    // link is the session's first connection
	key     []byte  // the resume key; nil on a client until it arrives
	id      string  // the session id
	attempt uint64  // the last resume attempt signed (client) or accepted (server)

	next         uint64   // the sequence number of the next data message
	unacked      [][]byte // payloads from sequence number next-len(unacked)
	unackedBytes int64
	recvd        uint64 // data messages received
	acked        uint64 // the acknowledgement last sent
	ackTimer     *time.Timer
	ackPending   bool     // ackTimer is set to go off
	inq          [][]byte // data received and not yet read
	inqBytes     int64

	reading bool // a goroutine is reading link (see pump)
	waiters int  // writers waiting for acknowledgements
	helping bool // a helper reads for them (see help)

	lostErr  error // why the connection was lost
	retryErr error // why the last redial failed
	window   *time.Timer
	lostGen  int   // counts the connections lost, to match a window to its loss
	err      error // the session's end; reads return it once inq is empty
	done     chan struct{}
}

// NewServer starts the server's side of a session on its first
// connection, l, whose files message has been read: it sends the session
// id and the resume key.
func NewServer(l *Stream, opts Options) *Resumable {
	r := newResumable(opts)
	r.server, r.key, r.id = true, newKey(), NewSessionID()
	_ = r.attach(l, true, 0)
	return r
}

// NewClient starts the client's side of a session on its first
// connection, l, on which the files message has been sent. A client
// without redial.Dial does not resume.
func NewClient(l *Stream, opts Options, redial Redial) *Resumable {
	r := newResumable(opts)
	r.redial = redial
	_ = r.attach(l, true, 0)
	return r
}

func newResumable(opts Options) *Resumable {
	opts.setDefaults()
	r := &Resumable{opts: opts, done: make(chan struct{})}
	r.cond = sync.NewCond(&r.mu)
	return r
}

// Session returns the session id, "" on a client until the server has
// sent it.
func (r *Resumable) Session() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.id
}

// Done is closed once the session has ended and its connection is
// closed.
func (r *Resumable) Done() <-chan struct{} { return r.done }

// Err returns why the session ended, or nil while it lasts.
func (r *Resumable) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// A Resume is a resume of the session that [Resumable.CheckResume]
// accepted, for [Resumable.Attach].
type Resume struct {
	attempt uint64
}

// CheckResume checks a resume credential (a server's [ResumeHeader]) and
// uses it up: it must name this session, carry a MAC by the session's
// resume key, and an attempt number above any accepted before.
func (r *Resumable) CheckResume(credential string) (Resume, error) {
	id, attempt, mac, err := parseResume(credential)
	if err != nil {
		return Resume{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.err != nil:
		return Resume{}, ErrSessionEnded
	case id != r.id:
		return Resume{}, ErrOtherSession
	case !hmac.Equal(mac, resumeMAC(r.key, id, strconv.FormatUint(attempt, 10))):
		return Resume{}, ErrResumeRefused
	case attempt <= r.attempt:
		return Resume{}, ErrResumeReplayed
	}
	r.attempt = attempt
	return Resume{attempt: attempt}, nil
}

// Attach makes ws the session's connection for res, which
// [Resumable.CheckResume] accepted; the connection it replaces, if any, is
// dropped. A resume overtaken by a later one, accepted before this one is
// attached, is not attached: its connection is dropped and Attach returns
// [ErrResumeSuperseded]. The client has given that connection up, and what
// it said on it (how much it had received) is out of date.
func (r *Resumable) Attach(ws *websocket.Conn, res Resume) error {
	if res.attempt == 0 {
		_ = ws.Close()
		return ErrResumeRefused
	}
	if err := r.attach(NewStream(ws, r.opts), false, res.attempt); err != nil {
		return err
	}
	return r.Err()
}

// attach makes l the connection. For a server's resume, attempt is the
// resume's; a later one accepted meanwhile refuses it.
func (r *Resumable) attach(l *Stream, first bool, attempt uint64) error {
	superseded := func() bool { return attempt != 0 && attempt != r.attempt }
	r.mu.Lock()
	if superseded() {
		r.mu.Unlock()
		l.abort()
		return ErrResumeSuperseded
	}
	old := r.link
	r.link, r.sending = nil, nil
	r.mu.Unlock()
	if old != nil {
		old.abort() // unblocks a write stuck on it
	}
	r.wmu.Lock()
	defer r.wmu.Unlock()
	r.mu.Lock()
	if superseded() {
		r.mu.Unlock()
		l.abort()
		return ErrResumeSuperseded
	}
	if r.err != nil {
		r.mu.Unlock()
		l.CloseWith(websocket.CloseGoingAway, ErrSessionEnded.Error())
		return nil
	}
	r.link, r.first = l, first
	if r.window != nil {
		r.window.Stop()
		r.window = nil
	}
	r.acked = r.recvd
	var hello []byte
	if r.server && first {
		hello = appendSession(nil, r.key, r.id)
	}
	ack := appendAck(nil, r.recvd)
	r.cond.Broadcast() // a Read waiting for a connection reads this one
	r.kick()
	r.mu.Unlock()
	for _, m := range [][]byte{hello, ack} {
		if m == nil {
			continue
		}
		if err := l.writeMessage(m); err != nil {
			r.linkLost(l, err)
			return nil
		}
	}
	return nil
}

// readLimit bounds one received message: a data message of the largest
// size with its header, or the session message.
func (r *Resumable) readLimit() int64 {
	return max(r.opts.MaxMessageBytes, 1+keyBytes+maxSessionID) + maxHeader
}

// pump reads one message of the connection and applies it. It is called,
// and returns, with r.mu held, a connection and no other reader; the lock
// is released while the message is read.
func (r *Resumable) pump() {
	l := r.link
	r.reading = true
	r.mu.Unlock()
	b, err := l.readMessage(r.readLimit())
	r.mu.Lock()
	r.reading = false
	defer r.kick()
	defer r.cond.Broadcast()
	if err != nil {
		r.linkLostLocked(l, err)
		return
	}
	if r.link != l || r.err != nil {
		l.abort() // replaced while the message arrived
		return
	}
	m, err := decodeMessage(b)
	if err == nil {
		err = r.deliver(l, m)
	}
	if err != nil {
		r.failLocked(err, websocket.CloseProtocolError, err.Error())
	}
}

// needHelp says whether the connection must be read while no Read reads
// it: the peer's greeting is due (what is written waits for it), or
// writers wait for acknowledgements; and what is queued for Read stays
// within two messages. r.mu is held.
func (r *Resumable) needHelp() bool {
	return r.link != nil && r.err == nil && !r.reading &&
		(r.waiters > 0 || !r.link.greeted) && r.inqBytes <= 2*r.opts.MaxMessageBytes
}

// kick starts a helper that reads the connection when it must be read and
// no Read does. r.mu is held.
func (r *Resumable) kick() {
	if !r.helping && r.needHelp() {
		r.helping = true
		go r.help()
	}
}

// help reads the connection while it must be and nobody else does.
func (r *Resumable) help() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.needHelp() {
		r.pump()
	}
	r.helping = false
}

// deliver applies one message received on l, the connection. r.mu is
// held.
func (r *Resumable) deliver(l *Stream, m message) error {
	switch m.kind {
	case kindSession:
		if r.server || !r.first || r.key != nil {
			return fmt.Errorf("%w: an unexpected session message", wire.ErrProtocol)
		}
		r.key, r.id = append([]byte(nil), m.key...), m.id
	case kindAck:
		if r.key == nil {
			return fmt.Errorf("%w: an ack before the session message", wire.ErrProtocol)
		}
		base := r.next - uint64(len(r.unacked))
		if m.ack > r.next {
			return fmt.Errorf("%w: the peer acknowledges %d messages, of %d sent", wire.ErrProtocol, m.ack, r.next)
		}
		if m.ack < base {
			return fmt.Errorf("%w: the peer acknowledges %d messages, fewer than the %d it acknowledged before", wire.ErrProtocol, m.ack, base)
		}
		r.trim(m.ack)
		if !l.greeted {
			l.greeted = true
			go r.resend(l)
		}
	case kindData:
		if !l.greeted {
			return fmt.Errorf("%w: a data message before the peer's ack", wire.ErrProtocol)
		}
		if m.seq != r.recvd {
			return fmt.Errorf("%w: data message %d where %d was due", wire.ErrProtocol, m.seq, r.recvd)
		}
		if err := r.checkAck(m.ack); err != nil {
			return err
		}
		r.trim(m.ack)
		r.recvd++
		// readMessage returned a fresh buffer: the payload is ours.
		r.inq = append(r.inq, m.payload)
		r.inqBytes += int64(len(m.payload))
		r.scheduleAck()
	}
	return nil
}

func (r *Resumable) checkAck(ack uint64) error {
	if ack > r.next || ack < r.next-uint64(len(r.unacked)) {
		return fmt.Errorf("%w: the peer acknowledges %d messages, of %d sent", wire.ErrProtocol, ack, r.next)
	}
	return nil
}

// trim drops what the peer has acknowledged: ack messages in all.
func (r *Resumable) trim(ack uint64) {
	base := r.next - uint64(len(r.unacked))
	for ; base < ack; base++ {
		r.unackedBytes -= int64(len(r.unacked[0]))
		r.unacked[0] = nil
		r.unacked = r.unacked[1:]
	}
	r.cond.Broadcast()
}

// ackDelay is how long an acknowledgement waits for a data message to
// ride on.
const ackDelay = 20 * time.Millisecond

// scheduleAck arranges for what has been received to be acknowledged:
// at once when much is unacknowledged, else soon.
func (r *Resumable) scheduleAck() {
	if r.recvd-r.acked > 64 || r.inqBytes > r.opts.MaxUnackedBytes/4 {
		go r.sendAck()
		return
	}
	switch {
	case r.ackPending:
	case r.ackTimer == nil:
		r.ackTimer = time.AfterFunc(ackDelay, r.sendAck)
		r.ackPending = true
	default:
		r.ackTimer.Reset(ackDelay)
		r.ackPending = true
	}
}

// sendAck acknowledges what has been received, unless a data message
// carried the acknowledgement already.
func (r *Resumable) sendAck() {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	r.mu.Lock()
	r.ackPending = false
	l, ack := r.sending, r.recvd
	if l == nil || ack == r.acked || r.err != nil {
		r.mu.Unlock()
		return
	}
	r.acked = ack
	r.mu.Unlock()
	if err := l.writeMessage(appendAck(nil, ack)); err != nil {
		r.linkLost(l, err)
	}
}

// resend sends on l what the peer has not acknowledged, then lets writes
// go straight to l.
func (r *Resumable) resend(l *Stream) {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	r.mu.Lock()
	if r.link != l || r.err != nil {
		r.mu.Unlock()
		return
	}
	seq := r.next - uint64(len(r.unacked))
	pending := append([][]byte(nil), r.unacked...)
	unacked := r.unackedBytes
	r.mu.Unlock()
	if len(pending) > 0 && r.opts.Logger != nil {
		r.opts.Logger.Info("wsproto: sending again what the peer has not acknowledged", "messages", len(pending), "bytes", unacked, "first", seq)
	}
	for _, p := range pending {
		r.mu.Lock()
		ack := r.recvd
		r.acked = ack
		r.mu.Unlock()
		if err := l.writeMessage(appendData(nil, seq, ack, p)); err != nil {
			r.linkLost(l, err)
			return
		}
		seq++
	}
	r.mu.Lock()
	if r.link == l {
		r.sending = l
	}
	r.mu.Unlock()
}

// Read returns the data received, in order. Once the session has ended
// and all of it has been read, it returns io.EOF for a normal end and the
// session's error otherwise.
func (r *Resumable) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(r.inq) == 0 && r.err == nil {
		if r.link != nil && !r.reading {
			r.pump()
			continue
		}
		r.cond.Wait()
	}
	if len(r.inq) == 0 {
		return 0, r.err
	}
	n := copy(p, r.inq[0])
	if n == len(r.inq[0]) {
		r.inq[0] = nil
		r.inq = r.inq[1:]
	} else {
		r.inq[0] = r.inq[0][n:]
	}
	r.inqBytes -= int64(n)
	r.kick() // a helper held back by a full queue may go on
	return n, nil
}

// Write sends p as one data message, or as several split at line
// boundaries when p is over [Options.MaxMessageBytes]. It returns once p
// is kept for sending again, whether or not there is a connection; it
// waits while [Options.MaxUnackedBytes] are unacknowledged, and after
// [Options.WriteTimeout] of that ends the session.
func (r *Resumable) Write(p []byte) (int, error) {
	sent := 0
	for sent < len(p) {
		chunk := p[sent:]
		if int64(len(chunk)) > r.opts.MaxMessageBytes {
			chunk = chunk[:r.opts.MaxMessageBytes]
			if i := lastNewline(chunk); i >= 0 {
				chunk = chunk[:i+1]
			}
		}
		if err := r.writeData(chunk); err != nil {
			return sent, err
		}
		sent += len(chunk)
	}
	return sent, nil
}

func (r *Resumable) writeData(p []byte) error {
	if err := r.waitRoom(int64(len(p))); err != nil {
		return err
	}
	payload := append([]byte(nil), p...)
	r.wmu.Lock()
	defer r.wmu.Unlock()
	r.mu.Lock()
	if r.err != nil {
		err := r.err
		r.mu.Unlock()
		return err
	}
	seq := r.next
	r.next++
	r.unacked = append(r.unacked, payload)
	r.unackedBytes += int64(len(payload))
	l, ack := r.sending, r.recvd
	if l != nil {
		r.acked = ack
	}
	r.mu.Unlock()
	if l != nil {
		if err := l.writeMessage(appendData(nil, seq, ack, payload)); err != nil {
			r.linkLost(l, err) // kept: it goes again on the next connection
		}
	}
	return nil
}

// waitRoom waits until n more bytes may be kept unacknowledged.
func (r *Resumable) waitRoom(n int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	full := func() bool { return r.unackedBytes > 0 && r.unackedBytes+n > r.opts.MaxUnackedBytes }
	if r.err == nil && full() {
		expired := false
		t := time.AfterFunc(r.opts.WriteTimeout, func() {
			r.mu.Lock()
			expired = true
			r.cond.Broadcast()
			r.mu.Unlock()
		})
		r.waiters++
		r.kick()
		if r.opts.Logger != nil {
			unacked, connected := r.unackedBytes, r.link != nil
			r.mu.Unlock()
			r.opts.Logger.Info("wsproto: writes wait for the peer to acknowledge what it has not",
				"unacked", unacked, "bound", r.opts.MaxUnackedBytes, "connected", connected)
			r.mu.Lock()
		}
		for r.err == nil && full() && !expired {
			r.cond.Wait()
		}
		r.waiters--
		t.Stop()
		if r.err == nil && full() {
			reason := fmt.Sprintf("unacknowledged data exceeds %d bytes for %s", r.opts.MaxUnackedBytes, r.opts.WriteTimeout)
			r.failLocked(&LimitError{What: "unacknowledged data", Limit: fmt.Sprintf("%d bytes for %s", r.opts.MaxUnackedBytes, r.opts.WriteTimeout)},
				websocket.ClosePolicyViolation, reason)
		}
	}
	return r.err
}

// linkLost handles the failure of connection l: the end of the session
// if the peer ended it or a limit was breached, else a wait for a
// resume.
func (r *Resumable) linkLost(l *Stream, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.linkLostLocked(l, err)
}

func (r *Resumable) linkLostLocked(l *Stream, err error) {
	if r.link != l || r.err != nil {
		l.abort()
		return
	}
	var ce *websocket.CloseError
	var le *LimitError
	switch {
	case errors.As(err, &ce) && ce.Code == websocket.CloseNormalClosure:
		r.failLocked(io.EOF, 0, "")
		return
	case errors.As(err, &ce) && ce.Code != websocket.CloseAbnormalClosure, errors.As(err, &le), errors.Is(err, wire.ErrProtocol):
		r.failLocked(err, 0, "")
		return
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		err = fmt.Errorf("nothing received, not even a pong, for %s", r.opts.IdleTimeout)
	}
	r.link, r.sending = nil, nil
	l.abort()
	switch {
	case r.opts.ResumeWindow < 0:
		r.failLocked(fmt.Errorf("%w: %w", ErrNotResumed, err), 0, "")
		return
	case r.key == nil:
		r.failLocked(fmt.Errorf("%w: it was lost before the session was established: %w", ErrNotResumed, err), 0, "")
		return
	}
	r.lostErr, r.retryErr = err, nil
	if r.window == nil {
		r.lostGen++
		gen := r.lostGen
		r.window = time.AfterFunc(r.opts.ResumeWindow, func() { r.expire(gen) })
	}
	r.cond.Broadcast()
	if !r.server && r.redial.Dial != nil {
		go r.reconnect(time.Now().Add(r.opts.ResumeWindow))
	}
}

// expire ends a session whose connection was not resumed in time.
func (r *Resumable) expire(gen int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lostGen != gen || r.window == nil || r.link != nil || r.err != nil {
		return
	}
	err := fmt.Errorf("%w within %s: %w", ErrNotResumed, r.opts.ResumeWindow, r.lostErr)
	if r.retryErr != nil {
		err = fmt.Errorf("%w (the last attempt: %w)", err, r.retryErr)
	}
	r.failLocked(err, 0, "")
}

// reconnect dials until a connection is attached, the window closes or
// the server refuses for good.
func (r *Resumable) reconnect(deadline time.Time) {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	go func() {
		select {
		case <-r.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	for k := 0; ; k++ {
		if k > 0 && r.redial.Delay != nil {
			t := time.NewTimer(r.redial.Delay(k))
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		r.mu.Lock()
		if r.err != nil || r.link != nil {
			r.mu.Unlock()
			return
		}
		r.attempt++
		cred := resumeCredential(r.key, r.id, r.attempt)
		r.mu.Unlock()
		ws, err := r.redial.Dial(ctx, cred)
		if err == nil {
			_ = r.attach(NewStream(ws, r.opts), false, 0)
			return
		}
		r.mu.Lock()
		r.retryErr = err
		r.mu.Unlock()
		if ctx.Err() != nil {
			return // the window's timer ends the session
		}
		if r.redial.Permanent != nil && r.redial.Permanent(err) {
			r.fail(fmt.Errorf("%w: the sandbox refused to resume it: %w", ErrNotResumed, err), 0, "")
			return
		}
	}
}

// fail ends the session with err; a non-zero code closes the connection
// with that close code and reason.
func (r *Resumable) fail(err error, code int, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failLocked(err, code, reason)
}

func (r *Resumable) failLocked(err error, code int, reason string) {
	if r.err != nil {
		return
	}
	r.err = err
	if r.window != nil {
		r.window.Stop()
	}
	if r.ackTimer != nil {
		r.ackTimer.Stop()
	}
	r.unacked, r.unackedBytes = nil, 0
	r.cond.Broadcast()
	l := r.link
	r.link, r.sending = nil, nil
	if l == nil {
		close(r.done)
		return
	}
	switch {
	case code != 0:
		l.CloseWith(code, reason)
	case errors.Is(err, errClosed):
		_ = l.Close()
	default:
		l.abort()
	}
	go func() { <-l.Done(); close(r.done) }()
}

// Close ends the session with a normal close frame on its connection.
func (r *Resumable) Close() error {
	r.fail(errClosed, 0, "")
	return nil
}
