//go:build linux

package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/adk-codemode/codemode/internal/both/clip"
	"github.com/adk-codemode/codemode/internal/both/observe"
	"github.com/adk-codemode/codemode/internal/protocol/wire"
	"github.com/adk-codemode/codemode/internal/sandbox/supervisor"
	"github.com/adk-codemode/codemode/transport"
)

// Attach runs a session in this process whose worker lives with a
// supervisor (package internal/sandbox/supervisor) at the other end of sup,
// typically inside a sandbox on the same machine. The worker's pipes are
// passed to this process, so blocks, their output and tool calls travel
// between the host and the worker with no process in between; the
// supervisor is asked only to start, signal and kill the worker and for
// the workspace's files.
// cfg must be the supervisor's config (its limits on output and files
// apply here). The returned client owns sup; opts.OnClose runs after the
// supervisor's processes are gone. mem, if not nil, tells a worker killed
// by the sandbox's memory limit from one killed otherwise.
func Attach(ctx context.Context, sup *os.File, cfg Config, scfg transport.SessionConfig, opts wire.ClientOptions, mem MemoryCounter) (*wire.Client, error) {
	fail := func(err error) (*wire.Client, error) {
		if opts.OnClose != nil {
			err = errors.Join(err, opts.OnClose())
		}
		return nil, err
	}
	if err := cfg.SetDefaults(); err != nil {
		sup.Close()
		return fail(err)
	}
	c, err := supervisor.NewConn(sup, supervisor.SupervisorOps)
	if err != nil {
		return fail(err)
	}
	p := newRemoteProcs(c)
	p.maxFiles = cfg.MaxFiles
	p.mem = mem
	p.inotifyAfter = opts.OnClose != nil
	// The steps of the start, as events of ctx's span (the plugin's
	// codemode.sandbox.start), if it records.
	p.step = func(name string) { observe.Event(ctx, name) }
	hostConn, serverConn := wire.NewConnPipe()
	// Tool calls run right here, on the goroutine that read them from the
	// worker, rather than cross the pipe to the client as frames.
	callsCtx, cancelCalls := context.WithCancel(context.Background())
	calls := wire.NewCalls(callsCtx, scfg)
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
			_ = p.c.Close()
		}
		err := p.waitServed(served)
		if onClose != nil {
			err = errors.Join(err, onClose())
			p.closeInotifyAfter()
		}
		return err
	}
	// Until the worker is ready, ctx bounds the wait for the supervisor too.
	stop := context.AfterFunc(ctx, func() { _ = p.c.Close() })
	client, err := wire.NewClient(ctx, hostConn, scfg, opts)
	if !stop() && err == nil {
		// ctx ended just as the worker became ready, and the supervisor
		// is gone with it.
		client.Close()
		return nil, ctx.Err()
	}
	started.Store(err == nil)
	if err == nil {
		observe.Event(ctx, "codemode.sandbox.handshake")
	}
	return client, err
}

// waitServed waits for the session's end. A session held up past
// supCloseTimeout (by a supervisor that does not answer, say) is ended by
// force: closing the supervisor socket and the worker's pipes ends every
// wait of the serve loop.
func (p *remoteProcs) waitServed(served <-chan error) error {
	timer := time.NewTimer(supCloseTimeout)
	defer timer.Stop()
	select {
	case err := <-served:
		return err
	case <-timer.C:
	}
	p.forceClose()
	timer.Reset(supCloseTimeout)
	select {
	case err := <-served:
		return err
	case <-timer.C:
		return fmt.Errorf("sandboxserver: the session did not end within %s of being closed", 2*supCloseTimeout)
	}
}

// remoteProcs are the worker's processes as a supervisor runs them.
type remoteProcs struct {
	c        *supervisor.Conn
	reqMu    sync.Mutex // one request at a time
	replies  chan supReply
	end      chan struct{} // closed when the reader stops
	endErr   error
	intr     chan *worker // an interrupt to send, at most one
	maxFiles int          // the most files of a files message kept

	mu      sync.Mutex
	workers map[int]*worker
	early   map[int]int // exits reported before their spawn reply
	pipes   []*os.File  // the latest worker's pipes, closed by forceClose

	inotify int // the supervisor's inotify descriptor, or -1
	// inotifyAfter keeps the inotify descriptor open past close, until
	// the supervisor's process is gone (closeInotifyAfter): the last close
	// of an inotify instance that watches something waits for the kernel
	// to free its watches (an SRCU grace period, 10-20 ms), which then
	// holds up neither the supervisor's exit nor the session's Close.
	inotifyAfter bool
	inotifyLate  int // the descriptor kept past close, or -1; guarded by mu
	watching     bool
	spawned      bool          // the first worker, which comes unasked, was taken
	step         func(string)  // marks a step of the start; nil for none
	mem          MemoryCounter // the sandbox's memory cgroup, from its launcher; nil for none
	readied      bool          // the first worker's ready frame was marked
}

type supReply struct {
	m   supervisor.Msg
	fds []int
}

