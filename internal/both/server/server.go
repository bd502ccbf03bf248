//go:build linux

package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/adk-codemode/codemode/internal/both/clip"
	"github.com/adk-codemode/codemode/internal/both/egressrelay"
	"github.com/adk-codemode/codemode/internal/protocol/wire"
	"github.com/adk-codemode/codemode/internal/sandbox/supervisor"
)

const (
	defaultGrace  = wire.DefaultGrace
	resignalEvery = 100 * time.Millisecond
	maxPending    = 4096
)

type server struct {
	cfg   Config
	host  *wire.Conn
	procs procs
	w     *worker
	files fileTracker
	// calls, if set, runs tool calls in this process (a host that runs the
	// server itself); otherwise they are relayed to the host.
	calls *wire.Calls
	// mu guards the relay state, which the frame readers use directly so
	// that a tool call and its result never wait for the main loop.
	mu sync.Mutex
	// pending tool calls relayed to the host and not yet answered, with
	// the worker and block that made each
	pending map[string]pendingCall
	// stopping: the running block is being interrupted; no new calls
	stopping bool
	// curID is the running block's id, "" between blocks: only its tool
	// calls are admitted.
	curID string
	cur   *block
	// dropped counts frames for a block that was not running.
	dropped int
	// resetOOM: the reset under way is of a worker the memory limit
	// killed.
	resetOOM bool
}

// pendingCall is a tool call in flight.
type pendingCall struct {
	w     *worker
	block string
}

// block is the state of the running block.
type block struct {
	id       string
	limit    int64
	grace    time.Duration
	timeout  time.Duration
	timer    *time.Timer // timeout, then grace
	ticker   *time.Ticker
	stopping bool
	note     string
	start    time.Duration // on CLOCK_BOOTTIME, when the worker was given the block
}

// Serve runs a session: it starts the Python worker, announces it on conn
// with a ready frame, and serves frames until a shutdown frame, the end of
// conn or ctx. Every process the worker started is killed before Serve
// returns.
//
// The server assumes that it owns every child of its process: it reaps
// them all and, to end the session, kills them all.
func Serve(ctx context.Context, conn *wire.Conn, cfg Config) error {
	if err := cfg.SetDefaults(); err != nil {
		return err
	}
	// The proxy port listens before the first worker starts, so that the
	// code's first connection finds it.
	if cfg.EgressSocket != "" {
		r, err := relayEgress(ctx, &cfg)
		if err != nil {
			_ = conn.Write(&wire.ErrorFrame{Message: err.Error()})
			return err
		}
		defer r.Close()
	}
	p := newLocalProcs(&cfg)
	defer p.close()
	return serve(ctx, conn, &cfg, p, nil)
}

// relayEgress relays the code's connections on 127.0.0.1:cfg.EgressPort
// to the host's egress proxy at cfg.EgressSocket, one connection to the
// socket each.
func relayEgress(ctx context.Context, cfg *Config) (*egressrelay.Relay, error) {
	if _, err := os.Stat(cfg.EgressSocket); err != nil {
		return nil, fmt.Errorf("egress: the host's proxy socket: %w (the host mounts it into the sandbox)", err)
	}
	lfd, err := egressrelay.ListenLoopback(cfg.EgressPort, MaxEgressConns)
	if err != nil {
		return nil, fmt.Errorf("egress: listen on 127.0.0.1:%d: %w", cfg.EgressPort, err)
	}
	path := cfg.EgressSocket
	return egressrelay.Start(ctx, lfd, func() (*os.File, error) { return egressrelay.DialUnix(path) },
		egressrelay.Options{MaxConns: MaxEgressConns, SlotWait: supervisor.EgressSlotWait})
}

