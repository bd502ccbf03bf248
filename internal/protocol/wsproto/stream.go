package wsproto

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/adk-codemode/codemode/internal/protocol/wire"
)

// Subprotocol names this binding of the frame protocol in the WebSocket
// handshake; a server refuses a client that does not ask for it. Version
// 2 numbers and acknowledges the data messages, so that a session
// survives a lost connection.
const Subprotocol = "codemode.v2"

// Options bound a [Stream]. The zero value means the defaults.
type Options struct {
	// MaxMessageBytes bounds one received text message. Zero means
	// wire.MaxFrameSize+1: one frame of the largest size, with its newline.
	// Outgoing writes are split at line boundaries to stay within it.
	MaxMessageBytes int64
	// IdleTimeout ends a connection that receives nothing, not even a
	// pong, for this long. Zero means 60s.
	IdleTimeout time.Duration
	// PingInterval is how often a ping is sent. Zero means a third of
	// IdleTimeout.
	PingInterval time.Duration
	// WriteTimeout bounds one write, and the wait for the peer to
	// acknowledge enough to make room for a write. Zero means 60s.
	WriteTimeout time.Duration
	// ResumeWindow is how long a session outlives a lost connection,
	// waiting for it to be resumed. Zero means 30s; negative means a lost
	// connection ends the session at once.
	ResumeWindow time.Duration
	// MaxUnackedBytes bounds what one side keeps of what it sent and the
	// peer has not acknowledged: what it would send again on a resume. A
	// single message larger than it is still sent, alone. Zero means 16
	// MiB.
	MaxUnackedBytes int64
	// Logger, if set, hears of a session's writes waiting at
	// MaxUnackedBytes and of what a resumed connection sends again.
	Logger *slog.Logger
}

func (o *Options) setDefaults() {
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = wire.MaxFrameSize + 1
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 60 * time.Second
	}
	if o.PingInterval <= 0 || o.PingInterval >= o.IdleTimeout {
		o.PingInterval = o.IdleTimeout / 3
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 60 * time.Second
	}
	if o.ResumeWindow == 0 {
		o.ResumeWindow = 30 * time.Second
	}
	if o.MaxUnackedBytes <= 0 {
		o.MaxUnackedBytes = 16 << 20
	}
}

// MaxFrame is the frame line limit that fits one message: pass it to
// wire.NewConn.
func (o Options) MaxFrame() int {
	o.setDefaults()
	return int(min(o.MaxMessageBytes-1, wire.MaxFrameSize))
}

// A LimitError is a breach of a limit on what was received. The connection
// was closed with a reason that names the limit.
type LimitError struct {
	What  string // what was exceeded, for example "message size"
	Limit string // the limit, for example "1048576 bytes"
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("wsproto: %s exceeds the limit of %s", e.What, e.Limit)
}

// Stream is one WebSocket connection of a session: it reads and writes
// the files message and then carries a [Resumable]'s binary messages. It
// keeps the connection alive with pings; a connection idle for
// [Options.IdleTimeout] fails its reads.
type Stream struct {
	ws   *websocket.Conn
	opts Options

	greeted bool // the peer's first ack has arrived; guarded by its Resumable's mu

	peerClosed chan struct{}         // closed when the peer's close frame arrives
	peerClose  *websocket.CloseError // set before peerClosed closes
	peerOnce   sync.Once

	stop      chan struct{} // closed by Close
	done      chan struct{} // closed when the network connection is closed
	closeOnce sync.Once
}

// NewStream takes over ws: it sets ws's ping and pong handlers and starts
// sending pings. Close the stream to end it.
func NewStream(ws *websocket.Conn, opts Options) *Stream {
	opts.setDefaults()
	s := &Stream{ws: ws, opts: opts, stop: make(chan struct{}), done: make(chan struct{}), peerClosed: make(chan struct{})}
	s.extend()
	closeHandler := ws.CloseHandler()
	ws.SetCloseHandler(func(code int, text string) error {
		s.peerOnce.Do(func() {
			s.peerClose = &websocket.CloseError{Code: code, Text: text}
			close(s.peerClosed)
		})
		return closeHandler(code, text)
	})
	ws.SetPongHandler(func(string) error { s.extend(); return nil })
	ws.SetPingHandler(func(data string) error {
		s.extend()
		err := ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second))
		var ne net.Error
		if errors.Is(err, websocket.ErrCloseSent) || errors.As(err, &ne) && ne.Timeout() {
			return nil
		}
		return err
	})
	go s.keepAlive()
	return s
}

