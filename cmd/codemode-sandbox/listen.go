package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/adk-codemode/codemode/backend/jail"
	"github.com/adk-codemode/codemode/egress"
	"github.com/adk-codemode/codemode/internal/both/server"
	"github.com/adk-codemode/codemode/internal/sandbox/wsserve"
)

// secretEnv names the environment variable that holds the server's secret.
const secretEnv = "CODEMODE_SANDBOX_TOKEN"

// listenFlags are the flags of the WebSocket server.
type listenFlags struct {
	addr             string
	insecureNoAuth   bool
	maxMessage       int64
	maxFiles         int64
	handshakeTimeout time.Duration
	idleTimeout      time.Duration
	resumeWindow     time.Duration
	tokenLifetime    time.Duration
	jail             bool

	egress               egress.List
	egressAllowAddresses egress.List
}

func (l *listenFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&l.addr, "listen", "", "serve one session over a WebSocket at `address` (host:port) instead of stdin/stdout; "+
		"$PORT, when set, replaces the port. The secret comes from $"+secretEnv)
	fs.BoolVar(&l.insecureNoAuth, "insecure-no-auth", false, "with --listen and no secret: let anyone who reaches the port run code")
	fs.Int64Var(&l.maxMessage, "max-message", 0, "with --listen: the largest message accepted, in `bytes` (default 64 MiB)")
	fs.Int64Var(&l.maxFiles, "max-files-bytes", 0, "with --listen or --files-over-stdin: the largest tools package accepted, in `bytes` (default 100 MiB)")
	fs.DurationVar(&l.handshakeTimeout, "handshake-timeout", 0, "with --listen: the longest a connection may take to send its request and tools package (default 30s)")
	fs.DurationVar(&l.idleTimeout, "idle-timeout", 0, "with --listen: give up a connection that receives nothing, not even a pong, for this `long` (default 60s)")
	fs.DurationVar(&l.resumeWindow, "resume-window", 0, "with --listen: keep the session this `long` after its connection is lost, for the host to resume it; negative: end it at once (default 30s)")
	fs.DurationVar(&l.tokenLifetime, "max-token-lifetime", 0, "with --listen: the furthest ahead a token's expiry may lie (default 5m)")
	fs.BoolVar(&l.jail, "jail", false, "with --listen: run the session's worker in the namespace jail, where the host or container allows user namespaces and the server runs as root; "+
		"the server then logs what the jail enforces. Without it, the container is the boundary")
	fs.Var(&l.egress, "egress", "with --listen --jail: let the code reach `host:port` (or *.suffix:port) through the server's egress proxy, "+
		"which resolves and connects from the server's side; repeat it or separate entries with commas. Without it the code has no network")
	fs.Var(&l.egressAllowAddresses, "egress-allow-address", "with --egress: an address or `prefix` (10.0.0.0/8) that allowed hosts may resolve to "+
		"though the proxy refuses it by default (private, loopback, link-local...); repeatable")
}

