//go:build linux

package server

import (
	"context"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/adk-codemode/codemode/internal/protocol/wire"
	"github.com/adk-codemode/codemode/internal/sandbox/supervisor"
)

// SocketPair returns the two ends of a stream socket for a supervisor's
// connection to the host: host for the host, sandbox to pass to the
// supervisor as its descriptor 3.
func SocketPair() (host, sandbox *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "codemode-host"), os.NewFile(uintptr(fds[1]), "codemode-sandbox"), nil
}

// ServeAttached serves a session over conn as [Serve] does, but with the
// worker under the supervisor at the other end of sup, as a local backend
// has it: the server runs in this process and talks to the worker
// directly. cfg must have its defaults set; mem is as [Attach]'s. It
// returns when the session ends; a cancelled ctx ends it too.
func ServeAttached(ctx context.Context, conn *wire.Conn, sup *os.File, cfg Config, mem MemoryCounter) error {
	c, err := supervisor.NewConn(sup, supervisor.SupervisorOps)
	if err != nil {
		return err
	}
	p := newRemoteProcs(c)
	p.maxFiles = cfg.MaxFiles
	p.mem = mem
	served := make(chan error, 1)
	go func() {
		err := serve(ctx, conn, &cfg, p, nil)
		p.close()
		served <- err
	}()
	select {
	case err = <-served:
	case <-ctx.Done():
		err = p.waitServed(served)
	}
	return err
}