// extend moves the idle deadline: something arrived.
func (s *Stream) extend() { _ = s.ws.SetReadDeadline(time.Now().Add(s.opts.IdleTimeout)) }

func (s *Stream) keepAlive() {
	t := time.NewTicker(s.opts.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if err := s.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(s.opts.WriteTimeout)); err != nil {
				return
			}
		}
	}
}

// readMessage returns the next binary message, of at most limit bytes.
// A text message or an oversize one closes the connection with a reason.
func (s *Stream) readMessage(limit int64) ([]byte, error) {
	typ, r, err := s.ws.NextReader()
	if err != nil {
		return nil, err
	}
	s.extend()
	if typ != websocket.BinaryMessage {
		s.CloseWith(websocket.CloseUnsupportedData, "a text message where binary messages were expected")
		return nil, fmt.Errorf("%w: the peer sent a text message where binary messages were expected", wire.ErrProtocol)
	}
	b, err := io.ReadAll(&extendingReader{s: s, r: io.LimitReader(r, limit+1)})
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, s.breach(websocket.CloseMessageTooBig, "message size", fmt.Sprintf("%d bytes", s.opts.MaxMessageBytes))
	}
	return b, nil
}

// extendingReader moves the idle deadline as a long message arrives: a
// long message is not idleness.
type extendingReader struct {
	s *Stream
	r io.Reader
	n int
}

func (e *extendingReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if e.n += n; e.n >= 1<<20 {
		e.n = 0
		e.s.extend()
	}
	return n, err
}

// writeMessage sends b as one binary message.
func (s *Stream) writeMessage(b []byte) error {
	_ = s.ws.SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout))
	if err := s.ws.WriteMessage(websocket.BinaryMessage, b); err != nil {
		return s.writeErr(err)
	}
	return nil
}

// abort closes the network connection without a close frame: the link is
// given up, not the session.
func (s *Stream) abort() {
	s.closeOnce.Do(func() {
		close(s.stop)
		_ = s.ws.Close()
		close(s.done)
	})
}

// breach closes the connection because a limit was exceeded.
func (s *Stream) breach(code int, what, limit string) error {
	s.CloseWith(code, what+" exceeds "+limit)
	return &LimitError{What: what, Limit: limit}
}

// writeErr explains a failed write by the peer's close frame, if one
// arrives soon: a peer that refuses a message closes with a reason.
func (s *Stream) writeErr(err error) error {
	select {
	case <-s.peerClosed:
	case <-s.done:
		return err
	case <-time.After(500 * time.Millisecond):
		return err
	}
	return fmt.Errorf("wsproto: the peer closed the connection: %w", s.peerClose)
}

func lastNewline(b []byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '\n' {
			return i
		}
	}
	return -1
}

// Close ends the connection with a normal close frame.
func (s *Stream) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.stop)
		_ = s.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(100*time.Millisecond))
		err = s.ws.Close()
		close(s.done)
	})
	return err
}

// CloseWith ends the connection with a close frame of code and reason (at
// most 123 bytes are sent). It then stops writing, discards what the peer
// still sends for up to 2s so that the close frame is not lost to a reset,
// and closes the network connection; [Stream.Done] says when.
func (s *Stream) CloseWith(code int, reason string) {
	s.closeOnce.Do(func() {
		close(s.stop)
		if len(reason) > 123 {
			reason = reason[:123]
		}
		_ = s.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(time.Second))
		nc := s.ws.NetConn()
		if cw, ok := nc.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		go func() {
			defer close(s.done)
			_ = nc.SetReadDeadline(time.Now().Add(2 * time.Second))
			_, _ = io.Copy(io.Discard, nc)
			_ = s.ws.Close()
		}()
	})
}

// Done is closed once the network connection is closed.
func (s *Stream) Done() <-chan struct{} { return s.done }
