package engine

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/adk-codemode/codemode/render"
	"github.com/adk-codemode/codemode/transport"
)

// environments caches what each backend's sandbox reports when it becomes
// ready, by backend name, for the whole process: the Python version and the
// installed packages shown in the <code-mode> block.
var environments sync.Map // backend name → *envEntry

type envEntry struct {
	probing sync.Mutex // held by the one probe at a time
	mu      sync.Mutex
	env     transport.Environment
	known   bool
}

// ProbeTimeout bounds the probe of a backend.
const ProbeTimeout = 60 * time.Second

// SandboxEnvironment returns the environment of backend's sandboxes, probing the
// backend (open a session, read its ready report, close it) until a probe
// or a real session has reported one. A failed probe is logged and
// returned: a backend that cannot start a sandbox fails the model call,
// so that the developer sees why, rather than the model finding out from
// execute_code. The next model call probes again.
func SandboxEnvironment(ctx context.Context, b transport.Backend) (render.Environment, error) {
	v, _ := environments.LoadOrStore(b.Name(), &envEntry{})
	ent := v.(*envEntry)
	if env, ok := ent.get(); ok {
		return env, nil
	}
	ent.probing.Lock()
	defer ent.probing.Unlock()
	if env, ok := ent.get(); ok {
		return env, nil // another call's probe, or a session, reported it meanwhile
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ProbeTimeout)
	defer cancel()
	s, err := b.Open(ctx, transport.SessionConfig{})
	if err != nil {
		err = fmt.Errorf("codemode: %s: the sandbox did not start (Code Mode starts one before the first model call, for the Python version and packages the <code-mode> block shows): %w", b.Name(), err)
		slog.Error("codemode: the sandbox did not start; the model call fails", "backend", b.Name(), "err", err)
		return render.Environment{}, err
	}
	RecordEnvironment(b, s.Environment())
	_ = s.Close()
	ent.mu.Lock()
	ent.known = true // even if the sandbox reported nothing: it started
	ent.mu.Unlock()
	env, _ := ent.get()
	return env, nil
}

// get returns the environment, and whether one was reported.
func (ent *envEntry) get() (render.Environment, bool) {
	ent.mu.Lock()
	defer ent.mu.Unlock()
	return render.Environment{PythonVersion: ent.env.PythonVersion, Packages: ent.env.Packages}, ent.known
}

// RecordEnvironment keeps env as backend's environment unless it is empty.
func RecordEnvironment(b transport.Backend, env transport.Environment) {
	if env.PythonVersion == "" && len(env.Packages) == 0 {
		return
	}
	v, _ := environments.LoadOrStore(b.Name(), &envEntry{})
	ent := v.(*envEntry)
	ent.mu.Lock()
	ent.env, ent.known = env, true
	ent.mu.Unlock()
}
