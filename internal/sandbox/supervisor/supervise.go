//go:build linux

package supervisor

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
	"time"

	"golang.org/x/sys/unix"
)

// controlFD is the socket to the host in a re-executed supervisor.
const controlFD = 3

// Run runs the supervisor as the current process would when started under
// [Stage]: argv[1] is its JSON [Config], fd 3 the host's socket. It returns
// the exit code. The sandbox program (internal/host/sandboxbin) calls it, in a
// jail's init process or started on its own.
func Run(argv []string) int {
	// Nothing in the sandbox may read this process's memory or attach to
	// it, even with the same uid.
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	runtime.GOMAXPROCS(1)
	if len(argv) != 2 {
		fmt.Fprintf(os.Stderr, "%s: want one argument, the JSON config\n", Stage)
		return 2
	}
	var cfg Config
	if err := json.Unmarshal([]byte(argv[1]), &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "%s: bad config: %v\n", Stage, err)
		return 2
	}
	_ = unix.SetNonblock(controlFD, true)
	sock := os.NewFile(controlFD, "supervisor")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	if err := supervise(ctx, sock, cfg); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", Stage, err)
		return 1
	}
	return 0
}

// worker is a worker process as the supervisor tracks it.
type worker struct {
	pid    int
	exited chan struct{} // closed once reaped, after status is set
	status syscall.WaitStatus
}

// supervise runs the worker's processes for a host that runs the session
// itself (internal/both/server's Attach): on the host's request over sock it
// starts a worker and passes the host the worker's pipes, signals it,
// kills it with everything it started, and finds and reads the workspace
// files a block changed. It reports each worker's exit. The first worker
// starts without being asked. It returns when the host closes sock or ctx
// ends, after killing every process it started.
//
// Like internal/both/server's Serve, it assumes that it owns every child of its
// process.
func supervise(ctx context.Context, sock *os.File, cfg Config) error {
	if err := cfg.SetDefaults(); err != nil {
		return err
	}
	c, err := NewConn(sock, HostOps)
	if err != nil {
		return err
	}
	// The proxy port listens before the first worker starts, so that the
	// code's first connection finds it.
	if _, err := startEgress(ctx, &cfg); err != nil {
		_ = c.Send(Msg{Op: "error", Error: err.Error()})
		_ = c.Close()
		return err
	}
	p := NewProcs(&cfg)
	defer func() {
		KillTree(os.Getpid())
		p.Close()
		_ = c.Close()
	}()
	go func() {
		<-ctx.Done()
		_ = c.Close()
	}()

	var mu sync.Mutex
	live := map[int]*worker{}
	// Workers are started on the calling goroutine: in a jail that is the
	// init's locked main thread, whose dropped privileges (some of them
	// per thread) the worker inherits.
	spawn := func() error {
		w := &worker{exited: make(chan struct{})}
		pid, pipes, err := p.Spawn(func(st syscall.WaitStatus) {
			w.status = st
			close(w.exited)
		})
		if err != nil {
			return c.Send(Msg{Op: "error", Error: err.Error()})
		}
		w.pid = pid
		mu.Lock()
		live[pid] = w
		mu.Unlock()
		err = c.Send(Msg{Op: "spawned", Pid: pid}, pipes.In, pipes.Ctl, pipes.Stdout, pipes.Stderr)
		for _, f := range []*os.File{pipes.In, pipes.Ctl, pipes.Stdout, pipes.Stderr} {
			f.Close()
		}
		go reportExit(c, w, &mu, live)
		return err
	}
	// The first worker starts at once, unasked: its start-up overlaps
	// with the host's. A worker to adopt is the first.
	first := spawn
	if cfg.Adopt != nil {
		first = func() error { return adopt(c, p, &mu, live) }
	}
	if err := first(); err != nil {
		return nil
	}
	tr := p.Files()
	for {
		m, fds, err := c.Recv()
		CloseFDs(fds) // the host passes none
		if err != nil {
			if errors.Is(err, io.EOF) || ctx.Err() != nil {
				return nil
			}
			_ = c.Send(Msg{Op: "error", Error: err.Error()})
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
				p.Interrupt(w.pid)
			}
		case "settle":
			mu.Lock()
			w := live[m.Pid]
			mu.Unlock()
			n := 0
			if w != nil {
				n = p.Settle(w.pid, time.Duration(m.Since))
			}
			err = c.Send(Msg{Op: "settled", Count: n})
		case "kill":
			p.KillAll()
			err = c.Send(Msg{Op: "killed"})
		case "baseline":
			tr.Baseline()
			if tr.Watching() {
				err = tr.sendWatch(c)
			} else {
				err = c.Send(Msg{Op: "files"})
			}
		case "changed":
			err = c.Send(Msg{Op: "files", Files: tr.Changed(), Watching: tr.Watching()})
		case "read":
			max := cfg.MaxFileBytes
			if m.Max > 0 && m.Max < max {
				max = m.Max
			}
			data, rerr := tr.Read(m.Path, max)
			if rerr != nil {
				err = c.Send(Msg{Op: "file", Path: m.Path, Error: rerr.Error()})
			} else {
				err = c.Send(Msg{Op: "file", Path: m.Path, Data: data})
			}
		}
		if err != nil {
			return nil // the host went away
		}
	}
}

// reportExit tells the host once the worker w has exited.
func reportExit(c *Conn, w *worker, mu *sync.Mutex, live map[int]*worker) {
	<-w.exited
	mu.Lock()
	delete(live, w.pid)
	mu.Unlock()
	_ = c.Send(Msg{Op: "exited", Pid: w.pid, Status: int(w.status)})
}

// adopt takes the worker cfg.Adopt names for the session's first. The
// host has its pipes already (see Config.Adopt).
func adopt(c *Conn, p *Procs, mu *sync.Mutex, live map[int]*worker) error {
	w := &worker{exited: make(chan struct{})}
	pid, err := p.Adopt(func(st syscall.WaitStatus) {
		w.status = st
		close(w.exited)
	})
	if err != nil {
		return c.Send(Msg{Op: "error", Error: err.Error()})
	}
	w.pid = pid
	mu.Lock()
	live[pid] = w
	mu.Unlock()
	go reportExit(c, w, mu, live)
	return nil
}