// serve runs the WebSocket server until its one session ends.
func (l *listenFlags) serve(ctx context.Context, cfg server.Config, stderr io.Writer) int {
	fail := func(err error) int {
		fmt.Fprintf(stderr, "codemode-sandbox: %v\n", err)
		return 1
	}
	addr := l.addr
	if port := os.Getenv("PORT"); port != "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return fail(fmt.Errorf("--listen %q: %w (write host:port, for example 0.0.0.0:8080)", addr, err))
		}
		addr = net.JoinHostPort(host, port)
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	policy, err := l.egressPolicy(addr, logger)
	if err != nil {
		return fail(err)
	}
	secret := os.Getenv(secretEnv)
	_ = os.Unsetenv(secretEnv) // nothing started from here needs it
	if err := hideProcess(); err != nil {
		return fail(fmt.Errorf("make the process non-dumpable, which keeps the secret from the code: %w", err))
	}

	if cfg.FilesDir == "" {
		dir, err := os.MkdirTemp("", "codemode-files-")
		if err != nil {
			return fail(fmt.Errorf("a directory for the tools package: %w (pass --files with a writable directory)", err))
		}
		defer removeAll(dir)
		cfg.FilesDir = dir
	}
	if p, err := server.ProbeInterpreter(ctx, cfg.Python); err == nil {
		p.Apply(&cfg)
	} else {
		fmt.Fprintf(stderr, "codemode-sandbox: probing %s: %v (the worker starts more slowly)\n", cfg.Python, err)
	}
	wcfg := wsserve.Config{
		Session:          cfg,
		Secret:           []byte(secret),
		InsecureNoAuth:   l.insecureNoAuth,
		MaxTokenLifetime: l.tokenLifetime,
		HandshakeTimeout: l.handshakeTimeout,
		Logger:           logger,
	}
	wcfg.Stream.MaxMessageBytes = l.maxMessage
	wcfg.Stream.IdleTimeout = l.idleTimeout
	wcfg.Stream.ResumeWindow = l.resumeWindow
	wcfg.Files.MaxBytes = l.maxFiles
	if l.jail {
		serveSession, err := jailed(ctx, cfg, policy, wcfg.Logger)
		if err != nil {
			return fail(err)
		}
		wcfg.ServeSession = serveSession
		if policy != nil {
			wcfg.Egress = policy.Allow
		}
		logEgress(logger, policy)
	} else if err := holdToPolicy(); err != nil {
		return fail(fmt.Errorf("load the sandbox's system-call policy (seccomp): %w", err))
	}
	if len(wcfg.Secret) == 0 && !wcfg.InsecureNoAuth {
		return fail(fmt.Errorf("no secret: set %s to a random secret (for example `openssl rand -hex 32`), "+
			"or pass --insecure-no-auth to let anyone who reaches the port run code", secretEnv))
	}
	if err := wcfg.Validate(); err != nil {
		return fail(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fail(err)
	}
	fmt.Fprintf(stderr, "codemode-sandbox: listening on %s\n", ln.Addr())
	if err := wsserve.Serve(ctx, ln, wcfg); err != nil {
		return fail(err)
	}
	return 0
}

// removeAll removes a directory tree whose directories may be read-only.
func removeAll(dir string) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	_ = os.RemoveAll(dir)
}

// jailed checks that this host can build the namespace jail, logs what a
// jail here enforces, and returns what serves each session with its
// worker in a fresh jail.
func jailed(ctx context.Context, cfg server.Config, policy *egress.Policy, logger *slog.Logger) (func(context.Context, io.ReadWriteCloser, map[string][]byte) error, error) {
	// Cold: the process serves one session, so a template would not be
	// repaid.
	b := &jail.Backend{Config: jail.Config{Python: cfg.Python}, MaxOutputBytes: cfg.MaxOutputBytes, Cold: true, Egress: policy}
	report, err := jail.Check(ctx, b.Config)
	var denied *fs.PathError // the jail's first process, refused
	if uid := os.Geteuid(); uid != 0 && errors.As(err, &denied) && denied.Op == "fork/exec" && errors.Is(denied.Err, syscall.EACCES) {
		return nil, fmt.Errorf("--jail: as user %d the server cannot start its jail (%w): the server makes itself non-dumpable, which keeps its secret from the code, "+
			"and a non-dumpable process that is not root cannot map the users of the jail it starts. Run the server as root in its container "+
			"(the image's user is 1000: run it with --user 0; the jail still runs the code as an unprivileged user), "+
			"or run without --jail, and the container is the boundary", uid, denied)
	}
	if err != nil {
		return nil, fmt.Errorf("--jail: the namespace jail cannot run here: %w (run without --jail, and the container is the boundary)", err)
	}
	logger.Info("each session's worker runs in a namespace jail", "enforced", report.Enforcement.String())
	return b.ServeSession, nil
}
