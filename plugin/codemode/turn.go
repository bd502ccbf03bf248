package codemode

import (
	"context"
	"sync/atomic"

	"github.com/adk-codemode/codemode/internal/both/observe"
	eng "github.com/adk-codemode/codemode/internal/host/engine"

	"github.com/adk-codemode/codemode/transport"
)

// turn is the state of one invocation: its tool surface and its sandbox
// (the engine's Turn).
type turn = eng.Turn[*surface, *execCall]

// session returns the turn's sandbox, opening it if needed; fresh says it
// was opened now.
func (e *engine) session(ctx context.Context, t *turn) (transport.Session, bool, error) {
	return t.OpenSession(ctx, e.isClosed, func(ctx context.Context, surf *surface) (transport.Session, error) {
		sctx, start := e.obs.StartSandbox(ctx, e.cfg.Backend.Name())
		s, err := e.cfg.Backend.Open(sctx, transport.SessionConfig{Files: surf.Files, Tools: handler{e: e, t: t}})
		if err != nil {
			start.End("", "", err)
			return nil, err
		}
		var path, reason string
		if r, ok := s.(transport.StartReporter); ok {
			path, reason = r.StartPath()
		}
		start.End(path, reason, nil)
		s = &countedSession{Session: s, obs: e.obs, backend: e.cfg.Backend.Name()}
		eng.RecordEnvironment(e.cfg.Backend, s.Environment())
		return s, nil
	})
}

// countedSession is a sandbox counted open (codemode.sandboxes.open) until
// its first Close.
type countedSession struct {
	transport.Session
	obs     *observe.Observer
	backend string
	closed  atomic.Bool
}

// Unwrap is the backend's session ([transport.EgressMeterOf]).
func (s *countedSession) Unwrap() transport.Session { return s.Session }

func (s *countedSession) Close() error {
	if !s.closed.Swap(true) {
		s.obs.SandboxClosed(s.backend)
	}
	return s.Session.Close()
}