// serve runs a session with the worker's processes in p. With calls, the
// worker's tool calls run here instead of going to the host as frames.
func serve(ctx context.Context, conn *wire.Conn, cfg *Config, p procs, calls *wire.Calls) error {
	s := &server{cfg: *cfg, host: conn, procs: p, files: p.files(), calls: calls, pending: make(map[string]pendingCall)}
	w, err := s.startWorker()
	if err != nil {
		_ = conn.Write(&wire.ErrorFrame{Message: err.Error()})
		return err
	}
	s.w = w
	defer func() { s.killWorker(s.w) }()
	s.files.baseline()
	if err := conn.Write(&wire.ReadyFrame{
		ProtocolVersion: wire.ProtocolVersion,
		PythonVersion:   w.ready.PythonVersion,
		Packages:        w.ready.Packages,
	}); err != nil {
		return err
	}

	hostFrames := make(chan workerFrame, 16)
	stopHost := make(chan struct{})
	defer close(stopHost)
	go func() {
		for {
			f, err := conn.Read()
			if r, ok := f.(*wire.ToolResultFrame); ok && err == nil {
				s.relayResult(r)
				continue
			}
			select {
			case hostFrames <- workerFrame{f: f, err: err}:
			case <-stopHost:
				return
			}
			if err != nil {
				return
			}
		}
	}()

	for {
		var timerC <-chan time.Time
		var tickC <-chan time.Time
		if s.cur != nil && s.cur.timer != nil {
			timerC = s.cur.timer.C
		}
		if s.cur != nil && s.cur.ticker != nil {
			tickC = s.cur.ticker.C
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case hf := <-hostFrames:
			if errors.Is(hf.err, wire.ErrProtocol) || errors.Is(hf.err, wire.ErrFrameTooLarge) {
				// The host's stream broke the protocol: say why, to the
				// host if it still reads and to whoever reads our error.
				return s.fail("the host's stream: %v", hf.err)
			}
			if hf.err != nil {
				return nil // the host went away: end the session
			}
			stop, err := s.onHostFrame(hf.f)
			if stop || err != nil {
				return err
			}
		case wf := <-s.w.frames:
			if err := s.onWorkerFrame(wf); err != nil {
				return err
			}
		case <-s.w.exited:
			if err := s.onWorkerExit(); err != nil {
				return err
			}
		case <-s.w.broken:
			if err := s.onWorkerBroken(s.w.brokeErr); err != nil {
				return err
			}
		case <-timerC:
			if err := s.onTimer(); err != nil {
				return err
			}
		case <-tickC:
			s.interruptWorker(s.w)
		}
	}
}

func (s *server) onHostFrame(f wire.Frame) (stop bool, err error) {
	switch f := f.(type) {
	case *wire.RunFrame:
		if s.cur != nil {
			return true, s.fail("the host sent a run frame while block %s was running", s.cur.id)
		}
		return false, s.startBlock(f)
	case *wire.InterruptFrame:
		if s.cur == nil || f.Block != s.cur.id {
			s.drop(f.Kind(), f.Block)
			return false, nil
		}
		if !s.cur.stopping {
			s.beginStop(f.Message)
		}
		return false, nil
	case *wire.GetFileFrame:
		data, ferr := s.files.read(f.Path, s.cfg.MaxFileBytes)
		out := &wire.FileFrame{ID: f.ID, Path: f.Path, Data: data}
		if ferr != nil {
			out.Data, out.Error = nil, ferr.Error()
		}
		return false, s.host.Write(out)
	case *wire.ShutdownFrame:
		return true, nil
	default:
		return true, s.fail("the host sent a %s frame, which only a sandbox sends", f.Kind())
	}
}

// drop counts a frame for a block that is not running, which is never
// applied to another, and logs it to the host.
func (s *server) drop(kind, block string) {
	s.dropped++
	running := ""
	if s.cur != nil {
		running = s.cur.id
	}
	_ = s.host.Write(&wire.LogFrame{Level: "warning", Msg: (&wire.BlockMismatchError{Kind: kind, Block: block, Running: running}).Error()})
}

func (s *server) fail(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	_ = s.host.Write(&wire.ErrorFrame{Message: msg})
	return errors.New("sandboxserver: " + msg)
}

func (s *server) startBlock(f *wire.RunFrame) error {
	limit := f.MaxOutputBytes
	if limit <= 0 {
		limit = s.cfg.MaxOutputBytes
	}
	limit = min(limit, maxOutputBytes)
	b := &block{id: f.ID, limit: limit, grace: time.Duration(f.GraceMS) * time.Millisecond, timeout: time.Duration(f.TimeoutMS) * time.Millisecond}
	if b.grace <= 0 {
		b.grace = defaultGrace
	}
	// The runner gets the block itself; the limits stay with the server.
	line, err := wire.Encode(&wire.RunFrame{ID: f.ID, Code: f.Code, TimeoutMS: f.TimeoutMS})
	if err != nil {
		return err
	}
	if len(line) >= wire.MaxFrameSize {
		// The worker would not take it: the block fails without running.
		return s.host.WriteBatch(
			&wire.DoneFrame{ID: f.ID, ExitCode: 1},
			&wire.OutputFrame{ID: f.ID, Stderr: fmt.Sprintf(
				"codemode: the code is %d bytes, more than the %d a block may have; it did not run.\n", len(f.Code), wire.MaxFrameSize-1024)})
	}
	s.w.stdout.setLimit(limit)
	s.w.stderr.setLimit(limit)
	if b.timeout > 0 {
		b.timer = time.NewTimer(b.timeout)
	}
	b.start = supervisor.BootTime()
	s.cur = b
	s.mu.Lock()
	s.curID = b.id
	s.mu.Unlock()
	// The frame is queued, never written here: a worker that does not
	// read it must not stop the loop that enforces the timeout. One that
	// is gone shows up as its exit or a broken channel.
	_ = s.w.send(line)
	return nil
}

