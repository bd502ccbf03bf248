//go:build linux

package sandboxserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/adk-codemode/codemode/transport"
)

// Attach runs a session in this process whose worker lives with a
// supervisor ([Supervise]) at the other end of sup, typically inside a
// sandbox on the same machine. The worker's pipes are passed to this
// process, so blocks, their output and tool calls travel between the host
// and the worker with no process in between; the supervisor is asked only
// to start, signal and kill the worker and for the workspace's files.
// cfg must be the supervisor's config (its limits on output and files
// apply here). The returned client owns sup; opts.OnClose runs after the
// supervisor's processes are gone.
func Attach(ctx context.Context, sup *os.File, cfg Config, scfg transport.SessionConfig, opts transport.ClientOptions) (*transport.Client, error) {
	fail := func(err error) (*transport.Client, error) {
		if opts.OnClose != nil {
			err = errors.Join(err, opts.OnClose())
		}
		return nil, err
	}
	if err := cfg.setDefaults(); err != nil {
		sup.Close()
		return fail(err)
	}
	c, err := newSupConn(sup, supOps)
	if err != nil {
		return fail(err)
	}
	p := newRemoteProcs(c)
	hostConn, serverConn := transport.NewConnPipe()
	// Tool calls run right here, on the goroutine that read them from the
	// worker, rather than cross the pipe to the client as frames.
	callsCtx, cancelCalls := context.WithCancel(context.Background())
	calls := transport.NewCalls(callsCtx, scfg)
	served := make(chan error, 1)
	go func() {
		err := serve(context.Background(), serverConn, &cfg, p, calls)
		serverConn.Close()
		p.close()
		served <- err
	}()
	var started atomic.Bool
	onClose := opts.OnClose
	opts.OnClose = func() error {
		cancelCalls()
		if !started.Load() {
			// The start failed or was given up: do not wait for a
			// supervisor that may never answer.
			p.c.c.Close()
		}
		err := <-served
		if onClose != nil {
			err = errors.Join(err, onClose())
		}
		return err
	}
	// Until the worker is ready, ctx bounds the wait for the supervisor too.
	stop := context.AfterFunc(ctx, func() { p.c.c.Close() })
	client, err := transport.NewClient(ctx, hostConn, scfg, opts)
	if !stop() && err == nil {
		// ctx ended just as the worker became ready, and the supervisor
		// is gone with it.
		client.Close()
		return nil, ctx.Err()
	}
	started.Store(err == nil)
	return client, err
}

// remoteProcs are the worker's processes as a supervisor runs them.
type remoteProcs struct {
	c       *supConn
	reqMu   sync.Mutex // one request at a time
	replies chan supReply
	end     chan struct{} // closed when the reader stops
	endErr  error

	mu      sync.Mutex
	workers map[int]*worker
	early   map[int]int // exits reported before their spawn reply

	inotify  int // the supervisor's inotify descriptor, or -1
	watching bool
	spawned  bool // the first worker, which comes unasked, was taken
}

type supReply struct {
	m   supMsg
	fds []int
}

// Bounds on the supervisor's answers.
const (
	supSpawnTimeout = 60 * time.Second
	supReplyTimeout = 30 * time.Second
)

func newRemoteProcs(c *supConn) *remoteProcs {
	p := &remoteProcs{
		c: c, replies: make(chan supReply, 1), end: make(chan struct{}),
		workers: map[int]*worker{}, early: map[int]int{}, inotify: -1,
	}
	go p.readLoop()
	return p
}

// readLoop dispatches the supervisor's messages: exits to their workers,
// everything else to the waiting request. When the connection ends, every
// worker counts as killed: the supervisor's processes die with it.
func (p *remoteProcs) readLoop() {
	var err error
	for {
		var m supMsg
		var fds []int
		m, fds, err = p.c.recv()
		if err != nil {
			break
		}
		if m.Op == "exited" {
			p.exited(m.Pid, m.Status)
			continue
		}
		select {
		case p.replies <- supReply{m, fds}:
		default:
			closeFDs(fds)
			err = fmt.Errorf("%w: %s that nobody asked for", errSupProtocol, m.Op)
		}
		if err != nil {
			break
		}
	}
	p.c.c.Close()
	p.c.dropFDs()
	p.endErr = err
	close(p.end)
	p.mu.Lock()
	for pid, w := range p.workers {
		w.status = syscall.WaitStatus(syscall.SIGKILL)
		close(w.exited)
		delete(p.workers, pid)
	}
	p.mu.Unlock()
}

func (p *remoteProcs) exited(pid, status int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w, ok := p.workers[pid]; ok {
		delete(p.workers, pid)
		w.status = syscall.WaitStatus(status)
		close(w.exited)
		return
	}
	if len(p.early) < 64 {
		p.early[pid] = status
	}
}

