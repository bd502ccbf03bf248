//go:build linux

package server

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/adk-codemode/codemode/internal/protocol/wire"
	"github.com/adk-codemode/codemode/internal/sandbox/supervisor"
	"github.com/adk-codemode/codemode/transport"
)

// worker is one running Python process and its pipes.
type worker struct {
	pid      int
	ctl      *wire.Conn // frames from the runner; closing it closes both pipes
	in       *os.File   // frames to the runner (its fd 3), written only by writeLoop
	stdout   *capture
	stderr   *capture
	exited   chan struct{} // closed when the process has been reaped
	status   syscall.WaitStatus
	frames   chan workerFrame
	quit     chan struct{} // closed when the worker is discarded
	killOnce sync.Once
	ready    *wire.ReadyFrame
	memKills int // what the memory limit had killed when it became ready
	// readySeen: the frame reader has read the ready frame. Tool calls
	// before it are refused.
	readySeen atomic.Bool
	// discarded: the worker was killed or is being killed; its tool calls
	// are dropped. Guarded by server.mu.
	discarded bool

	// Frames to the runner wait in a queue that writeLoop empties, so that
	// a worker that stops reading its fd 3 blocks only that goroutine and
	// never the server's main loop or a frame reader.
	wmu      sync.Mutex
	wcond    *sync.Cond
	wq       [][]byte
	wqBytes  int
	wbusy    bool            // writeLoop is writing a line it took off wq
	wstopped bool            // the writer is done: nothing more is queued
	inRaw    syscall.RawConn // in, if it does not block: send writes to it directly while nothing waits
	broken   chan struct{}   // closed when the writer failed or the queue overflowed
	brokeErr error           // why; set before broken is closed
}

type workerFrame struct {
	f   wire.Frame
	err error
}

// procs starts, signals and kills the worker's processes and tracks the
// workspace: in this process ([localProcs]), or in a sandbox through its
// supervisor ([remoteProcs]).
type procs interface {
	// spawn starts a worker process with limits applied and returns it
	// with the host's ends of its pipes. Its exit must close w.exited
	// (after setting w.status).
	spawn() (*worker, workerPipes, error)
	// interrupt sends the worker the signal that stops a block in place,
	// with every other process of the sandbox frozen meanwhile.
	interrupt(w *worker)
	// settle ends what a block that stopped in place left behind: it
	// kills the processes other than w that started at or after since
	// (the block's start, on CLOCK_BOOTTIME), resumes the others and
	// returns how many it killed.
	settle(w *worker, since time.Duration) int
	// killAll kills the worker and every process the code started, and
	// returns once they are gone (or after a bound).
	killAll(w *worker)
	// files is the workspace tracker.
	files() fileTracker
	// memory counts what the sandbox's memory limit killed; nil when the
	// sandbox cannot tell.
	memory() MemoryCounter
	// close releases what the procs hold; the worker must be dead.
	close()
}

// workerPipes are the host's ends of a worker's pipes.
type workerPipes struct {
	in     *os.File // frames to the runner (its fd 3)
	ctl    *os.File // frames from the runner (its fd 4)
	stdout *os.File
	stderr *os.File
}

// fileTracker finds the files a block changed and reads them.
type fileTracker interface {
	baseline()
	changed() []wire.FileInfo
	read(rel string, max int64) ([]byte, error)
}

