package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/adk-codemode/codemode/backend/docker"
	"github.com/adk-codemode/codemode/transport"
)

const execUsage = `Usage: codemode exec [flags] (-c CODE)... | FILE

Runs Python in one fresh sandbox session. Each -c block (or the file; "-"
reads standard input) runs in order in the same session, so variables,
imports and files carry from one block to the next.

Output: each block's stdout and stderr are written to stdout and stderr
after it ends. With --json, one JSON object per block is printed instead:
{"stdout":…,"stderr":…,"exit_code":…,"duration_ms":…,"output_files":[…]}

Exit status: 0 when every block ran, whatever exit code the code itself
had; 1 when the sandbox failed (it could not start, or the connection to
it was lost) or --out could not take a block's files (the block's output
is printed first); 2 for a usage error.

Flags:
`

type codeFlags []string

func (c *codeFlags) String() string     { return strings.Join(*c, "\n") }
func (c *codeFlags) Set(v string) error { *c = append(*c, v); return nil }

// blockJSON is one line of --json output.
type blockJSON struct {
	Stdout      string   `json:"stdout"`
	Stderr      string   `json:"stderr"`
	ExitCode    int      `json:"exit_code"`
	DurationMS  int64    `json:"duration_ms"`
	OutputFiles []string `json:"output_files"`
}

func runExec(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("exec", execUsage, stderr)
	var codes codeFlags
	fs.Var(&codes, "c", "Python `code` to run as one block (repeatable)")
	backend := fs.String("backend", defaultBackend, "sandbox `name`: "+backendNames())
	url := fs.String("url", "", "with --backend remote: the sandbox server's `address` (its secret comes from $"+remoteTokenEnv+")")
	image := fs.String("image", "", "with --backend docker: the sandbox `image` (default "+docker.DefaultImage+", which `make image` builds); the engine is found as the docker CLI finds it ($DOCKER_HOST, $DOCKER_CONTEXT, the current context)")
	python := fs.String("python", "", "interpreter `path` (default: /usr/bin/python3, else python3 on PATH)")
	var eg egressFlags
	eg.register(fs)
	timeout := fs.Duration("timeout", 60*time.Second, "time limit per block; 0 means none")
	grace := fs.Duration("grace", time.Second, "how long an interrupted block may take to stop before the worker is reset")
	asJSON := fs.Bool("json", false, "print one JSON object per block")
	out := fs.String("out", "", "copy the files each block creates or changes in the workspace to `dir`")
	if code, ok := parseFlags(fs, args, -1); !ok {
		return code
	}
	blocks := []string(codes)
	switch {
	case len(blocks) > 0 && fs.NArg() > 0:
		fmt.Fprintln(stderr, "codemode exec: give either -c blocks or one FILE, not both")
		return 2
	case len(blocks) == 0 && fs.NArg() != 1:
		fmt.Fprintln(stderr, "codemode exec: give -c CODE (repeatable) or one FILE")
		fs.Usage()
		return 2
	case len(blocks) == 0:
		code, err := readCode(fs.Arg(0), stdin)
		if err != nil {
			fmt.Fprintf(stderr, "codemode exec: %v\n", err)
			return 2
		}
		blocks = []string{code}
	}
	if *grace <= 0 {
		fmt.Fprintln(stderr, "codemode exec: --grace must be positive")
		return 2
	}
	if *timeout < 0 {
		fmt.Fprintln(stderr, "codemode exec: --timeout must not be negative")
		return 2
	}
	b, err := newBackend(*backend, *python, *url, *image, &eg)
	if err != nil {
		fmt.Fprintf(stderr, "codemode exec: %v\n", err)
		return 2
	}
	if c, ok := b.(io.Closer); ok {
		defer func() { _ = c.Close() }()
	}
	var outRoot *os.Root
	if *out != "" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			fmt.Fprintf(stderr, "codemode exec: --out: %v\n", err)
			return 2
		}
		if outRoot, err = os.OpenRoot(*out); err != nil {
			fmt.Fprintf(stderr, "codemode exec: --out: %v\n", err)
			return 2
		}
		defer func() { _ = outRoot.Close() }()
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s, err := b.Open(ctx, transport.SessionConfig{})
	if err != nil {
		fmt.Fprintf(stderr, "codemode exec: the %s sandbox could not start: %v\n", *backend, err)
		return 1
	}
	defer s.Close()
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	for i, code := range blocks {
		res, err := s.Exec(ctx, transport.Block{Code: code, Timeout: *timeout, Grace: *grace})
		if err != nil {
			fmt.Fprintf(stderr, "codemode exec: block %d of %d: %v\n", i+1, len(blocks), err)
			return 1
		}
		files := make([]string, 0, len(res.Files))
		for _, f := range res.Files {
			files = append(files, f.Path)
		}
		// The block has run: its output comes first, even if --out then
		// fails.
		if *asJSON {
			_ = enc.Encode(blockJSON{
				Stdout: res.Stdout, Stderr: res.Stderr, ExitCode: res.ExitCode,
				DurationMS: res.Duration.Milliseconds(), OutputFiles: files,
			})
		} else {
			io.WriteString(stdout, res.Stdout)
			io.WriteString(stderr, res.Stderr)
			if res.StdoutDropped > 0 || res.StderrDropped > 0 {
				fmt.Fprintf(stderr, "codemode: block %d output was bounded: %d stdout and %d stderr bytes were dropped from the middle\n",
					i+1, res.StdoutDropped, res.StderrDropped)
			}
		}
		if outRoot != nil {
			if err := copyOut(ctx, s, outRoot, res.Files); err != nil {
				fmt.Fprintf(stderr, "codemode exec: block %d: --out: %v\n", i+1, err)
				return 1
			}
		}
	}
	if err := s.Close(); err != nil && !errors.Is(err, transport.ErrClosed) {
		fmt.Fprintf(stderr, "codemode exec: closing the sandbox: %v\n", err)
	}
	return 0
}

