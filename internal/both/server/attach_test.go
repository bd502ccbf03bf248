//go:build linux

package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/adk-codemode/codemode/internal/host/sandboxbin"
	"github.com/adk-codemode/codemode/internal/protocol/wire"
	"github.com/adk-codemode/codemode/internal/sandbox/supervisor"
	"github.com/adk-codemode/codemode/internal/testsupport/fdcheck"
	"github.com/adk-codemode/codemode/transport"
)

// supervisorProc is a real supervisor: the sandbox program (internal/host/sandboxbin)
// started under SupervisorStage.
type supervisorProc struct {
	cmd    *exec.Cmd
	pid    int
	exited chan struct{} // closed once the process is reaped
	stderr bytes.Buffer  // read only after exited
}

// startSupervisor starts a supervisor with cfg and returns the host's end
// of its socket. The process is killed, if still there, at the end of the
// test.
func startSupervisor(t *testing.T, cfg Config) (*os.File, *supervisorProc) {
	t.Helper()
	args, err := supervisor.Args(cfg)
	if err != nil {
		t.Fatal(err)
	}
	exe, err := sandboxbin.Path()
	if err != nil {
		t.Fatal(err)
	}
	hostEnd, sandboxEnd, err := SocketPair()
	if err != nil {
		t.Fatal(err)
	}
	sp := &supervisorProc{exited: make(chan struct{})}
	sp.cmd = &exec.Cmd{
		Path:        exe,
		Args:        args,
		Env:         []string{"PATH=/usr/bin:/bin"},
		Dir:         cfg.Workdir,
		ExtraFiles:  []*os.File{sandboxEnd}, // fd 3
		Stderr:      &sp.stderr,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	}
	err = sp.cmd.Start()
	sandboxEnd.Close()
	if err != nil {
		hostEnd.Close()
		t.Fatal(err)
	}
	sp.pid = sp.cmd.Process.Pid
	go func() {
		_ = sp.cmd.Wait()
		close(sp.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-sp.exited:
		default:
			_ = syscall.Kill(-sp.pid, syscall.SIGKILL)
			<-sp.exited
		}
		if t.Failed() && sp.stderr.Len() > 0 {
			t.Logf("supervisor stderr:\n%s", sp.stderr.String())
		}
	})
	return hostEnd, sp
}

// wait is the session's OnClose: the supervisor exits once the host closes
// its socket. One that does not within a generous bound is killed, and
// that is an error.
func (sp *supervisorProc) wait() error {
	select {
	case <-sp.exited:
		return nil
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-sp.pid, syscall.SIGKILL)
		<-sp.exited
		return errors.New("the supervisor did not exit after the session closed")
	}
}