// beginStop interrupts the running block in place: the worker gets a
// signal that raises CodeTimeout in the block, the block's tool calls are
// cancelled, and the grace period starts.
func (s *server) beginStop(message string) {
	b := s.cur
	b.stopping = true
	b.note = message
	s.mu.Lock()
	s.stopping = true
	s.mu.Unlock()
	// The frame names the block, and the runner raises CodeTimeout only in
	// the block it names: a signal that arrives late finds another block
	// running and is ignored. It goes before the signal, which wakes the
	// worker to read it.
	_ = s.w.write(&wire.InterruptFrame{Block: b.id, Message: message})
	s.interruptWorker(s.w)
	s.cancelPending()
	if b.timer != nil {
		b.timer.Stop()
	}
	b.timer = time.NewTimer(b.grace)
	b.ticker = time.NewTicker(resignalEvery)
}

// relayCall passes a tool call from the worker w to the host, or returns
// the function that runs it here. It runs on w's frame reader. The
// result goes to w, whichever worker is current by then.
func (s *server) relayCall(w *worker, f *wire.ToolCallFrame) (run func()) {
	s.mu.Lock()
	var refuse *wire.ErrorInfo
	switch {
	case w.discarded:
		// The worker is being killed: nobody waits for an answer.
		s.mu.Unlock()
		return nil
	case !w.readySeen.Load():
		refuse = &wire.ErrorInfo{Type: "ProtocolError", Message: "a tool call before the worker's ready frame; it was not run"}
	case len(s.pending) >= maxPending:
		refuse = &wire.ErrorInfo{Type: "ToolError", Message: "too many tool calls in flight"}
	case f.Block != s.curID:
		refuse = &wire.ErrorInfo{Type: "ToolError", Message: (&wire.BlockMismatchError{Kind: wire.KindToolCall, Block: f.Block, Running: s.curID}).Error() +
			": a tool call counts only while the block that made it runs"}
	case s.stopping:
		refuse = &wire.ErrorInfo{Type: "TimeoutError", Message: "the code is being stopped; no new tool calls"}
	case s.pending[f.ID].w != nil:
		refuse = &wire.ErrorInfo{Type: "ProtocolError", Message: "duplicate tool call id"}
	default:
		s.pending[f.ID] = pendingCall{w: w, block: f.Block}
		if s.calls != nil {
			// Admitted under mu, so that a reset that takes the pending
			// calls finds this one running and can cancel it. Start
			// neither blocks nor replies on this goroutine.
			run = s.calls.Start(f, func(r *wire.ToolResultFrame) error { return s.deliver(w, r) })
		}
	}
	s.mu.Unlock()
	if refuse != nil {
		_ = w.write(&wire.ToolResultFrame{ID: f.ID, Error: refuse})
		return nil
	}
	if s.calls == nil {
		_ = s.host.Write(f)
	}
	return run
}

// relayResult passes a tool result from the host to the worker that made
// the call, unless the call was cancelled meanwhile. It runs on the host's
// frame reader.
func (s *server) relayResult(f *wire.ToolResultFrame) {
	s.mu.Lock()
	w := s.pending[f.ID].w
	s.mu.Unlock()
	if w != nil {
		_ = s.deliver(w, f)
	}
}

// deliver passes a tool result to w, the worker that made the call, unless
// the call was cancelled meanwhile. The call stays pending if the result
// could not be queued, so that a result saying why can follow. It never
// waits for the worker.
func (s *server) deliver(w *worker, f *wire.ToolResultFrame) error {
	s.mu.Lock()
	ok := s.pending[f.ID].w == w
	s.mu.Unlock()
	if !ok {
		return nil
	}
	if err := w.write(f); err != nil {
		return err
	}
	s.mu.Lock()
	if s.pending[f.ID].w == w {
		delete(s.pending, f.ID)
	}
	s.mu.Unlock()
	return nil
}

