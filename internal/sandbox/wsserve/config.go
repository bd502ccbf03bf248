package wsserve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/adk-codemode/codemode/internal/both/server"
	"github.com/adk-codemode/codemode/internal/protocol/wsproto"
)

// Config configures [Serve].
type Config struct {
	// Session is the session's server config. Session.FilesDir is
	// required: an existing directory, writable by this process, where
	// the session's files (the tools package) are written.
	Session server.Config
	// Secret verifies the clients' tokens (see package internal/protocol/wsproto);
	// at least wsproto.MinSecretBytes long.
	Secret []byte
	// InsecureNoAuth lets anyone who reaches the port run code. It must
	// be set for a server without a Secret, and not with one.
	InsecureNoAuth bool
	// MaxTokenLifetime is the furthest ahead a token's expiry may lie.
	// Zero means 5 minutes.
	MaxTokenLifetime time.Duration
	// ClockSkew is the clock difference allowed with clients. Zero
	// means 30s.
	ClockSkew time.Duration
	// Stream bounds the connection's messages and idle time, and sets how
	// long a lost connection may take to be resumed (ResumeWindow, 30s).
	Stream wsproto.Options
	// Files bounds the files message (default 100 MiB, 10,000 files).
	Files wsproto.FileLimits
	// HandshakeTimeout bounds the time from a request's first byte to the
	// end of the files message. Zero means 30s.
	HandshakeTimeout time.Duration
	// Logger receives what the server does. Nil means slog.Default().
	Logger *slog.Logger
	// ServeSession, if set, serves each session in place of the server
	// in this process: given the frame stream, which it must close, and
	// the session's files, it runs the session's worker in a sandbox of
	// its own (backend/jail's Backend.ServeSession does, in a fresh
	// namespace jail). The files then go to it rather than to
	// Session.FilesDir. Nil runs the worker as a child of this process.
	ServeSession func(ctx context.Context, stream io.ReadWriteCloser, files map[string][]byte) error
	// Egress is the egress allowlist the session's code is held to (set
	// by ServeSession's sandbox, which enforces it), reported to the
	// client in the wsproto.EgressHeader of the session's first
	// connection, so that the host can check it against the list it
	// expects. Empty sends no header: the code has no egress.
	Egress []string
}

// Validate reports what is wrong with c, if anything. [Serve] calls it;
// a program may call it before it listens.
func (c *Config) Validate() error {
	switch {
	case len(c.Secret) == 0 && !c.InsecureNoAuth:
		return errors.New("wsserve: no secret: set Config.Secret to a random secret, " +
			"or Config.InsecureNoAuth to let anyone who reaches the port run code")
	case len(c.Secret) > 0 && c.InsecureNoAuth:
		return errors.New("wsserve: a secret is set and InsecureNoAuth too: choose one")
	case len(c.Secret) > 0 && len(c.Secret) < wsproto.MinSecretBytes:
		return fmt.Errorf("wsserve: the secret is %d bytes; use at least %d random bytes", len(c.Secret), wsproto.MinSecretBytes)
	case c.Session.FilesDir == "":
		return errors.New("wsserve: Session.FilesDir is required: the directory the tools package is written to")
	case len(c.Egress) > 0 && c.ServeSession == nil:
		return errors.New("wsserve: Egress is set without ServeSession: only a sandbox of ServeSession's enforces an egress allowlist")
	}
	if _, err := wsproto.FormatEgress(c.Egress); err != nil {
		return fmt.Errorf("wsserve: Egress: %w", err)
	}
	if st, err := os.Stat(c.Session.FilesDir); err != nil {
		return fmt.Errorf("wsserve: the files directory: %w", err)
	} else if !st.IsDir() {
		return fmt.Errorf("wsserve: the files directory %s is not a directory", c.Session.FilesDir)
	}
	return nil
}

func (c *Config) setDefaults() {
	if c.HandshakeTimeout <= 0 {
		c.HandshakeTimeout = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Stream.Logger == nil {
		c.Stream.Logger = c.Logger
	}
}
