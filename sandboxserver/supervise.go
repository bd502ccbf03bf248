//go:build linux

package sandboxserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// RunSupervisor runs the supervisor as the current process would when
// started under [SupervisorStage]. It returns the exit code. Jails that run
// the supervisor in their own init process call it.
func RunSupervisor(argv []string) int {
	// Nothing in the sandbox may read this process's memory or attach to
	// it, even with the same uid.
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	runtime.GOMAXPROCS(1)
	if len(argv) != 2 {
		fmt.Fprintf(os.Stderr, "%s: want one argument, the JSON config\n", SupervisorStage)
		return 2
	}
	var cfg Config
	if err := json.Unmarshal([]byte(argv[1]), &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "%s: bad config: %v\n", SupervisorStage, err)
		return 2
	}
	_ = unix.SetNonblock(controlFD, true)
	sock := os.NewFile(controlFD, "supervisor")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	if err := supervise(ctx, sock, cfg); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", SupervisorStage, err)
		return 1
	}
	return 0
}

// supervise runs the worker's processes for a host that runs the session
// itself ([attach]): on the host's request over sock it starts a worker and
// passes the host the worker's pipes, signals it, kills it with everything
// it started, and finds and reads the workspace files a block changed. It
// reports each worker's exit. The first worker starts without being asked.
// It returns when the host closes sock or ctx ends, after killing every
// process it started.
//
// Like [Serve], it assumes that it owns every child of its process.
func supervise(ctx context.Context, sock *os.File, cfg Config) error {
	if err := cfg.setDefaults(); err != nil {
		return err
	}
	c, err := newSupConn(sock, hostOps)
	if err != nil {
		return err
	}
	p := newLocalProcs(&cfg)
	defer func() {
		killTree(os.Getpid())
		p.close()
		_ = c.c.Close()
	}()
	go func() {
		<-ctx.Done()
		_ = c.c.Close()
	}()

	var mu sync.Mutex
	live := map[int]*worker{}
	// Workers are started on the calling goroutine: in a jail that is the
	// init's locked main thread, whose dropped privileges (some of them
	// per thread) the worker inherits.
	spawn := func() error {
		w, pipes, err := p.spawn()
		if err != nil {
			return c.send(supMsg{Op: "error", Error: err.Error()})
		}
		mu.Lock()
		live[w.pid] = w
		mu.Unlock()
		err = c.send(supMsg{Op: "spawned", Pid: w.pid}, pipes.in, pipes.ctl, pipes.stdout, pipes.stderr)
		for _, f := range []*os.File{pipes.in, pipes.ctl, pipes.stdout, pipes.stderr} {
			f.Close()
		}
		go func() {
			<-w.exited
			mu.Lock()
			delete(live, w.pid)
			mu.Unlock()
			_ = c.send(supMsg{Op: "exited", Pid: w.pid, Status: int(w.status)})
		}()
		return err
	}
	// The first worker starts at once, unasked: its start-up overlaps
	// with the host's.
	if err := spawn(); err != nil {
		return nil
	}
	for {
		m, fds, err := c.recv()
		closeFDs(fds) // the host passes none
		if err != nil {
			if errors.Is(err, io.EOF) || ctx.Err() != nil {
				return nil
			}
			_ = c.send(supMsg{Op: "error", Error: err.Error()})
			return err
		}
		switch m.Op {
		case "spawn":
			err = spawn()
		case "interrupt":
			mu.Lock()
			w := live[m.Pid]
			mu.Unlock()
			if w != nil {
				p.interrupt(w)
			}
		case "kill":
			p.killAll(nil)
			err = c.send(supMsg{Op: "killed"})
		case "baseline":
			p.tracker.baseline()
			if p.tracker.watching() {
				err = p.tracker.sendWatch(c)
			} else {
				err = c.send(supMsg{Op: "files"})
			}
		case "changed":
			err = c.send(supMsg{Op: "files", Files: p.tracker.changed(), Watching: p.tracker.watching()})
		case "read":
			max := cfg.MaxFileBytes
			if m.Max > 0 && m.Max < max {
				max = m.Max
			}
			data, rerr := p.tracker.read(m.Path, max)
			if rerr != nil {
				err = c.send(supMsg{Op: "file", Path: m.Path, Error: rerr.Error()})
			} else {
				err = c.send(supMsg{Op: "file", Path: m.Path, Data: data})
			}
		}
		if err != nil {
			return nil // the host went away
		}
	}
}