// takePending removes and returns the pending calls.
func (s *server) takePending() map[string]pendingCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pending
	s.pending = make(map[string]pendingCall)
	return p
}

// cancelCalls cancels the tool calls in p on the host (here, or with a
// cancel frame), since their worker no longer waits for them.
func (s *server) cancelCalls(p map[string]pendingCall, reason string) {
	for id, c := range p {
		if s.calls != nil {
			s.calls.Cancel(id)
		} else {
			_ = s.host.Write(&wire.CancelFrame{ID: id, Block: c.block, Reason: reason})
		}
	}
}

// cancelPending cancels the calls in flight of a block being stopped, and
// answers each with a TimeoutError.
func (s *server) cancelPending() {
	p := s.takePending()
	s.cancelCalls(p, "the code was stopped")
	for id, c := range p {
		// Queued, never waited for; a broken worker shows up on its own.
		_ = c.w.write(&wire.ToolResultFrame{ID: id, Error: &wire.ErrorInfo{
			Type: "TimeoutError", Message: "the tool call was cancelled because the code was stopped",
		}})
	}
}

func (s *server) onTimer() error {
	b := s.cur
	if !b.stopping {
		s.beginStop(fmt.Sprintf("The code ran for longer than %s and was stopped.", b.timeout))
		return nil
	}
	// The grace period is over and the block still runs: start afresh.
	// The note says why the code was interrupted (its timeout, or the
	// host's cancel) before what became of it.
	return s.reset(fmt.Sprintf("codemode: %s The code did not stop within %s of being interrupted, so the Python process and everything it started were killed and a new one started; variables from earlier blocks are gone.", strings.TrimSpace(b.note), b.grace), 137)
}

func (s *server) reset(note string, exitCode int) error {
	b := s.cur
	old := s.w
	oom := s.resetOOM
	s.resetOOM = false
	// Nothing waits for the old worker's calls any more: cancel them, so
	// that they neither run on nor hold the slots the next worker needs.
	s.mu.Lock()
	old.discarded = true
	s.mu.Unlock()
	s.cancelCalls(s.takePending(), "the Python process was restarted")
	s.killWorker(old) // waits for the streams to end
	stdout, outDropped := old.stdout.take()
	stderr, errDropped := old.stderr.take()
	w, err := s.startWorker()
	if err != nil {
		err = fmt.Errorf("the Python process was lost and no new one could be started: %w", err)
		_ = s.host.Write(&wire.ErrorFrame{Message: err.Error()})
		return err
	}
	s.mu.Lock()
	s.stopping = false
	s.curID = ""
	s.w = w
	s.mu.Unlock()
	s.stopTimers()
	s.cur = nil
	if b == nil {
		return nil
	}
	stderr = appendNote(stderr, note)
	files := s.files.changed()
	return s.host.WriteBatch(
		&wire.DoneFrame{ID: b.id, ExitCode: exitCode, Reset: true, OOM: oom},
		&wire.OutputFrame{ID: b.id, Stdout: stdout, Stderr: stderr, StdoutDropped: outDropped, StderrDropped: errDropped, Files: files})
}

func (s *server) stopTimers() {
	if s.cur == nil {
		return
	}
	if s.cur.timer != nil {
		s.cur.timer.Stop()
	}
	if s.cur.ticker != nil {
		s.cur.ticker.Stop()
	}
}

func (s *server) onWorkerExit() error {
	st := s.w.status
	note := fmt.Sprintf("codemode: the Python process ended (%s), so a new one was started; variables from earlier blocks are gone.", describeStatus(st))
	if limit, ok := s.killedByMemory(st); ok {
		note = "codemode: the Python process was killed because the sandbox ran out of memory" + limitText(limit) +
			", so a new one was started; variables from earlier blocks are gone. Use less memory: process the data in parts, or keep less of it at once."
		s.resetOOM = true
	}
	return s.resetIdle(note, exitCodeOf(st))
}

// killedByMemory says whether the worker, which ended with st, was killed
// by the sandbox's memory limit: killed by SIGKILL while the limit's kill
// count went up since the worker started. It returns the limit.
func (s *server) killedByMemory(st syscall.WaitStatus) (limit int64, ok bool) {
	count := s.procs.memory()
	if count == nil || !st.Signaled() || st.Signal() != syscall.SIGKILL {
		return 0, false
	}
	kills, limit, ok := count()
	if !ok || kills <= s.w.memKills {
		return 0, false
	}
	return limit, true
}

