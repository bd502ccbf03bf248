// Package connect is the host's end of one session over a byte stream to
// a sandbox server (internal/both/server, as the codemode-sandbox command
// runs it): the files preamble, when the server reads one, sent while the
// server's first frame is read, then the frame protocol's client. It is
// what sandboxserver.Connect offers a backend of one's own, and what the
// Docker backend does over a container's standard streams.
package connect

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/adk-codemode/codemode/internal/protocol/wire"
	"github.com/adk-codemode/codemode/transport"
)

// Options tune Stream.
type Options struct {
	// Preamble, if set, is the files preamble (wsproto.WriteFilesPreamble),
	// sent ahead of the first frame; the session's frames wait for it.
	Preamble []byte
	// ReadyTimeout bounds the wait for the server's ready frame; zero is
	// the wire client's default.
	ReadyTimeout time.Duration
	// Logger receives the server's log frames.
	Logger *slog.Logger
	// OnClose runs once, after the stream is closed: when the session
	// closes, and when Stream fails.
	OnClose func() error
}

// Stream starts a session with the server at the other end of r and w,
// which closer closes, and waits for its ready frame.
func Stream(ctx context.Context, r io.Reader, w io.Writer, closer io.Closer, cfg transport.SessionConfig, opts Options) (*wire.Client, error) {
	var sent chan error
	if opts.Preamble != nil {
		// The files go while the server's first frame is read: a server
		// that does not take them answers before it has read them all,
		// and says why. The session's own frames wait for them.
		sent = make(chan error, 1)
		to := w
		go func() {
			_, err := to.Write(opts.Preamble)
			sent <- err
			close(sent)
		}()
		w = &afterFiles{w: w, sent: sent}
	}
	conn := wire.NewConn(r, w, closer, wire.MaxFrameSize)
	s, err := wire.NewClient(ctx, conn, cfg, wire.ClientOptions{ReadyTimeout: opts.ReadyTimeout, Logger: opts.Logger, OnClose: opts.OnClose})
	if err != nil {
		if sent != nil {
			// NewClient closed the stream, which ends a write still
			// blocked on it (a stream that does not is not waited for).
			select {
			case werr := <-sent:
				if werr != nil {
					err = fmt.Errorf("%w (sending the session's files: %w)", err, werr)
				}
			case <-time.After(time.Second):
			}
		}
		return nil, err
	}
	return s, nil
}

// afterFiles holds the session's frames until the files preamble is sent.
type afterFiles struct {
	w    io.Writer
	sent chan error
	err  error
	once sync.Once
}

func (a *afterFiles) Write(p []byte) (int, error) {
	a.once.Do(func() { a.err = <-a.sent })
	if a.err != nil {
		return 0, fmt.Errorf("the session's files did not reach the server: %w", a.err)
	}
	return a.w.Write(p)
}
