package wsproto

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/adk-codemode/codemode/transport/wire"
)

// Subprotocol names this binding of the frame protocol in the WebSocket
// handshake; a server refuses a client that does not ask for it.
const Subprotocol = "codemode.v1"

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
	// WriteTimeout bounds one write. Zero means 60s.
	WriteTimeout time.Duration
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

// Stream is a byte stream over a WebSocket: writes go out as text
// messages, reads return the text messages received, one after another.
// It keeps the connection alive with pings and ends it when it is idle.
type Stream struct {
	ws   *websocket.Conn
	opts Options

	cur  io.Reader // the message being read
	left int64     // bytes the current message may still have

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

// NewConn returns a wire.Conn over a new [Stream] on ws.
func NewConn(ws *websocket.Conn, opts Options) (*wire.Conn, *Stream) {
	s := NewStream(ws, opts)
	return wire.NewConn(s, s, s, opts.MaxFrame()), s
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

// Read reads the text messages received, in order, as one stream.
func (s *Stream) Read(p []byte) (int, error) {
	for {
		if s.cur == nil {
			typ, r, err := s.ws.NextReader()
			if err != nil {
				return 0, s.readErr(err)
			}
			s.extend()
			if typ != websocket.TextMessage {
				s.CloseWith(websocket.CloseUnsupportedData, "a binary message where frames were expected")
				return 0, fmt.Errorf("%w: the peer sent a binary message where frames were expected", wire.ErrProtocol)
			}
			s.cur, s.left = r, s.opts.MaxMessageBytes
		}
		if int64(len(p)) > s.left+1 {
			p = p[:s.left+1]
		}
		n, err := s.cur.Read(p)
		s.left -= int64(n)
		if s.left < 0 {
			return 0, s.breach(websocket.CloseMessageTooBig, "message size", fmt.Sprintf("%d bytes", s.opts.MaxMessageBytes))
		}
		if n > 0 && s.left < s.opts.MaxMessageBytes/2 {
			s.extend() // a long message is not idleness
		}
		switch {
		case errors.Is(err, io.EOF):
			s.cur = nil
			if n > 0 {
				return n, nil
			}
		case err != nil:
			return n, s.readErr(err)
		case n > 0:
			return n, nil
		}
	}
}

// readErr turns a read error into the stream's: the peer's normal close
// is the end of the stream; an idle timeout closes the connection.
func (s *Stream) readErr(err error) error {
	if websocket.IsCloseError(err, websocket.CloseNormalClosure) {
		return io.EOF
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return s.breach(websocket.ClosePolicyViolation, "idle time", s.opts.IdleTimeout.String()+" without a message or pong")
	}
	return err
}

// breach closes the connection because a limit was exceeded.
func (s *Stream) breach(code int, what, limit string) error {
	s.CloseWith(code, what+" exceeds "+limit)
	return &LimitError{What: what, Limit: limit}
}

// Write sends p as one text message, or as several split at line
// boundaries when p is over [Options.MaxMessageBytes].
func (s *Stream) Write(p []byte) (int, error) {
	_ = s.ws.SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout))
	sent := 0
	for sent < len(p) {
		chunk := p[sent:]
		if int64(len(chunk)) > s.opts.MaxMessageBytes {
			chunk = chunk[:s.opts.MaxMessageBytes]
			if i := lastNewline(chunk); i >= 0 {
				chunk = chunk[:i+1]
			}
		}
		if err := s.ws.WriteMessage(websocket.TextMessage, chunk); err != nil {
			return sent, s.writeErr(err)
		}
		sent += len(chunk)
	}
	return sent, nil
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
