package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/adk-codemode/codemode/internal/both/egressrelay"
	"github.com/adk-codemode/codemode/internal/both/server"
	"github.com/adk-codemode/codemode/internal/protocol/wire"
	"github.com/adk-codemode/codemode/internal/protocol/wsproto"
	"github.com/adk-codemode/codemode/internal/sandbox/wsserve"
)

func main() {
	if err := noCoreDumps(); err != nil {
		fmt.Fprintf(os.Stderr, "codemode-sandbox: set RLIMIT_CORE to 0, so that no process of the session writes a core file: %v\n", err)
		os.Exit(1)
	}
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout io.Writer, stderr io.Writer) int {
	fs := flag.NewFlagSet("codemode-sandbox", flag.ContinueOnError)
	fs.SetOutput(stderr)
	python := fs.String("python", "python3", "the interpreter: a `path`, or a name looked up on PATH")
	workdir := fs.String("workdir", "/workspace", "the code's working `directory`, which must exist and be writable; its new and changed files are reported "+
		"(not used with --listen --jail, whose sessions have their own)")
	files := fs.String("files", "", "a `directory` to put first on sys.path (the tools package)")
	maxOutput := fs.Int64("max-output", 0, "`bytes` kept of each output stream per block (default and most: 4 MiB)")
	filesOverStdin := fs.Bool("files-over-stdin", false, "on stdin/stdout: read the session's files (the tools package) from the preamble that opens stdin, "+
		"and write them to --files before the session starts (the Docker backend sends it)")
	egressSocket := fs.String("egress-socket", "", "on stdin/stdout: relay the code's connections to 127.0.0.1:3128, which its proxy variables name, "+
		"to the host's egress proxy at this Unix socket `path` (the Docker backend mounts it with docker.Config.Egress)")
	var l listenFlags
	l.register(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: codemode-sandbox [flags]\n\nServes one sandbox session on stdin/stdout (see docs/protocol.md),\nor with --listen over a WebSocket (see docs/deployment.md).\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	// A flag that names something unusable is reported now, by name,
	// rather than as the worker's failure to start.
	refuse := func(err error) int {
		fmt.Fprintf(stderr, "codemode-sandbox: %v\n", err)
		if l.addr == "" { // the host reads frames on stdout: tell it why too
			_ = wire.NewConn(stdin, stdout, nil, wire.MaxFrameSize).Write(&wire.ErrorFrame{Message: "codemode-sandbox: " + err.Error()})
		}
		return 2
	}
	interpreter, err := findPython(*python)
	if err != nil {
		return refuse(err)
	}
	if l.addr == "" || !l.jail { // a jailed session has a workspace of its own
		if err := checkWorkdir(*workdir); err != nil {
			return refuse(err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	cfg := server.Config{
		Python:         interpreter,
		Workdir:        *workdir,
		FilesDir:       *files,
		Env:            []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + *workdir, "LANG=C.UTF-8", "TMPDIR=/tmp"},
		MaxOutputBytes: *maxOutput,
		StartTimeout:   60 * time.Second,
	}
	if *egressSocket != "" {
		if l.addr != "" || l.jail {
			fmt.Fprintln(stderr, "codemode-sandbox: --egress-socket is for stdin/stdout without --jail, where the Docker backend mounts its proxy's socket "+
				"and the container is the boundary; a server with --listen --jail runs its own proxy (--egress)")
			return 2
		}
		cfg.EgressSocket = *egressSocket
		cfg.Env = append(cfg.Env, egressrelay.ProxyEnv(server.DefaultEgressPort)...)
	}
	if l.addr != "" {
		if *filesOverStdin {
			fmt.Fprintln(stderr, "codemode-sandbox: --files-over-stdin is for stdin/stdout; with --listen the files come over the WebSocket")
			return 2
		}
		return l.serve(ctx, cfg, stderr)
	}
	if len(l.egress) > 0 || len(l.egressAllowAddresses) > 0 {
		fmt.Fprintln(stderr, "codemode-sandbox: --egress is for --listen --jail, where the server's own proxy enforces it")
		return 2
	}
	if *filesOverStdin {
		if err := receiveFiles(stdin, cfg.FilesDir, l.maxFiles); err != nil {
			refuse(err)
			return 1
		}
	}
	if err := holdToPolicy(); err != nil {
		fmt.Fprintf(stderr, "codemode-sandbox: load the sandbox's system-call policy (seccomp): %v\n", err)
		return 1
	}
	startSpareThreads()
	conn := wire.NewConn(stdin, stdout, nil, wire.MaxFrameSize)
	if err := server.Serve(ctx, conn, cfg); err != nil {
		fmt.Fprintf(stderr, "codemode-sandbox: %v\n", err)
		return 1
	}
	return 0
}

// receiveFiles reads the files preamble from stdin and writes the files
// beneath dir, as the WebSocket server does with its files message.
func receiveFiles(stdin io.Reader, dir string, maxBytes int64) error {
	if dir == "" {
		return errors.New("--files-over-stdin needs --files: a writable directory for the tools package")
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		if err == nil {
			err = errors.New("not a directory")
		}
		return fmt.Errorf("--files %s: %w: create it, an empty directory this server can write to, before it starts", dir, err)
	}
	files, err := wsproto.ReadFilesPreamble(stdin, wsproto.FileLimits{MaxBytes: maxBytes})
	if err != nil {
		return err
	}
	if err := wsserve.WriteFiles(dir, files); err != nil {
		return err
	}
	// Nothing may be added beside the tools package either. The code runs
	// as this process's user, so this keeps mistakes out, not the code:
	// the tools package is a stub, and every call it makes is checked on
	// the host.
	if err := os.Chmod(dir, 0o555); err != nil {
		return fmt.Errorf("make the files directory read-only: %w", err)
	}
	return nil
}