// request sends m (nothing if m.Op is empty) and waits for the reply
// named want.
func (p *remoteProcs) request(m supMsg, want string, timeout time.Duration) (supReply, error) {
	p.reqMu.Lock()
	defer p.reqMu.Unlock()
	if m.Op != "" {
		if err := p.c.send(m); err != nil {
			return supReply{}, p.lost(err)
		}
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case r := <-p.replies:
		switch r.m.Op {
		case want:
			return r, nil
		case "error":
			closeFDs(r.fds)
			return supReply{}, errors.New(r.m.Error)
		}
		closeFDs(r.fds)
		return supReply{}, fmt.Errorf("%w: %s in answer to %s", errSupProtocol, r.m.Op, m.Op)
	case <-p.end:
		return supReply{}, p.lost(p.endErr)
	case <-timer.C:
		// A late answer would be taken for the next one's: give up on it.
		p.c.c.Close()
		return supReply{}, fmt.Errorf("sandboxserver: the supervisor did not answer %s within %s", m.Op, timeout)
	}
}

func (p *remoteProcs) lost(err error) error {
	return fmt.Errorf("sandboxserver: lost the supervisor: %v", err)
}

func (p *remoteProcs) spawn() (*worker, workerPipes, error) {
	// The supervisor starts the first worker unasked.
	req := supMsg{Op: "spawn"}
	if !p.spawned {
		p.spawned = true
		req.Op = ""
	}
	r, err := p.request(req, "spawned", supSpawnTimeout)
	if err != nil {
		return nil, workerPipes{}, err
	}
	files := make([]*os.File, 0, 4)
	for i, fd := range r.fds {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
			closeFDs(r.fds[i:])
			for _, f := range files {
				f.Close()
			}
			return nil, workerPipes{}, fmt.Errorf("%w: the worker's descriptor %d is not a pipe", errSupProtocol, i)
		}
		_ = unix.SetNonblock(fd, true) // for the runtime poller
		files = append(files, os.NewFile(uintptr(fd), "worker"))
	}
	w := &worker{pid: r.m.Pid, exited: make(chan struct{})}
	p.mu.Lock()
	if st, ok := p.early[w.pid]; ok {
		delete(p.early, w.pid)
		w.status = syscall.WaitStatus(st)
		close(w.exited)
	} else {
		select {
		case <-p.end:
			w.status = syscall.WaitStatus(syscall.SIGKILL)
			close(w.exited)
		default:
			p.workers[w.pid] = w
		}
	}
	p.mu.Unlock()
	return w, workerPipes{in: files[0], ctl: files[1], stdout: files[2], stderr: files[3]}, nil
}

func (p *remoteProcs) interrupt(w *worker) {
	_ = p.c.send(supMsg{Op: "interrupt", Pid: w.pid})
}

func (p *remoteProcs) killAll(w *worker) {
	_, _ = p.request(supMsg{Op: "kill"}, "killed", supReplyTimeout)
}

func (p *remoteProcs) files() fileTracker { return p }

func (p *remoteProcs) close() {
	p.c.c.Close()
	<-p.end
	if p.inotify >= 0 {
		_ = unix.Close(p.inotify)
		p.inotify = -1
	}
}

func (p *remoteProcs) baseline() {
	r, err := p.request(supMsg{Op: "baseline"}, "files", supReplyTimeout)
	if err != nil {
		return
	}
	p.setWatch(r)
}

func (p *remoteProcs) setWatch(r supReply) {
	if len(r.fds) == 1 && r.m.Watching {
		if p.inotify >= 0 {
			_ = unix.Close(p.inotify)
		}
		p.inotify = r.fds[0]
		p.watching = true
		return
	}
	closeFDs(r.fds)
	p.watching = p.watching && r.m.Watching
	if !p.watching && p.inotify >= 0 {
		_ = unix.Close(p.inotify)
		p.inotify = -1
	}
}

// changed asks the supervisor for the changed files, unless it is watching
// with inotify and no event is queued: then nothing changed.
func (p *remoteProcs) changed() []transport.FileInfo {
	if p.watching && p.inotify >= 0 {
		fds := []unix.PollFd{{Fd: int32(p.inotify), Events: unix.POLLIN}}
		if n, err := unix.Poll(fds, 0); err == nil && n == 0 {
			return nil
		}
	}
	r, err := p.request(supMsg{Op: "changed"}, "files", supReplyTimeout)
	if err != nil {
		return nil
	}
	p.setWatch(r)
	return r.m.Files
}

func (p *remoteProcs) read(rel string, max int64) ([]byte, error) {
	r, err := p.request(supMsg{Op: "read", Path: rel, Max: max}, "file", supReplyTimeout)
	if err != nil {
		return nil, err
	}
	if r.m.Error != "" {
		return nil, errors.New(r.m.Error)
	}
	if int64(len(r.m.Data)) > max {
		return nil, fmt.Errorf("%w: %d bytes for a file of at most %d", errSupProtocol, len(r.m.Data), max)
	}
	return r.m.Data, nil
}