// maxStdinCode bounds the code read from standard input.
const maxStdinCode = 16 << 20

func readCode(name string, stdin io.Reader) (string, error) {
	var data []byte
	var err error
	if name == "-" {
		data, err = io.ReadAll(io.LimitReader(stdin, maxStdinCode+1))
		if err == nil && len(data) > maxStdinCode {
			return "", fmt.Errorf("the code on standard input exceeds %d MiB", maxStdinCode>>20)
		}
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return "", err
	}
	return string(data), nil
}

// copyOut writes the listed workspace files under root. root confines every
// path (a symlink planted in the output directory cannot redirect a write),
// and the sandbox side only ever sends regular files.
func copyOut(ctx context.Context, s transport.Session, root *os.Root, files []transport.File) error {
	for _, f := range files {
		rel := filepath.FromSlash(f.Path)
		if !filepath.IsLocal(rel) {
			return fmt.Errorf("refusing file path %q from the sandbox", f.Path)
		}
		data, err := s.ReadFile(ctx, f.Path)
		if err != nil {
			return err
		}
		if dir := filepath.Dir(rel); dir != "." {
			if err := root.MkdirAll(dir, 0o755); err != nil {
				return err
			}
		}
		if st, err := root.Lstat(rel); err == nil && !st.Mode().IsRegular() {
			return fmt.Errorf("%s exists in the output directory and is not a regular file", f.Path)
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err := replaceFile(root, rel, data); err != nil {
			return err
		}
	}
	return nil
}

// replaceFile writes data to a new file next to rel and renames it over
// rel. Writing into an existing rel instead would go through to whatever
// shares its inode: a hard link planted in the output directory would
// redirect the write outside it.
func replaceFile(root *os.Root, rel string, data []byte) error {
	var tmp string
	var f *os.File
	for i := 0; ; i++ {
		tmp = filepath.Join(filepath.Dir(rel), fmt.Sprintf(".codemode-out-%d-%d.tmp", os.Getpid(), i))
		var err error
		f, err = root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || i >= 100 {
			return err
		}
	}
	_, err := f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, rel)
	}
	if err != nil {
		_ = root.Remove(tmp)
	}
	return err
}
