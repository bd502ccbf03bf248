package jail

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"

	"github.com/adk-codemode/codemode/egress"
	"github.com/adk-codemode/codemode/internal/both/egressrelay"
	"github.com/adk-codemode/codemode/internal/both/observe"
	"github.com/adk-codemode/codemode/internal/both/server"
	"github.com/adk-codemode/codemode/internal/host/launch"
	"github.com/adk-codemode/codemode/internal/protocol/wire"
	"github.com/adk-codemode/codemode/transport"

	"go.opentelemetry.io/otel/attribute"
)

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
	// Cold starts every session in a fresh jail of its own instead of
	// forking it from a template process. By default a session is forked
	// from a template (one per interpreter and Config, itself jailed,
	// started by the first Open and shared by every Backend with that
	// Config), which makes a session start cheaper than a bare Python
	// spawn. A forked session has its own namespaces, cgroups, mounts,
	// limits, seccomp filter and dropped privileges, as a cold one does;
	// docs/jail.md says what it shares with the template. Where the
	// template cannot be used the session starts cold and
	// [Session.Fallback] says why. Set Cold in a program that opens one
	// session and exits, where the template's own start is not repaid,
	// or to keep sessions from sharing the template's address-space
	// layout and hash seed.
	Cold bool
	// Egress, if set, lets code reach the hosts the policy allows through
	// the egress proxy (package egress), and nothing else: each session
	// gets a proxy of its own on the host, which code in the jail reaches
	// at 127.0.0.1:3128 on its own loopback (the jail still has no other
	// network), and the variables http_proxy, https_proxy, HTTP_PROXY and
	// HTTPS_PROXY name it. Nil means no egress: nothing listens on that
	// port and the variables are unset.
	Egress *egress.Policy

	forked bool // fork even where the tests make starting cold the default
}

var _ transport.Backend = (*Backend)(nil)

// DescribeNetwork says that code in the jail reaches no network, or only
// the hosts its egress policy allows, which it names
// ([transport.NetworkDescriber]).
func (b *Backend) DescribeNetwork() string {
	if b.Egress == nil {
		return transport.NoNetwork
	}
	return b.Egress.Describe()
}

// MetersEgress reports whether the backend's sessions have an egress
// proxy that meters each block ([transport.EgressMetering]): whether
// Egress is set.
func (b *Backend) MetersEgress() bool { return b.Egress != nil }

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
	transport.Session
	cmd      *Cmd
	forked   bool
	fallback error
	egress   *egress.Proxy // nil: no egress
}

var _ transport.EgressMeter = (*Session)(nil)

// MeterEgress starts counting the next block's bytes through the
// session's egress proxy and bounds them by limit (zero: no bound but the
// policy's MaxBytes) ([transport.EgressMeter]). Without egress it does
// nothing.
func (s *Session) MeterEgress(limit int64) {
	if s.egress != nil {
		s.egress.StartBlock(limit)
	}
}

// EgressUsage reports the bytes the block moved through the session's
// egress proxy since MeterEgress, and whether its bound refused or cut a
// connection ([transport.EgressMeter]).
func (s *Session) EgressUsage() (bytes int64, exceeded bool) {
	if s.egress == nil {
		return 0, false
	}
	return s.egress.BlockUsage()
}

// StartPath says how the session started ([transport.StartReporter]):
// "forked" from the template, "cold", or "fallback", cold because the fork
// failed, with why.
func (s *Session) StartPath() (path, reason string) {
	switch {
	case s.fallback != nil:
		return "fallback", s.fallback.Error()
	case s.forked:
		return "forked", ""
	}
	return "cold", ""
}

// Fallback is why a session that was to be forked from a template was
// started cold instead, or nil (also for a [Backend] with Cold set).
func (s *Session) Fallback() error { return s.fallback }

// Enforced reports the protections in force for this session's jail.
func (s *Session) Enforced() Enforcement { return s.cmd.Enforced() }

// Pid is the host pid of the session's pid 1 (its supervisor).
func (s *Session) Pid() int { return s.cmd.Pid() }

// Usage reports the limits the session's code ran into, once it is closed.
func (s *Session) Usage() Usage { return s.cmd.Usage() }

