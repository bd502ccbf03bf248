//go:build !linux

package sandboxserver

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/adk-codemode/codemode/internal/wire"
	"github.com/adk-codemode/codemode/transport"
)

// errNotLinux is what the server answers on other systems.
var errNotLinux = errors.New("sandboxserver: the sandbox server runs on Linux only; on this system, use a sandbox on a Linux machine")

// Serve fails: the sandbox server needs Linux.
func Serve(ctx context.Context, conn *wire.Conn, cfg Config) error { return errNotLinux }

// RunSupervisor fails: the supervisor needs Linux.
func RunSupervisor(argv []string) int {
	fmt.Fprintln(os.Stderr, errNotLinux)
	return 1
}

// Launch fails: local sessions need Linux.
func Launch(ctx context.Context, starter Starter, cfg Config, scfg transport.SessionConfig) (*wire.Client, error) {
	return nil, errNotLinux
}

// ServeLaunched fails: local sessions need Linux.
func ServeLaunched(ctx context.Context, conn *wire.Conn, starter Starter, cfg Config) error {
	return errNotLinux
}