// startWorker starts the Python runner and waits for its ready frame.
func (s *server) startWorker() (*worker, error) {
	w, p, err := s.procs.spawn()
	if err != nil {
		return nil, err
	}
	w.frames = make(chan workerFrame, 16)
	w.quit = make(chan struct{})
	w.stdout = newCapture(p.stdout, s.cfg.MaxOutputBytes)
	w.stderr = newCapture(p.stderr, s.cfg.MaxOutputBytes)
	w.ctl = wire.NewConn(p.ctl, p.in, multiCloser{p.ctl, p.in}, wire.MaxFrameSize)
	w.in = p.in
	if fl, err := unix.FcntlInt(p.in.Fd(), unix.F_GETFL, 0); err == nil && fl&unix.O_NONBLOCK != 0 {
		w.inRaw, _ = p.in.SyscallConn()
	}
	w.wcond = sync.NewCond(&w.wmu)
	w.broken = make(chan struct{})
	go w.writeLoop()
	go w.readFrames(s.relayCall)

	timer := time.NewTimer(s.cfg.StartTimeout)
	defer timer.Stop()
	select {
	case wf := <-w.frames:
		if wf.err != nil {
			err = wf.err
		} else if r, ok := wf.f.(*wire.ReadyFrame); ok {
			w.ready = r
			// What the memory limit had killed before this worker, which
			// its own death is told from.
			if count := s.procs.memory(); count != nil {
				w.memKills, _, _ = count()
			}
			if n, ok := s.procs.(interface{ workerReady() }); ok {
				n.workerReady()
			}
			return w, nil
		} else {
			err = fmt.Errorf("expected ready, got %s", wf.f.Kind())
		}
	case <-w.exited:
		err = fmt.Errorf("exited with %s before it was ready", describeStatus(w.status))
	case <-timer.C:
		err = fmt.Errorf("not ready after %s", s.cfg.StartTimeout)
	}
	s.killWorker(w)
	stderr, _ := w.stderr.take()
	msg := fmt.Sprintf("sandboxserver: the Python worker (%s) failed to start: %v", s.cfg.Python, err)
	if stderr = strings.TrimSpace(stderr); stderr != "" {
		msg += "\n" + stderr
	}
	return nil, errors.New(msg)
}

// localProcs runs the worker as a child of this process (see
// [supervisor.Procs]): the processes of [Serve].
type localProcs struct {
	p   *supervisor.Procs
	mem MemoryCounter // this process's own memory cgroup, or nil
}

func newLocalProcs(cfg *Config) *localProcs {
	return &localProcs{p: supervisor.NewProcs(cfg), mem: ownMemory()}
}

func (p *localProcs) files() fileTracker { return localFiles{p.p.Files()} }

func (p *localProcs) memory() MemoryCounter { return p.mem }

func (p *localProcs) close() { p.p.Close() }

func (p *localProcs) interrupt(w *worker) { p.p.Interrupt(w.pid) }

func (p *localProcs) settle(w *worker, since time.Duration) int { return p.p.Settle(w.pid, since) }

func (p *localProcs) killAll(w *worker) { p.p.KillAll() }

func (p *localProcs) spawn() (*worker, workerPipes, error) {
	w := &worker{exited: make(chan struct{})}
	pid, pp, err := p.p.Spawn(func(st syscall.WaitStatus) {
		w.status = st
		close(w.exited)
	})
	if err != nil {
		return nil, workerPipes{}, err
	}
	w.pid = pid
	return w, workerPipes{in: pp.In, ctl: pp.Ctl, stdout: pp.Stdout, stderr: pp.Stderr}, nil
}

// localFiles is the workspace tracker of localProcs.
type localFiles struct{ t *supervisor.Tracker }

func (f localFiles) baseline() { f.t.Baseline() }

func (f localFiles) changed() []wire.FileInfo { return wireFiles(f.t.Changed()) }

func (f localFiles) read(rel string, max int64) ([]byte, error) { return f.t.Read(rel, max) }

// wireFiles converts the supervisor's file list to frames' (the same
// struct: the supervisor does not import package wire).
func wireFiles(in []supervisor.FileInfo) []wire.FileInfo {
	if in == nil {
		return nil
	}
	out := make([]wire.FileInfo, len(in))
	for i, f := range in {
		out[i] = wire.FileInfo(f)
	}
	return out
}

// maxQueued bounds the bytes queued for a worker that does not read them
// as fast as they come. A worker past it is broken, and reset.
var maxQueued = 4 * wire.MaxFrameSize // a variable for tests

// errWorkerGone is what writing to a worker that was discarded, or whose
// control pipe broke, returns.
var errWorkerGone = fmt.Errorf("sandboxserver: the Python worker is gone: %w", transport.ErrClosed)

// write queues the frame f for the runner. It fails at once if f cannot be
// encoded or is too large, or if the worker is gone; it never waits for
// the worker.
func (w *worker) write(f wire.Frame) error {
	line, err := wire.Encode(f)
	if err != nil {
		return err
	}
	if len(line) > wire.MaxFrameSize+1 {
		return fmt.Errorf("%w: outgoing %s frame of %d bytes", wire.ErrFrameTooLarge, f.Kind(), len(line))
	}
	return w.send(line)
}

