package jail

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/adk-codemode/codemode/internal/tailbuf"

	"github.com/adk-codemode/codemode/sandboxserver"
	"github.com/adk-codemode/codemode/transport"
)

// inProcessStages are the stages a jail's init can run in its own process
// (see Spec.inProcess).
var inProcessStages = map[string]func(argv []string) int{
	sandboxserver.SupervisorStage: sandboxserver.RunSupervisor,
}

// serverTasks is how many of the jail's tasks are kept for the
// supervisor's threads: the Python worker's RLIMIT_NPROC is the jail's
// Processes less this.
const serverTasks = 16

// Backend opens sessions whose Python worker runs in a fresh jail, under a
// supervisor that is the jail's init; the session itself runs in the
// host's process and talks to the worker directly. It is the default
// backend of codemode on Linux.
// The zero value uses the defaults of [Config].
type Backend struct {
	// Config sets the jail's limits and interpreter. Its Files are merged
	// with the session's.
	Config Config
	// MaxOutputBytes bounds each output stream per block; zero means the
	// sandbox server's default.
	MaxOutputBytes int64
}

var _ transport.Backend = (*Backend)(nil)

// Name identifies the backend and its interpreter, for example
// "jail:/usr/bin/python3".
func (b *Backend) Name() string {
	py, err := b.Config.Interpreter()
	if err != nil {
		py = b.Config.Python
	}
	return "jail:" + py
}

// Session is a jailed session. Besides [transport.Session] it reports what
// the jail enforces.
type Session struct {
	*transport.Client
	cmd *Cmd
}

// Enforced reports the protections in force for this session's jail.
func (s *Session) Enforced() Enforcement { return s.cmd.Enforced() }

// Usage reports the limits the session's code ran into, once it is closed.
func (s *Session) Usage() Usage { return s.cmd.Usage() }

// Open starts a jail running the supervisor and waits until its Python
// worker is ready.
func (b *Backend) Open(ctx context.Context, scfg transport.SessionConfig) (transport.Session, error) {
	cfg := b.Config
	if len(scfg.Files) > 0 {
		files := make(map[string][]byte, len(cfg.Files)+len(scfg.Files))
		for k, v := range cfg.Files {
			files[k] = v
		}
		for k, v := range scfg.Files {
			files[k] = v
		}
		cfg.Files = files
	}
	python, err := cfg.Interpreter()
	if err != nil {
		return nil, err
	}
	cfg.Python = python
	probe, err := sandboxserver.ProbeInterpreter(ctx, python)
	if err != nil {
		return nil, err
	}
	d := cfg.withDefaults()
	var as int64
	if d.AddressSpaceBytes > 0 {
		as = d.AddressSpaceBytes
	}
	// The server shares the jail's task limit with the code: keep some
	// for its own threads.
	nproc := int64(max(d.Processes-serverTasks, 8))
	server := sandboxserver.Config{
		Python:             python,
		WorkerAddressSpace: as,
		WorkerProcesses:    nproc,
		Workdir:            "/workspace",
		FilesDir:           "/codemode",
		Env:                []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/workspace", "LANG=C.UTF-8", "TMPDIR=/tmp"},
		MaxOutputBytes:     b.MaxOutputBytes,
	}
	probe.Apply(&server)
	args, err := sandboxserver.SupervisorArgs(server)
	if err != nil {
		return nil, err
	}
	hostEnd, sandboxEnd, err := sandboxserver.SocketPair()
	if err != nil {
		return nil, err
	}
	stderr := &tailbuf.Buffer{Max: 16 << 10}
	// The jail outlives ctx, which only bounds the start.
	cmd, err := Start(context.Background(), cfg, Spec{
		Args:       args,
		Self:       true,
		inProcess:  sandboxserver.SupervisorStage,
		Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"},
		Stderr:     stderr,
		ExtraFiles: []*os.File{sandboxEnd},
	})
	sandboxEnd.Close()
	if err != nil {
		hostEnd.Close()
		return nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() error {
		select {
		case <-exited:
		case <-time.After(3 * time.Second):
			_ = cmd.Kill()
			<-exited
		}
		// The jail's exit status says nothing once the session is over,
		// but a cgroup left behind must not go unnoticed.
		if c, ok := any(cmd).(interface{ cleanupErr() error }); ok {
			return c.cleanupErr()
		}
		return nil
	}
	// The session runs in this process; the jail's init supervises the
	// worker and passes its pipes over, so blocks and tool calls go
	// between this process and the worker directly.
	client, err := sandboxserver.Attach(ctx, hostEnd, server, scfg, transport.ClientOptions{OnClose: stop})
	if err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			err = fmt.Errorf("%w\n%s", err, msg)
		}
		return nil, fmt.Errorf("jail: %w", err)
	}
	return &Session{Client: client, cmd: cmd}, nil
}
