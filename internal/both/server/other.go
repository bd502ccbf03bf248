//go:build !linux

package server

import (
	"context"
	"errors"
	"os"

	"github.com/adk-codemode/codemode/internal/protocol/wire"
	"github.com/adk-codemode/codemode/transport"
)

// ErrNotLinux is what the server answers on other systems.
var ErrNotLinux = errors.New("sandboxserver: the sandbox server runs on Linux only; on this system, use a sandbox on a Linux machine")

// Serve fails: the sandbox server needs Linux.
func Serve(ctx context.Context, conn *wire.Conn, cfg Config) error { return ErrNotLinux }

// Attach fails: local sessions need Linux.
func Attach(ctx context.Context, sup *os.File, cfg Config, scfg transport.SessionConfig, opts wire.ClientOptions, mem MemoryCounter) (*wire.Client, error) {
	return nil, ErrNotLinux
}

// ServeAttached fails: local sessions need Linux.
func ServeAttached(ctx context.Context, conn *wire.Conn, sup *os.File, cfg Config, mem MemoryCounter) error {
	return ErrNotLinux
}

// SocketPair fails: local sessions need Linux.
func SocketPair() (host, sandbox *os.File, err error) { return nil, nil, ErrNotLinux }