// send queues one encoded frame line, newline included, for the runner.
func (w *worker) send(line []byte) error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if w.wstopped {
		return errWorkerGone
	}
	if len(w.wq) > 0 && w.wqBytes+len(line) > maxQueued {
		w.stopWriterLocked(fmt.Errorf("it stopped reading its control channel (%d bytes waited for it)", w.wqBytes))
		return errWorkerGone
	}
	if len(w.wq) == 0 && !w.wbusy && w.inRaw != nil {
		// Nothing waits: write what the pipe takes now, on this
		// goroutine (a wake-up of the writer costs as much as a tool
		// call), and queue only the rest.
		var n int
		var werr error
		if err := w.inRaw.Write(func(fd uintptr) bool {
			n, werr = unix.Write(int(fd), line)
			return true
		}); err != nil {
			werr = err
		}
		n = max(n, 0)
		switch {
		case werr == nil && n == len(line):
			return nil
		case werr != nil && !errors.Is(werr, unix.EAGAIN) && !errors.Is(werr, unix.EINTR):
			w.stopWriterLocked(fmt.Errorf("its control channel broke (%w)", werr))
			return errWorkerGone
		}
		line = line[n:]
	}
	w.wq = append(w.wq, line)
	w.wqBytes += len(line)
	w.wcond.Signal()
	return nil
}

// stopWriterLocked stops the writer and drops what is queued; with err,
// the worker is broken. w.wmu is held.
func (w *worker) stopWriterLocked(err error) {
	if w.wstopped {
		return
	}
	w.wstopped = true
	w.wq, w.wqBytes = nil, 0
	w.wcond.Broadcast()
	if err != nil {
		w.brokeErr = err
		close(w.broken)
	}
}

// writeLoop writes the queued frames to the runner's fd 3 until the
// writer is stopped or a write fails. Closing the pipe (killWorker)
// ends a write that the worker does not read.
func (w *worker) writeLoop() {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	for {
		for len(w.wq) == 0 && !w.wstopped {
			w.wcond.Wait()
		}
		if w.wstopped {
			return
		}
		line := w.wq[0]
		w.wq[0] = nil
		w.wq = w.wq[1:]
		w.wbusy = true
		w.wmu.Unlock()
		_, err := w.in.Write(line)
		w.wmu.Lock()
		w.wbusy = false
		if !w.wstopped {
			w.wqBytes -= len(line)
		}
		if err != nil {
			w.stopWriterLocked(fmt.Errorf("its control channel broke (%w)", err))
			return
		}
	}
}

// readFrames reads the worker's frames. Tool calls go straight to relay,
// and run here if relay returns a function; everything else goes to the
// main loop.
func (w *worker) readFrames(relay func(*worker, *wire.ToolCallFrame) func()) {
	for {
		f, err := w.ctl.Read()
		if _, ok := f.(*wire.ReadyFrame); ok && err == nil {
			w.readySeen.Store(true)
		}
		if c, ok := f.(*wire.ToolCallFrame); ok && err == nil {
			if run := relay(w, c); run != nil {
				if !wire.RunInline(run, func() { w.readFrames(relay) }) {
					return
				}
			}
			continue
		}
		select {
		case w.frames <- workerFrame{f: f, err: err}:
		case <-w.quit:
			return
		}
		if err != nil {
			return
		}
	}
}

// killWorker kills the worker and every process it started, and waits
// until its output streams are drained.
func (s *server) killWorker(w *worker) {
	s.mu.Lock()
	w.discarded = true
	s.mu.Unlock()
	s.procs.killAll(w)
	w.killOnce.Do(func() { close(w.quit) })
	select {
	case <-w.exited:
	case <-time.After(5 * time.Second):
	}
	w.wmu.Lock()
	w.stopWriterLocked(nil)
	w.wmu.Unlock()
	w.ctl.Close() // also ends a write the worker does not read
	for _, c := range []*capture{w.stdout, w.stderr} {
		select {
		case <-c.eof:
		case <-time.After(500 * time.Millisecond):
		}
		// This also ends a read that a surviving writer kept open.
		c.close()
	}
}

func (s *server) interruptWorker(w *worker) { s.procs.interrupt(w) }

func describeStatus(st syscall.WaitStatus) string {
	switch {
	case st.Exited():
		return "exit code " + strconv.Itoa(st.ExitStatus())
	case st.Signaled():
		return "signal " + st.Signal().String()
	}
	return "status " + strconv.Itoa(int(st))
}

func exitCodeOf(st syscall.WaitStatus) int {
	if st.Signaled() {
		return 128 + int(st.Signal())
	}
	return st.ExitStatus()
}

type multiCloser []interface{ Close() error }

func (m multiCloser) Close() error {
	var first error
	for _, c := range m {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
