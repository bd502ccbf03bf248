//go:build !linux

package launch

import (
	"context"

	"github.com/adk-codemode/codemode/internal/both/server"
	"github.com/adk-codemode/codemode/internal/protocol/wire"
	"github.com/adk-codemode/codemode/transport"
)

// Launch fails: local sessions need Linux.
func Launch(ctx context.Context, starter Starter, cfg server.Config, scfg transport.SessionConfig) (*wire.Client, error) {
	return nil, server.ErrNotLinux
}

// ServeLaunched fails: local sessions need Linux.
func ServeLaunched(ctx context.Context, conn *wire.Conn, starter Starter, cfg server.Config) error {
	return server.ErrNotLinux
}