// Bounds on the supervisor's answers.
var (
	supSpawnTimeout = 60 * time.Second
	supReplyTimeout = 30 * time.Second
	// supCloseTimeout bounds the wait for the session's end at Close
	// before it is ended by force, and then again.
	supCloseTimeout = 10 * time.Second
)

func newRemoteProcs(c *supervisor.Conn) *remoteProcs {
	p := &remoteProcs{
		c: c, replies: make(chan supReply, 1), end: make(chan struct{}), intr: make(chan *worker, 1),
		workers: map[int]*worker{}, early: map[int]int{}, inotify: -1, inotifyLate: -1,
	}
	go p.readLoop()
	go p.interrupter()
	return p
}

// dropReplies closes the descriptors of replies that nobody will take.
func (p *remoteProcs) dropReplies() {
	for {
		select {
		case r := <-p.replies:
			supervisor.CloseFDs(r.fds)
		default:
			return
		}
	}
}

// forceClose closes the supervisor socket and the latest worker's pipes,
// which ends whatever waits on them.
func (p *remoteProcs) forceClose() {
	_ = p.c.Close()
	p.mu.Lock()
	pipes := p.pipes
	p.pipes = nil
	p.mu.Unlock()
	// Close waits for a read in progress: never here.
	go func() {
		for _, f := range pipes {
			f.Close()
		}
	}()
}

// readLoop dispatches the supervisor's messages: exits to their workers,
// everything else to the waiting request. When the connection ends, every
// worker counts as killed: the supervisor's processes die with it.
func (p *remoteProcs) readLoop() {
	var err error
	for {
		var m supervisor.Msg
		var fds []int
		m, fds, err = p.c.Recv()
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
			supervisor.CloseFDs(fds)
			err = fmt.Errorf("%w: %s that nobody asked for", supervisor.ErrProtocol, m.Op)
		}
		if err != nil {
			break
		}
	}
	_ = p.c.Close()
	p.c.DropFDs()
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
func (p *remoteProcs) request(m supervisor.Msg, want string, timeout time.Duration) (supReply, error) {
	p.reqMu.Lock()
	defer p.reqMu.Unlock()
	// What the reply answers, for errors: the first worker's spawned
	// comes unasked.
	asked := m.Op
	if asked == "" {
		asked = "nothing (" + want + " was due)"
	}
	if m.Op != "" {
		if err := p.c.Send(m); err != nil {
			p.dropReplies()
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
			supervisor.CloseFDs(r.fds)
			return supReply{}, errors.New(r.m.Error)
		}
		supervisor.CloseFDs(r.fds)
		return supReply{}, fmt.Errorf("%w: %s in answer to %s", supervisor.ErrProtocol, r.m.Op, asked)
	case <-p.end:
		p.dropReplies()
		return supReply{}, p.lost(p.endErr)
	case <-timer.C:
		// A late answer would be taken for the next one's: give up on it
		// (and on one that came just now).
		_ = p.c.Close()
		p.dropReplies()
		if m.Op == "" {
			return supReply{}, fmt.Errorf("sandboxserver: the supervisor did not send %s within %s", want, timeout)
		}
		return supReply{}, fmt.Errorf("sandboxserver: the supervisor did not answer %s within %s", m.Op, timeout)
	}
}

func (p *remoteProcs) lost(err error) error {
	return fmt.Errorf("sandboxserver: lost the supervisor: %w", err)
}