// limitText is " (its limit is 512 MiB)", or "" for an unknown limit.
func limitText(limit int64) string {
	if limit <= 0 {
		return ""
	}
	if limit%(1<<20) == 0 {
		return fmt.Sprintf(" (its limit is %d MiB)", limit>>20)
	}
	return fmt.Sprintf(" (its limit is %d bytes)", limit)
}

// resetIdle resets the worker; between blocks, where no block's output
// can carry the note, it goes to the host as a warning once the new
// worker runs. A reset that could not start one says so itself.
func (s *server) resetIdle(note string, exitCode int) error {
	idle := s.cur == nil
	if err := s.reset(note, exitCode); err != nil {
		return err
	}
	if idle {
		_ = s.host.Write(&wire.LogFrame{Level: "warning", Msg: note})
	}
	return nil
}

// onWorkerBroken handles a worker whose control pipe to it broke, or that
// left too much unread in it.
func (s *server) onWorkerBroken(err error) error {
	// A worker that exits closes the pipe first: report the exit.
	select {
	case <-s.w.exited:
		return s.onWorkerExit()
	case <-time.After(time.Second):
	}
	note := "codemode: the Python process was restarted because " + clip.String(err.Error(), 200) + "; it and everything it started were killed, and variables from earlier blocks are gone."
	return s.resetIdle(note, 1)
}

func (s *server) onWorkerFrame(wf workerFrame) error {
	if wf.err != nil {
		// A worker that exits closes the pipe first: report the exit.
		select {
		case <-s.w.exited:
			return s.onWorkerExit()
		case <-time.After(time.Second):
		}
		// The control pipe broke or carried garbage: the worker cannot be
		// trusted to go on.
		note := "codemode: the Python process broke its control channel (" + clip.String(wf.err.Error(), 200) + "), so a new one was started; variables from earlier blocks are gone."
		return s.reset(note, 1)
	}
	switch f := wf.f.(type) {
	case *wire.LogFrame:
		return s.host.Write(f)
	case *wire.DoneFrame:
		if s.cur == nil || f.ID != s.cur.id {
			s.drop(f.Kind(), f.ID)
			return nil
		}
		return s.finish(f)
	default:
		return s.reset("codemode: the Python process sent an unexpected "+f.Kind()+" frame; it was restarted.", 1)
	}
}

func (s *server) finish(d *wire.DoneFrame) error {
	b := s.cur
	s.stopTimers()
	s.cur = nil
	s.mu.Lock()
	s.stopping = false
	s.curID = ""
	s.mu.Unlock()
	// A block stopped in place leaves no process it started: they were
	// frozen when it was interrupted, and are killed now.
	killed := 0
	if b.stopping {
		killed = s.procs.settle(s.w, b.start)
	}
	// The worker flushed its streams before it sent done: what they hold
	// now is the block's.
	s.w.stdout.drain()
	s.w.stderr.drain()
	stdout, outDropped := s.w.stdout.take()
	stderr, errDropped := s.w.stderr.take()
	if b.stopping {
		stderr = appendNote(stderr, stoppedNote(strings.TrimSpace(b.note), stderr, killed))
	}
	// Calls still pending belong to background threads; they stay open.
	files := s.files.changed()
	done := &wire.DoneFrame{ID: b.id, ExitCode: d.ExitCode, Stopped: b.stopping, Background: d.Background}
	return s.host.WriteBatch(done, &wire.OutputFrame{ID: b.id, Stdout: stdout, Stderr: stderr, StdoutDropped: outDropped, StderrDropped: errDropped, Files: files})
}

// stoppedNote is the note after the output of a block stopped in place
// for why (the interrupt's message), which killed of the processes it had
// started. The code's CodeTimeout carries why too: when its traceback
// already shows it in stderr, the note does not say it again.
func stoppedNote(why, stderr string, killed int) string {
	note := "codemode: The code was stopped in place."
	if why != "" && !strings.Contains(stderr, why) {
		note = "codemode: " + why
	}
	switch {
	case killed == 1:
		note += " The process it had started was killed."
	case killed > 1:
		note += fmt.Sprintf(" The %d processes it had started were killed.", killed)
	}
	return note + " Its variables and files are kept for the next block."
}

func appendNote(s, note string) string {
	if s != "" && !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return s + note + "\n"
}
