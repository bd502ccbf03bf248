//go:build linux

package launch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/adk-codemode/codemode/internal/both/server"
	"github.com/adk-codemode/codemode/internal/both/tailbuf"
	"github.com/adk-codemode/codemode/internal/protocol/wire"
	"github.com/adk-codemode/codemode/internal/sandbox/supervisor"
	"github.com/adk-codemode/codemode/transport"
)

// stopWait is how long a closing session waits for its supervisor to exit
// by itself before it is killed.
const stopWait = 3 * time.Second

// Launch starts a local session: it probes cfg.Python, starts the
// supervisor with starter, and runs the session in this process, attached
// to the worker that the supervisor starts (server.Attach). cfg is the
// supervisor's config as the sandbox sees it (paths inside the sandbox);
// scfg is the session's.
//
// The returned client owns the process: closing it waits up to 3s for the
// supervisor to exit, kills it if it has not, and returns the error of
// [Process.Wait]. If the session does not start, the error ends with the
// last lines the supervisor wrote to its standard error.
func Launch(ctx context.Context, starter Starter, cfg server.Config, scfg transport.SessionConfig) (*wire.Client, error) {
	l, err := launchSupervisor(ctx, starter, &cfg)
	if err != nil {
		return nil, err
	}
	client, err := server.Attach(ctx, l.host, cfg, scfg, wire.ClientOptions{OnClose: l.stop}, l.mem)
	if err != nil {
		return nil, l.explain(err)
	}
	return client, nil
}

// ServeLaunched serves a session over conn as server.Serve does, but with
// the worker under a supervisor that starter starts (in a jail, for
// example), as a local backend has it: the server runs in this process
// and talks to the worker directly. It returns when the session ends, once
// the supervisor's process is gone. A sandbox server uses it to give a
// remote session the protections of a local one.
func ServeLaunched(ctx context.Context, conn *wire.Conn, starter Starter, cfg server.Config) error {
	if err := cfg.SetDefaults(); err != nil {
		return err
	}
	l, err := launchSupervisor(ctx, starter, &cfg)
	if err != nil {
		_ = conn.Write(&wire.ErrorFrame{Message: err.Error()})
		return err
	}
	err = server.ServeAttached(ctx, conn, l.host, cfg, l.mem)
	return errors.Join(l.explain(err), l.stop())
}

// launched is a supervisor's process as the launch recipe started it.
type launched struct {
	host   *os.File // the host's end of the supervisor's socket
	stderr *tailbuf.Buffer
	stop   func() error // waits for the process (killing it after stopWait) and releases it
	mem    server.MemoryCounter
}

// launchSupervisor probes cfg.Python, applies the probe to cfg, and starts
// the supervisor's process with starter.
func launchSupervisor(ctx context.Context, starter Starter, cfg *server.Config) (*launched, error) {
	probe, err := server.ProbeInterpreter(ctx, cfg.Python)
	if err != nil {
		return nil, err
	}
	probe.Apply(cfg)
	args, err := supervisor.Args(*cfg)
	if err != nil {
		return nil, err
	}
	hostEnd, sandboxEnd, err := server.SocketPair()
	if err != nil {
		return nil, err
	}
	stderr := &tailbuf.Buffer{Max: 16 << 10}
	proc, err := starter.Start(ctx, Command{Args: args, Socket: sandboxEnd, Stderr: stderr})
	sandboxEnd.Close()
	if err != nil {
		hostEnd.Close()
		return nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- proc.Wait() }()
	var once sync.Once
	var stopErr error
	stop := func() error {
		once.Do(func() {
			select {
			case stopErr = <-exited:
			case <-time.After(stopWait):
				_ = proc.Kill() // it may have exited meanwhile
				stopErr = <-exited
			}
		})
		return stopErr
	}
	l := &launched{host: hostEnd, stderr: stderr, stop: stop}
	if m, ok := proc.(MemoryReporter); ok {
		l.mem = m.MemoryKills
	}
	return l, nil
}

// explain adds to a failed session's error the last lines the supervisor
// wrote to its standard error.
func (l *launched) explain(err error) error {
	if err == nil {
		return nil
	}
	if msg := strings.TrimSpace(l.stderr.String()); msg != "" {
		return fmt.Errorf("%w\n%s", err, msg)
	}
	return err
}