// Open starts a jail running the supervisor and waits until its Python
// worker is ready.
func (b *Backend) Open(ctx context.Context, scfg transport.SessionConfig) (transport.Session, error) {
	st, cfg, err := b.launcher(scfg.Files)
	if err != nil {
		return nil, err
	}
	client, err := launch.Launch(ctx, st, cfg, scfg)
	st.started()
	if err != nil {
		if st.cmd != nil {
			// The jail has ended: its usage says whether a limit stopped
			// the worker.
			err = limitHit(err, st.cmd.Usage(), st.config.withDefaults())
		}
		if le := (*LimitError)(nil); errors.As(err, &le) {
			return nil, err // it says jail: already
		}
		return nil, fmt.Errorf("jail: %w", err)
	}
	return &Session{Session: client, cmd: st.cmd, forked: st.zygote && st.fallback == nil, fallback: st.fallback, egress: st.proxy}, nil
}

// ServeSession serves one session of a sandbox server over stream, a
// frame stream to the session's host (docs/protocol.md), which it closes:
// the session's worker runs under a supervisor in a jail of its own,
// holding the backend's files and files, as a session of [Backend.Open]
// does, and the session's server runs in this process and talks to the
// worker directly. It returns when the session ends and the jail is gone.
// codemode-sandbox --listen --jail serves each WebSocket session so,
// giving a remote session the protections of a local one.
func (b *Backend) ServeSession(ctx context.Context, stream io.ReadWriteCloser, files map[string][]byte) error {
	conn := wire.NewConn(stream, stream, stream, wire.MaxFrameSize)
	defer conn.Close()
	st, cfg, err := b.launcher(files)
	if err != nil {
		err = fmt.Errorf("jail: prepare the session's worker: %w", err)
		_ = conn.Write(&wire.ErrorFrame{Message: err.Error()})
		return err
	}
	// The session is served until it ends, with no step between its
	// worker's start and its end to hook: the next spare is forked once
	// the jail is set up, while the worker starts.
	st.onStart = st.started
	err = launch.ServeLaunched(ctx, conn, st, cfg)
	if err != nil && st.cmd != nil {
		err = limitHit(err, st.cmd.Usage(), st.config.withDefaults())
	}
	return err
}

// Close stops the template process the backend's sessions are forked
// from, if one was started; a later Open starts a new one. It waits up to
// 10s for the sessions forked from it to end; they keep running until
// closed. A template left running ends with the host process.
func (b *Backend) Close() error {
	cfg, err := b.effectiveConfig(nil)
	if err != nil {
		return nil //nolint:nilerr // no interpreter: no template was started
	}
	return closeZygote(cfg)
}

// coldByDefault makes every Backend start its sessions cold, for tests
// that run the whole suite on that start path.
var coldByDefault bool

// launcher returns what starts a session's supervisor in a fresh jail
// whose files are the backend's and files, and the supervisor's config:
// what the launch recipe takes.
func (b *Backend) launcher(files map[string][]byte) (*starter, server.Config, error) {
	cfg, err := b.effectiveConfig(files)
	if err != nil {
		return nil, server.Config{}, err
	}
	python := cfg.Python
	if b.Egress != nil {
		if _, err := egress.New(*b.Egress); err != nil {
			return nil, server.Config{}, fmt.Errorf("jail: Backend.Egress: %w", err)
		}
	}
	d := cfg.withDefaults()
	scfg := server.Config{
		Python:             python,
		WorkerAddressSpace: max(d.AddressSpaceBytes, 0),
		// The supervisor shares the jail's task limit with the code:
		// keep some for its own threads.
		WorkerProcesses: int64(max(d.Processes-serverTasks, 8)),
		Workdir:         "/workspace",
		FilesDir:        "/codemode",
		// The interpreter is the host's: the package report leaves out the
		// host system's own packages (docs/catalog.md).
		Env:            []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/workspace", "LANG=C.UTF-8", "TMPDIR=/tmp", "CODEMODE_HIDE_SYSTEM_PACKAGES=1"},
		MaxOutputBytes: b.MaxOutputBytes,
	}
	if b.Egress != nil {
		scfg.EgressFD = egressFD
		scfg.EgressPort = server.DefaultEgressPort
		scfg.Env = append(scfg.Env, egressrelay.ProxyEnv(server.DefaultEgressPort)...)
	}
	return &starter{config: cfg, zygote: !b.Cold && (b.forked || !coldByDefault), egress: b.Egress}, scfg, nil
}