// attachSession starts a supervisor and attaches a session to it.
func attachSession(t *testing.T, tools transport.ToolHandler) (*wire.Client, *supervisorProc, Config) {
	t.Helper()
	needPython(t)
	cfg := Config{Python: testPython, Workdir: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin"}}
	hostEnd, sp := startSupervisor(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := Attach(ctx, hostEnd, cfg, transport.SessionConfig{Tools: tools}, wire.ClientOptions{OnClose: sp.wait}, nil)
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	t.Cleanup(func() { s.Close() }) // runs before the supervisor's cleanup
	return s, sp, cfg
}

func run(t *testing.T, s *wire.Client, b transport.Block) *transport.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := s.Exec(ctx, b)
	if err != nil {
		t.Fatalf("Exec(%q): %v", b.Code, err)
	}
	return r
}

func runCode(t *testing.T, s *wire.Client, code string) *transport.Result {
	t.Helper()
	return run(t, s, transport.Block{Code: code})
}

func TestAttachKeepsState(t *testing.T) {
	s, _, _ := attachSession(t, nil)
	if r := runCode(t, s, "x = 41\ndef f(y):\n    return x + y\n"); r.ExitCode != 0 || r.Stdout != "" || r.Stderr != "" {
		t.Fatalf("first block: %+v", r)
	}
	if r := runCode(t, s, "print(f(1))"); r.ExitCode != 0 || r.Stdout != "42\n" {
		t.Errorf("second block: %+v", r)
	}
	r := runCode(t, s, "print('before')\n1/0\n")
	if r.ExitCode != 1 || r.Stdout != "before\n" || !strings.Contains(r.Stderr, "ZeroDivisionError") || r.Reset {
		t.Errorf("failing block: %+v", r)
	}
	if r := runCode(t, s, "x += 1\nprint(x)"); r.Stdout != "42\n" {
		t.Errorf("after the failing block: %+v", r)
	}
	if env := s.Environment(); env.PythonVersion == "" {
		t.Errorf("no Python version in %+v", env)
	}
}

func TestAttachOutput(t *testing.T) {
	s, _, _ := attachSession(t, nil)
	r := runCode(t, s, `import os, sys
print("out")
print("err", file=sys.stderr)
sys.stdout.flush()
sys.stderr.flush()
os.system("echo hi")
os.system("echo oops >&2")
print("last")
`)
	if r.ExitCode != 0 {
		t.Errorf("exit code %d", r.ExitCode)
	}
	if r.Stdout != "out\nhi\nlast\n" {
		t.Errorf("stdout %q", r.Stdout)
	}
	if r.Stderr != "err\noops\n" {
		t.Errorf("stderr %q", r.Stderr)
	}
	// Nothing of one block's output leaks into the next.
	if r := runCode(t, s, "print(2)"); r.Stdout != "2\n" || r.Stderr != "" {
		t.Errorf("next block: %+v", r)
	}
	// Large output comes back whole.
	r = runCode(t, s, "import sys\nsys.stdout.write('y' * 3_000_000)\n")
	if len(r.Stdout) != 3_000_000 || strings.Trim(r.Stdout, "y") != "" || r.StdoutDropped != 0 {
		t.Errorf("large output: %d bytes, %d dropped", len(r.Stdout), r.StdoutDropped)
	}
}

func number(v any) (float64, bool) {
	switch v := v.(type) {
	case float64:
		return v, true
	case int:
		return float64(v), true
	case int64:
		return float64(v), true
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	}
	return 0, false
}

func TestAttachToolCalls(t *testing.T) {
	var mu sync.Mutex
	var calls []string
	tools := transport.ToolHandlerFunc(func(ctx context.Context, c transport.ToolCall) transport.ToolResult {
		mu.Lock()
		calls = append(calls, c.Name)
		mu.Unlock()
		switch c.Name {
		case "add":
			a, ok1 := number(c.Args["a"])
			b, ok2 := number(c.Args["b"])
			if !ok1 || !ok2 {
				return transport.Errorf("TypeError", "add wants numbers, got %v", c.Args)
			}
			return transport.ToolResult{Value: map[string]any{"sum": a + b, "echo": c.Args["note"]}}
		case "boom":
			return transport.Errorf("ValueError", "boom: %v", c.Args["why"])
		}
		return transport.Errorf("ToolNotFound", "no tool %s", c.Name)
	})
	s, _, _ := attachSession(t, tools)
	r := runCode(t, s, `import codemode_runtime as rt
res = rt.call("add", {"a": 2, "b": 3, "note": "ünïcode"})
print(res["sum"], res["echo"])
try:
    rt.call("boom", {"why": "because"})
except rt.ToolError as e:
    print("caught", e.type, e.message)
`)
	if r.ExitCode != 0 || r.Stdout != "5 ünïcode\ncaught ValueError boom: because\n" {
		t.Errorf("tool calls: %+v", r)
	}
	// An uncaught tool error fails the block with a traceback.
	r = runCode(t, s, "import codemode_runtime as rt\nrt.call('boom', {'why': 'uncaught'})\n")
	if r.ExitCode != 1 || !strings.Contains(r.Stderr, "boom: uncaught") || r.Reset {
		t.Errorf("uncaught tool error: %+v", r)
	}
	// Calls from threads run concurrently, and all come back.
	r = runCode(t, s, `import codemode_runtime as rt, threading
out = [None] * 8
def call(i):
    out[i] = rt.call("add", {"a": i, "b": 100})["sum"]
ts = [threading.Thread(target=call, args=(i,)) for i in range(8)]
for t in ts: t.start()
for t in ts: t.join()
print(out)
`)
	if r.Stdout != "[100, 101, 102, 103, 104, 105, 106, 107]\n" {
		t.Errorf("threaded calls: %+v", r)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 11 {
		t.Errorf("the handler ran %d calls, want 11: %v", len(calls), calls)
	}
}

// inotifyWatches reports whether this process holds an inotify descriptor
// that watches the directory dir.
func inotifyWatches(t *testing.T, dir string) bool {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	want := "ino:" + strconv.FormatUint(st.Ino, 16) + " "
	ents, _ := os.ReadDir("/proc/self/fd")
	for _, e := range ents {
		if l, _ := os.Readlink("/proc/self/fd/" + e.Name()); l != "anon_inode:inotify" {
			continue
		}
		info, _ := os.ReadFile("/proc/self/fdinfo/" + e.Name())
		if bytes.Contains(info, []byte(want)) {
			return true
		}
	}
	return false
}

func TestAttachFiles(t *testing.T) {
	s, _, cfg := attachSession(t, nil)
	// The host holds the supervisor's inotify descriptor, and so takes the
	// shortcut when no event is queued, unless inotify is unavailable.
	watching := inotifyWatches(t, cfg.Workdir)
	if fd, err := unix.InotifyInit1(unix.IN_CLOEXEC); err == nil {
		unix.Close(fd)
		if !watching {
			t.Errorf("inotify works here, but the host holds no inotify descriptor watching the workspace")
		}
	}
	t.Logf("host watches the workspace with inotify: %v", watching)

	r := runCode(t, s, "open('a.txt', 'w').write('hello')\nimport os\nos.makedirs('d/e')\nopen('d/e/b.bin', 'wb').write(bytes(range(256)) * 40)\n")
	want := []transport.File{{Path: "a.txt", Size: 5}, {Path: "d/e/b.bin", Size: 10240}}
	if r.ExitCode != 0 || !slices.Equal(r.Files, want) {
		t.Errorf("files of the writing block: %+v, want %v", r, want)
	}
	if r := runCode(t, s, "x = 1"); len(r.Files) != 0 {
		t.Errorf("a block that writes nothing lists %v", r.Files)
	}
	if r := runCode(t, s, "print(open('a.txt').read())"); len(r.Files) != 0 || r.Stdout != "hello\n" {
		t.Errorf("a block that only reads: %+v", r)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	data, err := s.ReadFile(ctx, "a.txt")
	if err != nil || string(data) != "hello" {
		t.Errorf("ReadFile(a.txt) = %q, %v", data, err)
	}
	data, err = s.ReadFile(ctx, "d/e/b.bin")
	if err != nil || !bytes.Equal(data, bytes.Repeat(func() []byte {
		b := make([]byte, 256)
		for i := range b {
			b[i] = byte(i)
		}
		return b
	}(), 40)) {
		t.Errorf("ReadFile(d/e/b.bin) = %d bytes, %v", len(data), err)
	}
	for _, bad := range []string{"missing.txt", "../a.txt", "/etc/passwd", "d", "d/../a.txt", ""} {
		if data, err := s.ReadFile(ctx, bad); err == nil {
			t.Errorf("ReadFile(%q) = %q, want an error", bad, data)
		}
	}
	// The session goes on after failed reads.
	if r := runCode(t, s, "print(x)"); r.Stdout != "1\n" {
		t.Errorf("after ReadFile: %+v", r)
	}

	// A background thread writes after its block ended and before the
	// next one starts: the next block lists what it wrote. The thread waits
	// for a file outside the workspace, which the test creates between the
	// blocks, so that the writes happen exactly then.
	sig := t.TempDir()
	r = runCode(t, s, fmt.Sprintf(`import os, threading, time
SIG = %q
def later():
    while not os.path.exists(os.path.join(SIG, "go")):
        time.sleep(0.01)
    with open("late.txt", "w") as f:
        f.write("late!")
    os.makedirs("new/dir")
    with open("new/dir/deep.txt", "w") as f:
        f.write("deep")
    with open("a.txt", "w") as f:
        f.write("HELLO")
    open(os.path.join(SIG, "done"), "w").close()
threading.Thread(target=later, daemon=True).start()
`, sig))
	if r.ExitCode != 0 || len(r.Files) != 0 {
		t.Errorf("the block that starts the thread: %+v", r)
	}
	if err := os.WriteFile(filepath.Join(sig, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitForFile(t, filepath.Join(sig, "done"))
	r = runCode(t, s, "pass")
	want = []transport.File{{Path: "a.txt", Size: 5}, {Path: "late.txt", Size: 5}, {Path: "new/dir/deep.txt", Size: 4}}
	if !slices.Equal(r.Files, want) {
		t.Errorf("the block after the background writes lists %v, want %v", r.Files, want)
	}
	if r := runCode(t, s, "pass"); len(r.Files) != 0 {
		t.Errorf("the block after that lists %v", r.Files)
	}
	data, err = s.ReadFile(ctx, "new/dir/deep.txt")
	if err != nil || string(data) != "deep" {
		t.Errorf("ReadFile(new/dir/deep.txt) = %q, %v", data, err)
	}
	if inotifyWatches(t, cfg.Workdir) != watching {
		t.Errorf("the host's inotify watch changed from %v", watching)
	}
}

func waitForFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestAttachTimeoutKeepsState(t *testing.T) {
	s, _, _ := attachSession(t, nil)
	runCode(t, s, "x = 5")
	r := run(t, s, transport.Block{Code: "print('started', flush=True)\nwhile True: pass\n", Timeout: time.Second})
	if !r.Stopped || r.Reset || r.ExitCode == 0 || r.Stdout != "started\n" || !strings.Contains(r.Stderr, "stopped") {
		t.Errorf("timed-out block: %+v", r)
	}
	if r := runCode(t, s, "print(x)"); r.Stdout != "5\n" || r.Reset || r.Stopped {
		t.Errorf("after the timeout: %+v", r)
	}
}

func TestAttachWorkerExitResets(t *testing.T) {
	s, sp, _ := attachSession(t, nil)
	runCode(t, s, "y = 1")
	before := pythonKids(t, sp.pid)
	r := runCode(t, s, "import os\nprint('bye', flush=True)\nos._exit(3)\n")
	if !r.Reset || r.ExitCode != 3 || r.Stdout != "bye\n" || !strings.Contains(r.Stderr, "exit code 3") {
		t.Errorf("exiting block: %+v", r)
	}
	if r := runCode(t, s, "print('y' in globals())\nprint(6 * 7)"); r.Stdout != "False\n42\n" || r.Reset {
		t.Errorf("after the exit: %+v", r)
	}
	after := pythonKids(t, sp.pid)
	if len(after) != 1 || slices.Equal(before, after) {
		t.Errorf("the supervisor's workers: %v before the exit, %v after; want one new one", before, after)
	}
	// Again, with the block killed by a signal.
	r = runCode(t, s, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
	if !r.Reset || r.ExitCode != 128+9 {
		t.Errorf("killed block: %+v", r)
	}
	if r := runCode(t, s, "print('alive')"); r.Stdout != "alive\n" {
		t.Errorf("after the kill: %+v", r)
	}
}

// proc is a process as /proc shows it, with its start time, so that a
// reused pid is not taken for it.
type proc struct {
	pid   int
	start string
	comm  string
}

// procStat returns a process's state and start time.
func procStat(pid int) (state, start, comm string, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", "", "", false
	}
	i, j := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if i < 0 || j < i {
		return "", "", "", false
	}
	f := strings.Fields(string(b[j+1:]))
	if len(f) < 20 {
		return "", "", "", false
	}
	return f[0], f[19], string(b[i+1 : j]), true // field 3 is the state, 22 the start time
}

func snapshot(pid int) (proc, bool) {
	_, start, comm, ok := procStat(pid)
	return proc{pid, start, comm}, ok
}

// alive reports whether p still runs: it exists, is not a zombie, and is
// the same process.
func (p proc) alive() bool {
	state, start, _, ok := procStat(p.pid)
	return ok && start == p.start && state != "Z" && state != "X"
}

// pythonKids lists the supervisor's live children that run Python.
func pythonKids(t *testing.T, pid int) []int {
	t.Helper()
	var out []int
	for _, k := range supervisor.Descendants(pid) {
		if p, ok := snapshot(k); ok && strings.HasPrefix(p.comm, "python") {
			if state, _, _, _ := procStat(k); state != "Z" {
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return out
}

func TestAttachCloseLeavesNoProcess(t *testing.T) {
	s, sp, _ := attachSession(t, nil)
	r := runCode(t, s, "import subprocess\np = subprocess.Popen(['sleep', '300'])\nprint(p.pid)\n")
	sleepPid, err := strconv.Atoi(strings.TrimSpace(r.Stdout))
	if err != nil {
		t.Fatalf("block: %+v", r)
	}
	self, ok := snapshot(sp.pid)
	if !ok {
		t.Fatal("the supervisor is gone before the session closed")
	}
	procs := []proc{self}
	var comms []string
	for _, k := range supervisor.Descendants(sp.pid) {
		if p, ok := snapshot(k); ok {
			procs = append(procs, p)
			comms = append(comms, p.comm)
		}
	}
	hasPython := slices.ContainsFunc(comms, func(c string) bool { return strings.HasPrefix(c, "python") })
	hasSleep := slices.ContainsFunc(procs, func(p proc) bool { return p.pid == sleepPid })
	if !hasPython || !hasSleep {
		t.Fatalf("the supervisor's descendants %v (%v) lack the worker or its sleep (%d)", procs, comms, sleepPid)
	}

	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	select {
	case <-sp.exited:
	default:
		t.Errorf("Close returned before the supervisor exited")
	}
	if code := sp.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("the supervisor exited with %v:\n%s", sp.cmd.ProcessState, sp.stderr.String())
	}
	// The supervisor killed its descendants before it exited; they may
	// linger as zombies until whoever inherited them reaps them.
	deadline := time.Now().Add(30 * time.Second)
	for _, p := range procs {
		for p.alive() {
			if time.Now().After(deadline) {
				t.Errorf("process %d (%s) survived the session", p.pid, p.comm)
				_ = syscall.Kill(p.pid, syscall.SIGKILL)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// Closing again is harmless.
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := s.Exec(context.Background(), transport.Block{Code: "pass"}); err == nil {
		t.Error("Exec after Close succeeded")
	}
}

// --- a hostile supervisor ----------------------------------------------------

// fakeSup is a fake supervisor's end of the socket: the connection, and
// the socket itself, for bytes that no supervisor would send.
type fakeSup struct {
	*supervisor.Conn
	raw *os.File
}

// Close closes both.
func (c *fakeSup) Close() error {
	c.raw.Close()
	return c.Conn.Close()
}

// dupFile returns a file of its own for f's descriptor.
func dupFile(f *os.File) (*os.File, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	fd := -1
	var derr error
	if err := rc.Control(func(s uintptr) { fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil || derr != nil {
		return nil, errors.Join(err, derr)
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}

// attachHostile attaches a session to a fake supervisor: behave gets the
// supervisor's end of the socket and speaks for it. Attach must fail, and
// the host must release every descriptor it got.
func attachHostile(t *testing.T, behave func(t *testing.T, c *fakeSup)) error {
	t.Helper()
	base := fdcheck.Baseline(t)
	defer fdcheck.Check(t, base)
	hostEnd, sandboxEnd, err := SocketPair()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := dupFile(sandboxEnd)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := supervisor.NewConn(sandboxEnd, supervisor.HostOps)
	if err != nil {
		hostEnd.Close()
		raw.Close()
		t.Fatal(err)
	}
	c := &fakeSup{conn, raw}
	behaved := make(chan struct{})
	go func() {
		defer close(behaved)
		defer c.Close()
		defer conn.DropFDs()
		behave(t, c)
		// Read until the host hangs up.
		for {
			m, fds, err := c.Recv()
			supervisor.CloseFDs(fds)
			if err != nil {
				return
			}
			t.Logf("the host sent %+v after the reply", m)
		}
	}()
	type result struct {
		s   *wire.Client
		err error
	}
	done := make(chan result, 1)
	closed := make(chan struct{})
	go func() {
		cfg := Config{Python: testPython, Workdir: t.TempDir()}
		s, err := Attach(context.Background(), hostEnd, cfg, transport.SessionConfig{}, wire.ClientOptions{
			OnClose: func() error { close(closed); return nil },
		}, nil)
		done <- result{s, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(45 * time.Second): // under supSpawnTimeout: not a timeout
		c.Close()
		t.Fatal("Attach did not give up on the supervisor's answer")
	}
	if r.s != nil {
		r.s.Close()
		t.Fatal("Attach succeeded")
	}
	select {
	case <-closed:
	default:
		t.Error("Attach failed without running OnClose")
	}
	select {
	case <-behaved:
	case <-time.After(30 * time.Second):
		t.Error("the host did not hang up on the fake supervisor")
		c.Close()
		<-behaved
	}
	return r.err
}

func TestAttachRejectsNonPipes(t *testing.T) {
	for _, tc := range []struct {
		name string
		bad  int // which descriptor is not a pipe
		open func(t *testing.T) *os.File
	}{
		{"regular file", 2, func(t *testing.T) *os.File {
			f, err := os.CreateTemp(t.TempDir(), "notapipe")
			if err != nil {
				t.Fatal(err)
			}
			return f
		}},
		{"device", 0, func(t *testing.T) *os.File {
			f, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}},
		{"socket", 3, func(t *testing.T) *os.File {
			a, b, err := SocketPair()
			if err != nil {
				t.Fatal(err)
			}
			b.Close()
			return a
		}},
		{"directory", 1, func(t *testing.T) *os.File {
			f, err := os.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return f
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := attachHostile(t, func(t *testing.T, c *fakeSup) {
				// The first worker's pipes come unasked.
				rs, ws := pipes(t, 2)
				files := []*os.File{ws[0], rs[1], ws[1], rs[0]}
				bad := tc.open(t)
				files[tc.bad] = bad
				err := c.Send(supervisor.Msg{Op: "spawned", Pid: 1}, files...)
				bad.Close()
				for i := range rs {
					rs[i].Close()
					ws[i].Close()
				}
				if err != nil {
					t.Error(err)
				}
			})
			want := fmt.Sprintf("descriptor %d is not a pipe", tc.bad)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Attach: %v; want an error saying %q", err, want)
			}
		})
	}
}

func TestAttachRejectsBadAnswers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func(t *testing.T, c *fakeSup)
		want   string
	}{
		{"garbage", func(t *testing.T, c *fakeSup) {
			_, _ = c.raw.Write([]byte("this is not a message\n"))
		}, "protocol error"},
		{"unknown field", func(t *testing.T, c *fakeSup) {
			_, _ = c.raw.Write([]byte(`{"op":"spawned","fds":0,"pid":1,"root":true}` + "\n"))
		}, "protocol error"},
		{"spawned without descriptors", func(t *testing.T, c *fakeSup) {
			_, _ = c.raw.Write([]byte(`{"op":"spawned","fds":4,"pid":1}` + "\n"))
		}, "protocol error"},
		{"host operation", func(t *testing.T, c *fakeSup) {
			_ = c.Send(supervisor.Msg{Op: "spawn"})
		}, "protocol error"},
		{"wrong answer", func(t *testing.T, c *fakeSup) {
			_ = c.Send(supervisor.Msg{Op: "killed"})
		}, "killed in answer to"},
		{"error", func(t *testing.T, c *fakeSup) {
			_ = c.Send(supervisor.Msg{Op: "error", Error: "fork: no more processes"})
		}, "fork: no more processes"},
		{"hang up", func(t *testing.T, c *fakeSup) {
			c.Close()
		}, "lost the supervisor"},
		{"a line without end", func(t *testing.T, c *fakeSup) {
			_, _ = c.raw.Write([]byte(`{"op":"spawned","fds":4,"pid":1}`))
			c.Close()
		}, "lost the supervisor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := attachHostile(t, tc.answer)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Attach: %v; want an error saying %q", err, tc.want)
			}
		})
	}
}

// TestAttachSupervisorNeverAnswers: a supervisor that never sends the
// first worker's pipes holds Attach up for supSpawnTimeout (60s) at most;
// a caller's context that ends sooner must end Attach sooner.
func TestAttachSupervisorNeverAnswers(t *testing.T) {
	base := fdcheck.Baseline(t)
	defer fdcheck.Check(t, base)
	hostEnd, sandboxEnd, err := SocketPair()
	if err != nil {
		t.Fatal(err)
	}
	defer sandboxEnd.Close() // silent: it never says a word
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		cfg := Config{Python: testPython, Workdir: t.TempDir()}
		s, err := Attach(ctx, hostEnd, cfg, transport.SessionConfig{}, wire.ClientOptions{}, nil)
		if s != nil {
			s.Close()
			err = errors.New("Attach succeeded")
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Attach: %v; want the context's error", err)
		}
	case <-time.After(5 * time.Second):
		// Hang up, so that Attach returns now rather than after the
		// spawn timeout.
		sandboxEnd.Close()
		err := <-done
		t.Fatalf("a context that ended did not end Attach while it waited for the supervisor's first answer (ended by hanging up: %v)", err)
	}
}

// --- a supervisor behind a tampering relay ---------------------------------

// tamperRelay relays the supervisor's protocol between a host and a real
// supervisor, passing descriptors on, and lets tamper change what the
// supervisor sends: it returns the message and files to send instead (the
// files it returns are closed after sending).
func tamperRelay(t *testing.T, supEnd *os.File, tamper func(m supervisor.Msg, files []*os.File) (supervisor.Msg, []*os.File)) (hostEnd *os.File) {
	t.Helper()
	hostEnd, relayEnd, err := SocketPair()
	if err != nil {
		t.Fatal(err)
	}
	toHost, err := supervisor.NewConn(relayEnd, supervisor.HostOps)
	if err != nil {
		t.Fatal(err)
	}
	toSup, err := supervisor.NewConn(supEnd, supervisor.SupervisorOps)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // host → supervisor
		defer wg.Done()
		defer toSup.Close()
		for {
			m, fds, err := toHost.Recv()
			supervisor.CloseFDs(fds)
			if err != nil || toSup.Send(m) != nil {
				return
			}
		}
	}()
	go func() { // supervisor → host
		defer wg.Done()
		defer toHost.Close()
		for {
			m, fds, err := toSup.Recv()
			if err != nil {
				return
			}
			var files []*os.File
			for _, fd := range fds {
				files = append(files, os.NewFile(uintptr(fd), "relayed"))
			}
			m, files = tamper(m, files)
			err = toHost.Send(m, files...)
			for _, f := range files {
				f.Close()
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		toHost.Close()
		toSup.Close()
		wg.Wait()
		shut(toHost)
		shut(toSup)
	})
	return hostEnd
}

// attachTampered runs a real supervisor behind a tamperRelay.
func attachTampered(t *testing.T, cfg Config, tamper func(m supervisor.Msg, files []*os.File) (supervisor.Msg, []*os.File)) (*wire.Client, *supervisorProc) {
	t.Helper()
	needPython(t)
	supEnd, sp := startSupervisor(t, cfg)
	hostEnd := tamperRelay(t, supEnd, tamper)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := Attach(ctx, hostEnd, cfg, transport.SessionConfig{}, wire.ClientOptions{OnClose: sp.wait}, nil)
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, sp
}

// TestAttachRefusesOversizedFile: the host refuses file data larger than
// it asked for, whatever the supervisor says.
func TestAttachRefusesOversizedFile(t *testing.T) {
	cfg := Config{Python: testPython, Workdir: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin"}, MaxFileBytes: 100}
	s, _ := attachTampered(t, cfg, func(m supervisor.Msg, files []*os.File) (supervisor.Msg, []*os.File) {
		if m.Op == "file" && m.Path == "big.txt" {
			m.Error, m.Data = "", bytes.Repeat([]byte("z"), 101)
		}
		return m, files
	})
	runCode(t, s, "open('small.txt', 'w').write('s' * 100)\nopen('big.txt', 'w').write('b')\n")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if data, err := s.ReadFile(ctx, "small.txt"); err != nil || len(data) != 100 {
		t.Errorf("ReadFile(small.txt) = %d bytes, %v", len(data), err)
	}
	if data, err := s.ReadFile(ctx, "big.txt"); err == nil || !strings.Contains(err.Error(), "protocol error") {
		t.Errorf("ReadFile(big.txt) = %d bytes, %v; want a protocol error", len(data), err)
	}
	// The session goes on.
	if r := runCode(t, s, "print('ok')"); r.Stdout != "ok\n" {
		t.Errorf("after the refused file: %+v", r)
	}
}

// TestAttachLaterSpawnNotAPipe: when the pipes of a worker started after a
// reset are not pipes, the session ends with an error saying so, and
// closing it leaves no process behind.
func TestAttachLaterSpawnNotAPipe(t *testing.T) {
	cfg := Config{Python: testPython, Workdir: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin"}}
	var spawned int
	s, sp := attachTampered(t, cfg, func(m supervisor.Msg, files []*os.File) (supervisor.Msg, []*os.File) {
		if m.Op == "spawned" {
			if spawned++; spawned == 2 {
				f, err := os.CreateTemp(t.TempDir(), "notapipe")
				if err != nil {
					t.Error(err)
					return m, files
				}
				files[1].Close()
				files[1] = f
			}
		}
		return m, files
	})
	runCode(t, s, "x = 1")
	var procs []proc
	for _, k := range append(supervisor.Descendants(sp.pid), sp.pid) {
		if p, ok := snapshot(k); ok {
			procs = append(procs, p)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := s.Exec(ctx, transport.Block{Code: "import os\nos._exit(3)"})
	if err == nil || !strings.Contains(err.Error(), "descriptor 1 is not a pipe") {
		t.Errorf("Exec: %+v, %v; want the session to end because descriptor 1 is not a pipe", r, err)
	}
	// Close may report why the session ended.
	if err := s.Close(); err != nil {
		t.Logf("Close: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, p := range procs {
		for p.alive() {
			if time.Now().After(deadline) {
				t.Errorf("process %d (%s) survived the session", p.pid, p.comm)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// TestAttachCloseReleasesDescriptors: a session, its workers and its
// resets leave no descriptor open in the host once closed. The garbage
// collector is off meanwhile, so that it does not close what the session
// left open.
func TestAttachCloseReleasesDescriptors(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	base := fdcheck.Baseline(t)
	s, _, _ := attachSession(t, nil)
	runCode(t, s, "open('a.txt', 'w').write('a')")
	runCode(t, s, "import os\nos._exit(3)") // a second worker
	runCode(t, s, "print(1)")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		extra := fdcheck.Added(t, base)
		if len(extra) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("descriptors left open: %s", strings.Join(extra, " "))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
