package sandboxserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/adk-codemode/codemode/internal/protocol/wire"
	"github.com/adk-codemode/codemode/internal/protocol/wsproto"
	"github.com/adk-codemode/codemode/transport"
)

// ConnectOptions tune [Connect]. The zero value waits 60s for the server,
// logs its log frames to slog.Default() and sends no files.
type ConnectOptions struct {
	// SendFiles sends the session's files (transport.SessionConfig.Files,
	// the tools package among them) ahead of the first frame, as the files
	// preamble that the codemode-sandbox command reads with
	// --files-over-stdin; at most 100 MiB. Without it the server must
	// have the files in its Config.FilesDir already.
	SendFiles bool
	// ReadyTimeout bounds the wait for the server's ready frame. Zero
	// means 60s.
	ReadyTimeout time.Duration
	// Logger receives the server's log frames. Nil means slog.Default().
	Logger *slog.Logger
	// OnClose runs once, after stream is closed: when the session closes,
	// and also when Connect fails (so a backend cleans up in one place and
	// not again after a failed Connect). Stop the sandbox here and wait
	// for it.
	OnClose func() error
}

// Connect is the host's end of one session whose server, [Serve] or the
// codemode-sandbox command over its standard streams, is at the other end
// of stream: a pipe to a process, a socket, a serial console, any byte
// stream both ways. It waits for the server's ready frame and returns the
// session, which behaves as every backend's does (the transporttest suite
// holds it to that): blocks run in the sandbox, and each tool call from
// the code comes back over stream to cfg.Tools, on the host. Closing the
// session closes stream, then runs opts.OnClose.
//
// A backend of your own is a way to start a sandbox and reach its server,
// plus Connect. SendFiles and the server's --files-over-stdin go together:
// a server started with it waits for the files before its ready frame,
// and one started without it refuses a stream that opens with them. Input from the sandbox is hostile, and Connect treats it
// so: frames are bounded and decoded strictly, and a stream that breaks
// the protocol ends the session.
func Connect(ctx context.Context, stream io.ReadWriteCloser, cfg transport.SessionConfig, opts ConnectOptions) (transport.Session, error) {
	w := io.Writer(stream)
	var sent chan error
	if opts.SendFiles {
		// The files go while the server's first frame is read: a server
		// that does not take them answers before it has read them all,
		// and says why. The session's own frames wait for them.
		var preamble bytes.Buffer
		if err := wsproto.WriteFilesPreamble(&preamble, cfg.Files, wsproto.FileLimits{}); err != nil {
			_ = stream.Close()
			if opts.OnClose != nil {
				_ = opts.OnClose()
			}
			return nil, fmt.Errorf("sandboxserver: the session's files: %w", err)
		}
		sent = make(chan error, 1)
		go func() {
			_, err := stream.Write(preamble.Bytes())
			sent <- err
			close(sent)
		}()
		w = &afterFiles{w: stream, sent: sent}
	}
	conn := wire.NewConn(stream, w, stream, wire.MaxFrameSize)
	s, err := wire.NewClient(ctx, conn, cfg, wire.ClientOptions{ReadyTimeout: opts.ReadyTimeout, Logger: opts.Logger, OnClose: opts.OnClose})
	if err != nil {
		if !opts.SendFiles && errors.Is(err, wire.ErrNotReady) {
			err = fmt.Errorf("%w (a server started with --files-over-stdin reads the session's files first: set ConnectOptions.SendFiles)", err)
		}
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
		return nil, fmt.Errorf("sandboxserver: %w", err)
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
		return 0, fmt.Errorf("sandboxserver: the session's files did not reach the server: %w", a.err)
	}
	return a.w.Write(p)
}