func (p *remoteProcs) spawn() (*worker, workerPipes, error) {
	// The supervisor starts the first worker unasked.
	req := supervisor.Msg{Op: "spawn"}
	first := !p.spawned
	if first {
		p.spawned = true
		req.Op = ""
	}
	r, err := p.request(req, "spawned", supSpawnTimeout)
	if err != nil {
		return nil, workerPipes{}, err
	}
	if first && p.step != nil {
		p.step("codemode.sandbox.worker_spawned")
	}
	files := make([]*os.File, 0, 4)
	for i, fd := range r.fds {
		// The first is the write end of the worker's fd 3, the others
		// read ends.
		f, err := ownPipe(fd, i == 0)
		if err != nil {
			supervisor.CloseFDs(r.fds[i+1:])
			for _, f := range files {
				f.Close()
			}
			if errors.Is(err, errNotPipe) {
				err = fmt.Errorf("%w: the worker's descriptor %d is not a pipe", supervisor.ErrProtocol, i)
			}
			return nil, workerPipes{}, err
		}
		files = append(files, f)
	}
	p.mu.Lock()
	p.pipes = files
	p.mu.Unlock()
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

// interrupt has the worker signalled. The request is sent by interrupter,
// so that a supervisor that stops reading never holds up the serve loop;
// a newer one replaces one not yet sent.
func (p *remoteProcs) interrupt(w *worker) {
	select {
	case <-p.intr:
	default:
	}
	select {
	case p.intr <- w:
	default:
	}
}

func (p *remoteProcs) interrupter() {
	for {
		select {
		case w := <-p.intr:
			select {
			case <-w.exited: // too late; its pid may be another's soon
			default:
				_ = p.c.Send(supervisor.Msg{Op: "interrupt", Pid: w.pid})
			}
		case <-p.end:
			return
		}
	}
}

func (p *remoteProcs) settle(w *worker, since time.Duration) int {
	r, err := p.request(supervisor.Msg{Op: "settle", Pid: w.pid, Since: int64(since)}, "settled", supReplyTimeout)
	if err != nil {
		return 0
	}
	return r.m.Count
}

func (p *remoteProcs) killAll(w *worker) {
	_, _ = p.request(supervisor.Msg{Op: "kill"}, "killed", supReplyTimeout)
}

func (p *remoteProcs) files() fileTracker { return p }

func (p *remoteProcs) memory() MemoryCounter { return p.mem }

// workerReady marks the first worker's ready frame as a step of the
// start. It runs on the serve loop, as spawn does.
func (p *remoteProcs) workerReady() {
	if !p.readied && p.step != nil {
		p.readied = true
		p.step("codemode.sandbox.worker_ready")
	}
}

func (p *remoteProcs) close() {
	_ = p.c.Close()
	<-p.end
	// The reader has stopped: nothing more comes into replies.
	p.dropReplies()
	if p.inotify >= 0 {
		if p.inotifyAfter {
			p.mu.Lock()
			p.inotifyLate = p.inotify
			p.mu.Unlock()
		} else {
			_ = unix.Close(p.inotify)
		}
		p.inotify = -1
	}
}

// closeInotifyAfter closes, in the background, the inotify descriptor that
// close kept (see inotifyAfter); the supervisor's process is gone.
func (p *remoteProcs) closeInotifyAfter() {
	p.mu.Lock()
	fd := p.inotifyLate
	p.inotifyLate = -1
	p.mu.Unlock()
	if fd >= 0 {
		go func() { _ = unix.Close(fd) }()
	}
}

func (p *remoteProcs) baseline() {
	r, err := p.request(supervisor.Msg{Op: "baseline"}, "files", supReplyTimeout)
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
	supervisor.CloseFDs(r.fds)
	p.watching = p.watching && r.m.Watching
	if !p.watching && p.inotify >= 0 {
		_ = unix.Close(p.inotify)
		p.inotify = -1
	}
}

// changed asks the supervisor for the changed files, unless it is watching
// with inotify and no event is queued: then nothing changed.
func (p *remoteProcs) changed() []wire.FileInfo {
	if p.watching && p.inotify >= 0 {
		fds := []unix.PollFd{{Fd: int32(p.inotify), Events: unix.POLLIN}}
		if n, err := unix.Poll(fds, 0); err == nil && n == 0 {
			return nil
		}
	}
	r, err := p.request(supervisor.Msg{Op: "changed"}, "files", supReplyTimeout)
	if err != nil {
		return nil
	}
	p.setWatch(r)
	files := r.m.Files
	if len(files) > p.maxFiles && p.maxFiles > 0 {
		files = files[:p.maxFiles]
	}
	return wireFiles(files)
}

func (p *remoteProcs) read(rel string, max int64) ([]byte, error) {
	if len(rel) > supervisor.MaxPath {
		// The supervisor would take it for a protocol error.
		return nil, fmt.Errorf("invalid path %q: longer than %d bytes", clip.String(rel, 200), supervisor.MaxPath)
	}
	r, err := p.request(supervisor.Msg{Op: "read", Path: rel, Max: max}, "file", supReplyTimeout)
	if err != nil {
		return nil, err
	}
	if r.m.Error != "" {
		return nil, errors.New(r.m.Error)
	}
	if int64(len(r.m.Data)) > max {
		return nil, fmt.Errorf("%w: %d bytes for a file of at most %d", supervisor.ErrProtocol, len(r.m.Data), max)
	}
	return r.m.Data, nil
}

// errNotPipe is ownPipe's error for a descriptor that is not a pipe.
var errNotPipe = errors.New("not a pipe")

// ownPipe returns a file of this process's own for the pipe fd (received
// from the supervisor, which may keep a copy), and closes fd. The copy
// shares its open file description, whose flags the supervisor could
// change at any time, making reads block again; the file returned is the
// pipe opened anew through /proc, with a description of its own, in
// nonblocking mode for the runtime poller. write tells which end.
func ownPipe(fd int, write bool) (*os.File, error) {
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		return nil, errNotPipe
	}
	mode := unix.O_RDONLY
	if write {
		mode = unix.O_WRONLY
	}
	// O_NONBLOCK also keeps the open from waiting for the other end.
	nfd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), mode|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err == unix.ENXIO && write {
		// No reader is left: the worker is gone. A pipe without a
		// reader does just as well.
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
			return nil, fmt.Errorf("sandboxserver: pipe: %w", err)
		}
		unix.Close(p[0])
		return os.NewFile(uintptr(p[1]), "worker"), nil
	}
	if err != nil {
		return nil, fmt.Errorf("sandboxserver: reopen the worker's pipe: %w", err)
	}
	var nst unix.Stat_t
	if err := unix.Fstat(nfd, &nst); err != nil || nst.Dev != st.Dev || nst.Ino != st.Ino {
		unix.Close(nfd)
		return nil, fmt.Errorf("sandboxserver: reopen the worker's pipe: not the same pipe")
	}
	return os.NewFile(uintptr(nfd), "worker"), nil
}
