//go:build linux

package sandboxserver

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/adk-codemode/codemode/internal/tailbuf"
	"github.com/adk-codemode/codemode/transport"
	"github.com/adk-codemode/codemode/transport/wire"
)

// stopWait is how long a closing session waits for its supervisor to exit
// by itself before it is killed.
const stopWait = 3 * time.Second

// Launch starts a local session: it probes cfg.Python, starts the
// supervisor with starter, and runs the session in this process, attached
// to the worker that the supervisor starts ([attach]). cfg is the
// supervisor's config as the sandbox sees it (paths inside the sandbox);
// scfg is the session's.
//
// The returned client owns the process: closing it waits up to 3s for the
// supervisor to exit, kills it if it has not, and returns the error of
// [Process.Wait]. If the session does not start, the error ends with the
// last lines the supervisor wrote to its standard error.
func Launch(ctx context.Context, starter Starter, cfg Config, scfg transport.SessionConfig) (*wire.Client, error) {
	probe, err := ProbeInterpreter(ctx, cfg.Python)
	if err != nil {
		return nil, err
	}
	probe.Apply(&cfg)
	args, err := supervisorArgs(cfg)
	if err != nil {
		return nil, err
	}
	hostEnd, sandboxEnd, err := socketPair()
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
	stop := func() error {
		select {
		case err := <-exited:
			return err
		case <-time.After(stopWait):
			_ = proc.Kill() // it may have exited meanwhile
			return <-exited
		}
	}
	client, err := attach(ctx, hostEnd, cfg, scfg, wire.ClientOptions{OnClose: stop})
	if err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			err = fmt.Errorf("%w\n%s", err, msg)
		}
		return nil, err
	}
	return client, nil
}
