package sandboxserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/adk-codemode/codemode/internal/host/connect"
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
	var preamble []byte
	if opts.SendFiles {
		var buf bytes.Buffer
		if err := wsproto.WriteFilesPreamble(&buf, cfg.Files, wsproto.FileLimits{}); err != nil {
			_ = stream.Close()
			if opts.OnClose != nil {
				_ = opts.OnClose()
			}
			return nil, fmt.Errorf("sandboxserver: the session's files: %w", err)
		}
		preamble = buf.Bytes()
	}
	s, err := connect.Stream(ctx, stream, stream, stream, cfg, connect.Options{
		Preamble: preamble, ReadyTimeout: opts.ReadyTimeout, Logger: opts.Logger, OnClose: opts.OnClose,
	})
	if err != nil {
		if !opts.SendFiles && errors.Is(err, wire.ErrNotReady) {
			err = fmt.Errorf("%w (a server started with --files-over-stdin reads the session's files first: set ConnectOptions.SendFiles)", err)
		}
		return nil, fmt.Errorf("sandboxserver: %w", err)
	}
	return s, nil
}
