//go:build linux

package server

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/adk-codemode/codemode/internal/protocol/wire"
	"github.com/adk-codemode/codemode/internal/sandbox/supervisor"
	"github.com/adk-codemode/codemode/internal/testsupport/fdcheck"
	"github.com/adk-codemode/codemode/transport"
)

// setVar sets *v for the test and restores it after.
func setVar[T any](t *testing.T, v *T, val T) {
	old := *v
	*v = val
	t.Cleanup(func() { *v = old })
}

// fakeWorker is the test's side of a worker whose pipes a fake supervisor
// passes to the host: the test reads the run frames and writes the
// worker's frames and output. The fake supervisor keeps its copies of the
// ends it passed (sent), as a hostile one could.
type fakeWorker struct {
	conn           *wire.Conn // run frames in, the worker's frames out
	stdout, stderr *os.File   // write ends
	sent           []*os.File // in (write end), ctl, stdout, stderr (read ends)
}

func newFakeWorker(t *testing.T) *fakeWorker {
	rs, ws := pipes(t, 4)
	return &fakeWorker{
		conn:   wire.NewConn(rs[0], ws[1], multiCloser{rs[0], ws[1]}, wire.MaxFrameSize),
		stdout: ws[2], stderr: ws[3],
		sent: []*os.File{ws[0], rs[1], rs[2], rs[3]},
	}
}

const fakePid = 999999999

// attachFake attaches a session to a fake supervisor that passes the
// pipes of a fakeWorker. handle sees each message the host sends and
// returns true when it dealt with it; the rest get a plain answer. prep,
// if set, runs on the host's end of the socket before Attach.
func attachFake(t *testing.T, prep func(host *os.File), handle func(c *supervisor.Conn, m supervisor.Msg) bool) (*wire.Client, *fakeWorker, *supervisor.Conn) {
	t.Helper()
	needPython(t)
	hostEnd, sandboxEnd, err := SocketPair()
	if err != nil {
		t.Fatal(err)
	}
	if prep != nil {
		prep(hostEnd)
	}
	c, err := supervisor.NewConn(sandboxEnd, supervisor.HostOps)
	if err != nil {
		t.Fatal(err)
	}
	w := newFakeWorker(t)
	if err := c.Send(supervisor.Msg{Op: "spawned", Pid: fakePid}, w.sent...); err != nil {
		t.Fatal(err)
	}
	if err := w.conn.Write(&wire.ReadyFrame{ProtocolVersion: wire.ProtocolVersion}); err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		exited := false
		for {
			m, fds, err := c.Recv()
			supervisor.CloseFDs(fds)
			if err != nil {
				return
			}
			if handle != nil && handle(c, m) {
				continue
			}
			switch m.Op {
			case "baseline", "changed":
				_ = c.Send(supervisor.Msg{Op: "files"})
			case "kill":
				_ = c.Send(supervisor.Msg{Op: "killed"})
				if !exited {
					exited = true
					_ = c.Send(supervisor.Msg{Op: "exited", Pid: fakePid, Status: 9})
				}
			case "read":
				_ = c.Send(supervisor.Msg{Op: "file", Path: m.Path, Error: "no such file"})
			case "spawn":
				_ = c.Send(supervisor.Msg{Op: "error", Error: "no more workers"})
			}
		}
	}()
	t.Cleanup(func() {
		c.Close()
		<-served
		c.DropFDs()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Attach(ctx, hostEnd, Config{Python: testPython, Workdir: t.TempDir()}, transport.SessionConfig{}, wire.ClientOptions{}, nil)
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, w, c
}

// within runs f and fails the test unless it returns within d; unstick,
// if set, then runs to let f return.
func within(t *testing.T, d time.Duration, what string, f func(), unstick func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Errorf("%s did not return within %s", what, d)
		if unstick != nil {
			unstick()
		}
		<-done
	}
}

