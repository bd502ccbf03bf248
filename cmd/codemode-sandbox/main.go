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

	"github.com/adk-codemode/codemode/sandboxserver"
	"github.com/adk-codemode/codemode/transport/wire"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout io.Writer, stderr io.Writer) int {
	fs := flag.NewFlagSet("codemode-sandbox", flag.ContinueOnError)
	fs.SetOutput(stderr)
	python := fs.String("python", "python3", "the interpreter `path`")
	workdir := fs.String("workdir", "/workspace", "the code's working `directory`; its new and changed files are reported")
	files := fs.String("files", "", "a `directory` to put first on sys.path (the tools package)")
	maxOutput := fs.Int64("max-output", 0, "`bytes` kept of each output stream per block (default and most: 4 MiB)")
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
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	cfg := sandboxserver.Config{
		Python:         *python,
		Workdir:        *workdir,
		FilesDir:       *files,
		Env:            []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + *workdir, "LANG=C.UTF-8", "TMPDIR=/tmp"},
		MaxOutputBytes: *maxOutput,
		StartTimeout:   60 * time.Second,
	}
	if l.addr != "" {
		return l.serve(ctx, cfg, stderr)
	}
	conn := wire.NewConn(stdin, stdout, nil, wire.MaxFrameSize)
	if err := sandboxserver.Serve(ctx, conn, cfg); err != nil {
		fmt.Fprintf(stderr, "codemode-sandbox: %v\n", err)
		return 1
	}
	return 0
}
