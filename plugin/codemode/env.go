package codemode

import (
	"context"
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
	once sync.Once
	mu   sync.Mutex
	env  transport.Environment
}

// probeTimeout bounds the one probe per backend.
const probeTimeout = 60 * time.Second

// environment returns the environment of backend's sandboxes, probing the
// backend once per process (open a session, read its ready report, close
// it). A failed probe leaves the environment unknown until a real session
// reports one.
func environment(ctx context.Context, b transport.Backend) render.Environment {
	v, _ := environments.LoadOrStore(b.Name(), &envEntry{})
	ent := v.(*envEntry)
	ent.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), probeTimeout)
		defer cancel()
		s, err := b.Open(ctx, transport.SessionConfig{})
		if err != nil {
			return
		}
		recordEnvironment(b, s.Environment())
		_ = s.Close()
	})
	ent.mu.Lock()
	defer ent.mu.Unlock()
	return render.Environment{PythonVersion: ent.env.PythonVersion, Packages: ent.env.Packages}
}

// recordEnvironment keeps env as backend's environment unless it is empty.
func recordEnvironment(b transport.Backend, env transport.Environment) {
	if env.PythonVersion == "" && len(env.Packages) == 0 {
		return
	}
	v, _ := environments.LoadOrStore(b.Name(), &envEntry{})
	ent := v.(*envEntry)
	ent.mu.Lock()
	ent.env = env
	ent.mu.Unlock()
}