// The host asks for no path longer than a supervisor may send
// (it would take it for a protocol error), and keeps at most MaxFiles of
// a files answer.
func TestRemoteProcsBounds(t *testing.T) {
	host, sup := supPair(t, supervisor.SupervisorOps, supervisor.HostOps)
	p := newRemoteProcs(host)
	p.maxFiles = 2
	done := make(chan struct{})
	defer func() {
		p.close()
		<-done
	}()
	go func() {
		defer close(done)
		defer shut(sup)
		for {
			m, fds, err := sup.Recv()
			supervisor.CloseFDs(fds)
			if err != nil {
				return
			}
			if m.Op == "changed" {
				_ = sup.Send(supervisor.Msg{Op: "files", Files: []supervisor.FileInfo{{Path: "a", Size: 1}, {Path: "b", Size: 2}, {Path: "c", Size: 3}}})
			} else {
				t.Errorf("the host sent %s", m.Op)
			}
		}
	}()
	if _, err := p.read(strings.Repeat("a", supervisor.MaxPath+1), 10); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("read of a long path: %v", err)
	}
	if got := p.changed(); len(got) != 2 || got[1].Path != "b" {
		t.Errorf("changed() = %v; want the first 2", got)
	}
}

// A supervisor that stops reading holds up neither the serve
// loop (which interrupts the worker every 100 ms while a block stops) nor
// Close: the send times out and the session ends.
func TestAttachSupervisorStopsReading(t *testing.T) {
	setVar(t, &supervisor.WriteTimeout, time.Second)
	stuck := make(chan struct{})
	defer close(stuck)
	s, w, c := attachFake(t, func(host *os.File) {
		// A small send buffer fills after a few messages.
		rc, err := host.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		_ = rc.Control(func(fd uintptr) { _ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF, 1) })
	}, func(c *supervisor.Conn, m supervisor.Msg) bool {
		if m.Op == "interrupt" {
			<-stuck // reads nothing more
			return true
		}
		return false
	})
	go func() { // the worker takes the block and never ends it
		_, _ = w.conn.Read()
	}()
	within(t, 30*time.Second, "Exec and Close", func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		r, err := s.Exec(ctx, transport.Block{Code: "x", Timeout: 100 * time.Millisecond, Grace: 30 * time.Second})
		t.Logf("Exec: %+v, %v", r, err)
		s.Close()
	}, func() { c.Close() })
}

// Close ends a session whose supervisor does not answer within
// supCloseTimeout, rather than wait for its replies to time out.
func TestAttachCloseBounded(t *testing.T) {
	setVar(t, &supCloseTimeout, 500*time.Millisecond)
	base := fdcheck.Baseline(t)
	s, w, c := attachFake(t, nil, func(c *supervisor.Conn, m supervisor.Msg) bool {
		return m.Op == "kill" // never answered
	})
	start := time.Now()
	within(t, 10*time.Second, "Close", func() { s.Close() }, func() { c.Close() })
	t.Logf("Close took %s", time.Since(start))
	for _, f := range append(w.sent, w.stdout, w.stderr) {
		f.Close()
	}
	w.conn.Close()
	c.Close()
	fdcheck.Check(t, base)
}

// A supervisor that kept a copy of the worker's pipes and makes
// them blocking does not freeze output capture or Close: the host reads
// through open file descriptions of its own.
func TestAttachOwnsWorkerPipes(t *testing.T) {
	s, w, _ := attachFake(t, nil, nil)
	for _, f := range w.sent {
		rc, err := f.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		_ = rc.Control(func(fd uintptr) {
			if err := unix.SetNonblock(int(fd), false); err != nil {
				t.Fatal(err)
			}
		})
	}
	go func() {
		f, err := w.conn.Read()
		run, ok := f.(*wire.RunFrame)
		if err != nil || !ok {
			t.Errorf("the worker read %v, %v", f, err)
			return
		}
		_, _ = w.stdout.WriteString("hi\n")
		time.Sleep(100 * time.Millisecond) // the capture reads it, then finds the pipe empty
		_ = w.conn.Write(&wire.DoneFrame{ID: run.ID})
	}()
	var r *transport.Result
	var err error
	unstick := func() { w.stdout.Close(); w.stderr.Close(); w.conn.Close() }
	within(t, 15*time.Second, "Exec", func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		r, err = s.Exec(ctx, transport.Block{Code: "print('hi')"})
	}, unstick)
	if err != nil || r.Stdout != "hi\n" {
		t.Errorf("Exec: %+v, %v", r, err)
	}
	within(t, 15*time.Second, "Close", func() { s.Close() }, unstick)
}