// effectiveConfig is the backend's Config with files merged in and the
// interpreter resolved.
func (b *Backend) effectiveConfig(files map[string][]byte) (Config, error) {
	cfg := b.Config
	if len(files) > 0 {
		cfg.Files = maps.Clone(cfg.Files)
		if cfg.Files == nil {
			cfg.Files = make(map[string][]byte, len(files))
		}
		maps.Copy(cfg.Files, files)
	}
	python, err := cfg.Interpreter()
	if err != nil {
		return cfg, err
	}
	cfg.Python = python
	return cfg, nil
}

// starter starts a supervisor in a jail, forked from a template or cold:
// a [launch.Starter] that starts one jail.
type starter struct {
	config   Config
	zygote   bool
	egress   *egress.Policy // nil: no egress
	proxy    *egress.Proxy  // the session's egress proxy, once started
	cmd      *Cmd           // the jail Start started
	fallback error          // why Start started the jail cold although it was to fork it
	template *zygote        // the template the session was forked from, or tried to be
	onStart  func()         // if set, called when Start returns
}

// started is called once the session's start is over, whether it
// succeeded or not: the template the session was taken from forks its
// next spare now, not while this start needs the CPU.
func (s *starter) started() {
	if s.template != nil {
		s.template.refill()
	}
}

var _ launch.Starter = (*starter)(nil)

// Start starts the jail. It outlives ctx, which only bounds the start.
func (s *starter) Start(ctx context.Context, c launch.Command) (launch.Process, error) {
	if s.onStart != nil {
		defer s.onStart()
	}
	var connector *os.File // the sandbox end of the egress connector
	if s.egress != nil {
		var err error
		if connector, s.proxy, err = startEgress(*s.egress); err != nil {
			return nil, err
		}
		// The jail holds its own copy once started; without one the
		// host side ends.
		defer connector.Close()
	}
	if s.zygote {
		cmd, z, err := forkSession(ctx, s.config, c, connector)
		if z != nil {
			s.template = z
		}
		if err == nil {
			s.cmd = cmd
			return jailProcess{cmd}, nil
		}
		s.fallback = err
	}
	cmd, err := Start(context.Background(), s.config, Spec{
		Args:       c.Args,
		inProcess:  server.SupervisorStage,
		Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"},
		Stderr:     c.Stderr,
		ExtraFiles: extraFiles(c.Socket, connector),
	})
	if err != nil {
		return nil, err
	}
	observe.Event(ctx, "codemode.sandbox.setup", attribute.String("codemode.sandbox.start_path", "cold"))
	s.cmd = cmd
	return jailProcess{cmd}, nil
}

// egressFD is the descriptor of the egress connector in the supervisor:
// the one after its socket to the host (3).
const egressFD = 4

// extraFiles are a cold jail's descriptors 3, 4...: the supervisor's
// socket, then the egress connector if there is one.
func extraFiles(socket, connector *os.File) []*os.File {
	if connector == nil {
		return []*os.File{socket}
	}
	return []*os.File{socket, connector}
}

// jailProcess is a jail as the launch recipe sees it.
type jailProcess struct{ cmd *Cmd }

// Wait waits for the jail to end. Its exit status says nothing once the
// session is over, but a cgroup left behind must not go unnoticed.
func (p jailProcess) Wait() error {
	_ = p.cmd.Wait()
	return p.cmd.cleanupErr()
}

func (p jailProcess) Kill() error { return p.cmd.Kill() }

// MemoryKills reads the jail's memory cgroup: how many processes its limit
// has killed, and the limit (launch.MemoryReporter). Without a memory
// cgroup (rootless without delegation) it cannot tell.
func (p jailProcess) MemoryKills() (kills int, limit int64, ok bool) { return p.cmd.memoryKills() }
