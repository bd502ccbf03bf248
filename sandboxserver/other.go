//go:build !linux

package sandboxserver

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/adk-codemode/codemode/transport"
)

// errNotLinux is what the server answers on other systems.
var errNotLinux = errors.New("sandboxserver: the sandbox server runs on Linux only; on this system, use a sandbox on a Linux machine")

// Serve fails: the sandbox server needs Linux.
func Serve(ctx context.Context, conn *transport.Conn, cfg Config) error { return errNotLinux }

// Supervise fails: the supervisor needs Linux.
func Supervise(ctx context.Context, sock *os.File, cfg Config) error { return errNotLinux }

// RunSupervisor fails: the supervisor needs Linux.
func RunSupervisor(argv []string) int {
	fmt.Fprintln(os.Stderr, errNotLinux)
	return 1
}

// Attach fails: the supervisor needs Linux.
func Attach(ctx context.Context, sup *os.File, cfg Config, scfg transport.SessionConfig, opts transport.ClientOptions) (*transport.Client, error) {
	return nil, errNotLinux
}

// SocketPair fails: the sandbox server needs Linux.
func SocketPair() (host, sandbox *os.File, err error) { return nil, nil, errNotLinux }