// The descriptors of a reply that nobody asked for are closed.
func TestAttachDropsUnsolicitedReply(t *testing.T) {
	base := fdcheck.Baseline(t)
	s, w, c := attachFake(t, nil, nil)
	r, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Send(supervisor.Msg{Op: "files", Watching: true}, r); err != nil {
		t.Fatal(err)
	}
	r.Close()
	wr.Close()
	time.Sleep(100 * time.Millisecond) // the host takes it
	c.Close()
	within(t, 30*time.Second, "Close", func() { s.Close() }, nil)
	for _, f := range append(w.sent, w.stdout, w.stderr) {
		f.Close()
	}
	w.conn.Close()
	c.Close()
	fdcheck.Check(t, base)
}

// Errors about the first worker, which comes unasked, name the
// reply that was due rather than an empty request.
func TestAttachFirstSpawnErrors(t *testing.T) {
	err := attachHostile(t, func(t *testing.T, c *fakeSup) {
		_ = c.Send(supervisor.Msg{Op: "killed"})
	})
	if err == nil || strings.Contains(err.Error(), "answer to  ") || !strings.Contains(err.Error(), "spawned") {
		t.Errorf("a wrong first answer: %v; want an error that names spawned", err)
	}
	setVar(t, &supSpawnTimeout, 300*time.Millisecond)
	err = attachHostile(t, func(t *testing.T, c *fakeSup) {})
	if err == nil || strings.Contains(err.Error(), "answer  ") || !strings.Contains(err.Error(), "spawned within") {
		t.Errorf("no first answer: %v; want an error that names spawned", err)
	}
}

// TestWorkerLostBetweenBlocksNoRestart: a worker that exits between blocks
// and cannot be replaced is reported as such, never as restarted.
func TestWorkerLostBetweenBlocksNoRestart(t *testing.T) {
	var logs strings.Builder
	var mu sync.Mutex
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	s, _, c := attachFake(t, nil, nil)
	// The worker dies while no block runs; the fake refuses a new one.
	if err := c.Send(supervisor.Msg{Op: "exited", Pid: fakePid, Status: 9}); err != nil {
		t.Fatal(err)
	}
	_, err := s.Exec(t.Context(), transport.Block{Code: "print(1)"})
	if err == nil || !strings.Contains(err.Error(), "no new one could be started") {
		t.Errorf("Exec after the lost worker: %v; want an error that says no new worker could be started", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Contains(logs.String(), "a new one was started") {
		t.Errorf("the host was told a new worker was started when none was:\n%s", logs.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestServerDropsFramesOfOtherBlocks: a worker's done for a block that is
// not running is dropped and counted, not applied and not a reset; a tool
// call naming another block is refused in the worker's own pipe.
func TestServerDropsFramesOfOtherBlocks(t *testing.T) {
	s, w, _ := attachFake(t, nil, nil)
	refused := make(chan *wire.ToolResultFrame, 1)
	go func() {
		f, err := w.conn.Read()
		run, ok := f.(*wire.RunFrame)
		if err != nil || !ok {
			t.Errorf("the worker read %v, %v", f, err)
			return
		}
		_ = w.conn.Write(&wire.ToolCallFrame{ID: "c1", Block: "b-old", Name: "probe", Args: map[string]any{}})
		if f, err := w.conn.Read(); err == nil {
			if r, ok := f.(*wire.ToolResultFrame); ok {
				refused <- r
			}
		}
		_ = w.conn.Write(&wire.DoneFrame{ID: "b-old", ExitCode: 7})
		_, _ = w.stdout.WriteString("mine\n")
		time.Sleep(100 * time.Millisecond)
		_ = w.conn.Write(&wire.DoneFrame{ID: run.ID})
	}()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	r, err := s.Exec(ctx, transport.Block{Code: "print('mine')"})
	if err != nil {
		t.Fatalf("Exec: %v", err)
	}
	if r.ExitCode != 0 || r.Reset || r.Stdout != "mine\n" {
		t.Errorf("result %+v: want the running block's own end, with no reset", r)
	}
	select {
	case res := <-refused:
		if res.Error == nil || !strings.Contains(res.Error.Message, `block "b-old"`) {
			t.Errorf("the other block's call got %+v, want a refusal naming its block", res)
		}
	case <-time.After(10 * time.Second):
		t.Error("the other block's tool call was not answered")
	}
}
