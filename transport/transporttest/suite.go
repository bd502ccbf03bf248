package transporttest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/internal/protocol/wire"
	"github.com/adk-codemode/codemode/transport"
)

// NewBackend returns the backend under test.
type NewBackend func(t *testing.T) transport.Backend

// Options say what the backend under test promises beyond the contract.
// The zero value is a plain process backend's: no more than the contract.
type Options struct {
	// Isolated: the backend is a sandbox, so the files it is given are
	// read-only to the code even when the host runs as root, and a fork
	// bomb meets its task limit (a plain process gets a bounded one).
	Isolated bool
}

// Run runs the whole suite against the backend that newBackend returns,
// holding it to what opts say it promises. Its subtests run in parallel;
// Run may be called from several tests, with different options, at once.
func Run(t *testing.T, newBackend NewBackend, opts Options) {
	tests := []struct {
		name string
		fn   func(*testing.T, NewBackend)
	}{
		{"Environment", testEnvironment},
		{"StateAcrossBlocks", testStateAcrossBlocks},
		{"OutputCapture", testOutputCapture},
		{"OutputBelongsToItsBlock", testOutputBelongsToItsBlock},
		{"ExitCodes", testExitCodes},
		{"CodeTooLarge", testCodeTooLarge},
		{"EnvAllowlist", testEnvAllowlist},
		{"ToolCall", testToolCall},
		{"ConcurrentToolCalls", testConcurrentToolCalls},
		{"ToolErrors", testToolErrors},
		{"TimeoutKeepsState", testTimeoutKeepsState},
		{"TimeoutCancelsToolCalls", testTimeoutCancelsToolCalls},
		{"InterruptAmidToolCalls", testInterruptAmidToolCalls},
		{"GraceReset", testGraceReset},
		{"ContextCancel", testContextCancel},
		{"OutputBound", testOutputBound},
		{"WorkspaceFiles", testWorkspaceFiles},
		{"WorkerCrash", testWorkerCrash},
		{"Files", func(t *testing.T, nb NewBackend) { testFiles(t, nb, opts.Isolated) }},
		{"Close", testClose},
		{"ForkedChildExits", testForkedChildExits},
		{"ForkedChildrenReturn", testForkedChildrenReturn},
		{"ForkBomb", func(t *testing.T, nb NewBackend) { testForkBomb(t, nb, opts.Isolated) }},
		{"LateInterrupt", testLateInterrupt},
		{"InterruptAfterTheBlock", testInterruptAfterTheBlock},
		{"EarlierBlocksThreads", testEarlierBlocksThreads},
		{"StreamsSoundEachBlock", testStreamsSoundEachBlock},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newBackend)
		})
	}
}

// open starts a session that is closed when the test ends.
func open(t *testing.T, nb NewBackend, cfg transport.SessionConfig) transport.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := nb(t).Open(ctx, cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// exec runs a block that must reach the sandbox and come back.
func exec(t *testing.T, s transport.Session, b transport.Block) *transport.Result {
	t.Helper()
	if b.Timeout == 0 {
		b.Timeout = 30 * time.Second
	}
	r, err := s.Exec(context.Background(), b)
	if err != nil {
		t.Fatalf("Exec(%q): %v", b.Code, err)
	}
	return r
}

func run(t *testing.T, s transport.Session, code string) *transport.Result {
	t.Helper()
	return exec(t, s, transport.Block{Code: code})
}

func wantOK(t *testing.T, r *transport.Result) {
	t.Helper()
	if r.ExitCode != 0 {
		t.Fatalf("exit code %d, stderr:\n%s", r.ExitCode, r.Stderr)
	}
}

func testEnvironment(t *testing.T, nb NewBackend) {
	s := open(t, nb, transport.SessionConfig{})
	env := s.Environment()
	if env.PythonVersion == "" || strings.Count(env.PythonVersion, ".") != 2 {
		t.Errorf("PythonVersion = %q, want X.Y.Z", env.PythonVersion)
	}
	r := run(t, s, "import platform; print(platform.python_version(), end='')")
	wantOK(t, r)
	if r.Stdout != env.PythonVersion {
		t.Errorf("ready reported Python %q, the worker runs %q", env.PythonVersion, r.Stdout)
	}
	// What the report lists can be imported, and the builtins a normal
	// interpreter start provides are there.
	var names []string
	for imp := range env.Packages {
		names = append(names, fmt.Sprintf("%q", imp))
	}
	slices.Sort(names)
	r = run(t, s, "import importlib.util\nnames = ["+strings.Join(names, ", ")+"]\n"+
		"print([n for n in names if importlib.util.find_spec(n) is None], callable(exit), callable(quit), callable(help))")
	if r.Stdout != "[] True True True\n" {
		t.Errorf("reported packages not importable, or builtins missing: %s%s", r.Stdout, r.Stderr)
	}
	for imp, dists := range env.Packages {
		if imp == "" || len(dists) == 0 {
			t.Errorf("package report entry %q => %v: want an import name with providers", imp, dists)
		}
		for _, deny := range []string{"pip", "setuptools", "wheel"} {
			if _, ok := dists[deny]; ok {
				t.Errorf("package report lists %s under %q; it is on the denylist", deny, imp)
			}
		}
	}
}

func testStateAcrossBlocks(t *testing.T, nb NewBackend) {
	s := open(t, nb, transport.SessionConfig{})
	wantOK(t, run(t, s, "import json\ncounter = 41\ndef bump():\n    global counter\n    counter += 1\n    return counter"))
	r := run(t, s, "print(bump(), json.dumps([1]), __name__)")
	wantOK(t, r)
	if r.Stdout != "42 [1] __main__\n" {
		t.Errorf("stdout = %q, want the function, import and variable from the first block", r.Stdout)
	}
}

func testOutputCapture(t *testing.T, nb NewBackend) {
	s := open(t, nb, transport.SessionConfig{})
	r := run(t, s, `
import os, subprocess, sys
print("py-out")
print("py-err", file=sys.stderr)
os.write(1, b"fd-out\n")
os.system("echo shell-out; echo shell-err >&2")
subprocess.run([sys.executable, "-c", "print('child-out')"])
print("ünïcødé ✓")
`)
	wantOK(t, r)
	for _, want := range []string{"py-out\n", "fd-out\n", "shell-out\n", "child-out\n", "ünïcødé ✓\n"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("stdout %q lacks %q", r.Stdout, want)
		}
	}
	for _, want := range []string{"py-err\n", "shell-err\n"} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("stderr %q lacks %q", r.Stderr, want)
		}
	}
	// Output belongs to its block: the next block starts empty.
	r = run(t, s, "pass")
	if r.Stdout != "" || r.Stderr != "" {
		t.Errorf("a silent block got stdout %q stderr %q", r.Stdout, r.Stderr)
	}
}

// testOutputBelongsToItsBlock: what any process wrote before a block ended
// is that block's, however much; what a background process writes later
// goes to the next block.
func testOutputBelongsToItsBlock(t *testing.T, nb NewBackend) {
	s := open(t, nb, transport.SessionConfig{})
	r := run(t, s, `
import subprocess, sys
# A child that writes more than a pipe holds, and ends with the block.
subprocess.run([sys.executable, "-c", "import os; os.write(1, b'x' * 300000); os.write(2, b'y' * 300000)"])
# One that writes after the block has ended: it waits for a file that the
# next block creates.
bg = subprocess.Popen([sys.executable, "-c", "import os, time\nwhile not os.path.exists('go-on'): time.sleep(0.01)\nprint('late', flush=True)"])
print("early")
`)
	wantOK(t, r)
	if want := strings.Repeat("x", 300000) + "early\n"; r.Stdout != want {
		t.Errorf("stdout has %d bytes (%d x), want %d: 300000 x then early", len(r.Stdout), strings.Count(r.Stdout, "x"), len(want))
	}
	if r.Stderr != strings.Repeat("y", 300000) {
		t.Errorf("stderr has %d bytes, want the child's 300000", len(r.Stderr))
	}
	if !r.Background {
		t.Error("Background is false while a process the block started still runs")
	}
	r = run(t, s, "open('go-on', 'w').close(); bg.wait()")
	if r.Stdout != "late\n" {
		t.Errorf("the next block's stdout is %q, want the background process's late line", r.Stdout)
	}
	if r.Background {
		t.Error("Background is true after the block's process ended")
	}
	r = run(t, s, "import threading\nev = threading.Event()\nth = threading.Thread(target=ev.wait)\nth.start()")
	if !r.Background {
		t.Error("Background is false while a thread the block started still runs")
	}
	r = run(t, s, "ev.set(); th.join()")
	if r.Background {
		t.Error("Background is true after the thread ended")
	}
}

// testCodeTooLarge: a block larger than a frame may be fails with a clear
// message, without running and without breaking the session.
func testCodeTooLarge(t *testing.T, nb NewBackend) {
	s := open(t, nb, transport.SessionConfig{})
	big := "x = 1\n# " + strings.Repeat("a", wire.MaxFrameSize)
	r, err := s.Exec(context.Background(), transport.Block{Code: big})
	switch {
	case err != nil:
		if !strings.Contains(err.Error(), "too large") {
			t.Errorf("err = %v, want one that says the code is too large", err)
		}
	case r.ExitCode == 0 || !strings.Contains(r.Stderr, "did not run"):
		t.Errorf("a block over the frame limit: %+v, want a failure that says it did not run", r)
	}
	if r := run(t, s, "print('x' in globals())"); r.Stdout != "False\n" {
		t.Errorf("after the large block: stdout %q, want False (it must not have run)", r.Stdout)
	}
}

func testExitCodes(t *testing.T, nb NewBackend) {
	s := open(t, nb, transport.SessionConfig{})
	cases := []struct {
		code     string
		exit     int
		inStderr []string
	}{
		{"x = 1", 0, nil},
		{"def f(:\n  pass", 1, []string{`File "<code-mode>", line 1`, "SyntaxError"}},
		{"a = 1\nraise ValueError('boom')", 1, []string{"Traceback", `File "<code-mode>", line 2`, "raise ValueError('boom')", "ValueError: boom"}},
		{"def g():\n    return 1/0\ng()", 1, []string{`File "<code-mode>", line 3`, `File "<code-mode>", line 2, in g`, "ZeroDivisionError"}},
		{"raise SystemExit", 0, nil},
		{"raise SystemExit(3)", 3, nil},
		{"import sys; sys.exit('bad input')", 1, []string{"bad input"}},
		{"raise KeyboardInterrupt", 1, []string{"KeyboardInterrupt"}},
	}
	for _, c := range cases {
		r := run(t, s, c.code)
		if r.ExitCode != c.exit {
			t.Errorf("%q: exit code %d, want %d (stderr %q)", c.code, r.ExitCode, c.exit, r.Stderr)
		}
		for _, w := range c.inStderr {
			if !strings.Contains(r.Stderr, w) {
				t.Errorf("%q: stderr lacks %q:\n%s", c.code, w, r.Stderr)
			}
		}
		if strings.Contains(r.Stderr, "runner") || strings.Contains(r.Stderr, `File "<string>"`) {
			t.Errorf("%q: traceback shows the runner's own frames:\n%s", c.code, r.Stderr)
		}
	}
}

// allowedEnv is the runner's allowlist.
var allowedEnv = []string{"PATH", "HOME", "USER", "LANG", "LANGUAGE", "TERM", "TMPDIR", "TEMP", "TMP", "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE"}

func testEnvAllowlist(t *testing.T, nb NewBackend) {
	s := open(t, nb, transport.SessionConfig{})
	r := run(t, s, "import os\nfor k in sorted(os.environ): print(k)\nimport subprocess\nsubprocess.run(['env'])")
	wantOK(t, r)
	for _, line := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
		k, _, _ := strings.Cut(line, "=")
		if !slices.Contains(allowedEnv, k) && !strings.HasPrefix(k, "LC_") {
			t.Errorf("environment variable %q is not on the allowlist", k)
		}
	}
	// Nothing of the host's own environment comes through either.
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if !slices.Contains(allowedEnv, k) && len(v) > 3 && strings.Contains(r.Stdout, k+"=") {
			t.Errorf("host environment variable %s reached the sandbox", k)
		}
	}
}

func echoTools() transport.ToolHandler {
	return transport.ToolHandlerFunc(func(ctx context.Context, c transport.ToolCall) transport.ToolResult {
		return transport.ToolResult{Value: map[string]any{"name": c.Name, "args": c.Args}}
	})
}

func testToolCall(t *testing.T, nb NewBackend) {
	var calls []transport.ToolCall
	var mu sync.Mutex
	h := transport.ToolHandlerFunc(func(ctx context.Context, c transport.ToolCall) transport.ToolResult {
		mu.Lock()
		calls = append(calls, c)
		mu.Unlock()
		if c.Name == "echo" {
			return transport.ToolResult{Value: c.Args}
		}
		a, _ := c.Args["a"].(float64)
		b, _ := c.Args["b"].(float64)
		return transport.ToolResult{Value: map[string]any{"sum": a + b, "list": []any{1, "two", nil, true}}}
	})
	s := open(t, nb, transport.SessionConfig{Tools: h})
	r := run(t, s, "from codemode_runtime import call\nres = call('math.add', {'a': 2, 'b': 3.5})\nprint(res['sum'], res['list'])")
	wantOK(t, r)
	if r.Stdout != "5.5 [1, 'two', None, True]\n" {
		t.Errorf("stdout = %q", r.Stdout)
	}
	mu.Lock()
	if len(calls) != 1 || calls[0].Name != "math.add" || calls[0].ID == "" {
		t.Errorf("handler saw %+v, want one call to math.add with an id", calls)
	}
	mu.Unlock()
	// A large argument and result round-trip.
	r = run(t, s, "big = 'é' * 1_000_000\nout = call('echo', {'s': big})\nprint(out['s'] == big)")
	if r.Stdout != "True\n" {
		t.Errorf("a 2 MB argument did not round-trip: stdout %q stderr %q", r.Stdout, r.Stderr)
	}
}

func testConcurrentToolCalls(t *testing.T, nb NewBackend) {
	const n = 6
	var inFlight, peak atomic.Int32
	all := make(chan struct{})
	var once sync.Once
	h := transport.ToolHandlerFunc(func(ctx context.Context, c transport.ToolCall) transport.ToolResult {
		v := inFlight.Add(1)
		if v >= n {
			once.Do(func() { close(all) })
		}
		for {
			p := peak.Load()
			if v <= p || peak.CompareAndSwap(p, v) {
				break
			}
		}
		// Every call waits until all are in flight at once: this only
		// finishes if the sandbox really sends them concurrently.
		select {
		case <-all:
		case <-time.After(20 * time.Second):
		}
		inFlight.Add(-1)
		return transport.ToolResult{Value: c.Args["i"]}
	})
	s := open(t, nb, transport.SessionConfig{Tools: h})
	r := run(t, s, fmt.Sprintf(`
import threading
from codemode_runtime import call
out = [None] * %d
def work(i):
    out[i] = call("wait", {"i": i})
ts = [threading.Thread(target=work, args=(i,)) for i in range(%d)]
for t in ts: t.start()
for t in ts: t.join()
print(out)
`, n, n))
	wantOK(t, r)
	if want := "[0, 1, 2, 3, 4, 5]\n"; r.Stdout != want {
		t.Errorf("stdout = %q, want %q (each thread gets its own result)", r.Stdout, want)
	}
	if peak.Load() != n {
		t.Errorf("peak concurrent calls = %d, want %d", peak.Load(), n)
	}
}

func testToolErrors(t *testing.T, nb NewBackend) {
	h := transport.ToolHandlerFunc(func(ctx context.Context, c transport.ToolCall) transport.ToolResult {
		switch c.Name {
		case "http":
			return transport.ToolResult{Err: &transport.ToolError{Type: "HTTPStatusError", Message: "not found", StatusCode: 404, Body: map[string]any{"detail": "nope"}}}
		case "slow":
			return transport.ToolResult{Err: &transport.ToolError{Type: "TimeoutError", Message: "slow exceeded its timeout"}}
		case "panics":
			panic("tool bug")
		}
		return transport.Errorf("ValueError", "bad value for %s", c.Name)
	})
	s := open(t, nb, transport.SessionConfig{Tools: h})
	r := run(t, s, `
from codemode_runtime import call, ToolError, HTTPStatusError
try:
    call("plain", {})
except ToolError as e:
    print("ToolError", e.type, "|", e)
try:
    call("http", {})
except HTTPStatusError as e:
    print("HTTPStatusError", e.status_code, e.body)
try:
    call("slow", {})
except TimeoutError as e:
    print("TimeoutError", e)
try:
    call("panics", {})
except ToolError as e:
    print("panic", "tool bug" in str(e))
try:
    call("plain", "not a dict")
except TypeError as e:
    print("TypeError")
`)
	wantOK(t, r)
	want := "ToolError ValueError | ValueError: bad value for plain\nHTTPStatusError 404 {'detail': 'nope'}\nTimeoutError slow exceeded its timeout\npanic True\nTypeError\n"
	if r.Stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", r.Stdout, want)
	}
}

func testTimeoutKeepsState(t *testing.T, nb NewBackend) {
	s := open(t, nb, transport.SessionConfig{})
	wantOK(t, run(t, s, "kept = 'still here'"))
	for _, code := range []string{
		"while True: pass",
		"import time\ntime.sleep(3600)",
		"while True:\n    try:\n        sum(range(1000))\n    except Exception:\n        pass",
	} {
		r := exec(t, s, transport.Block{Code: code, Timeout: 300 * time.Millisecond})
		if !r.Stopped || r.Reset {
			t.Errorf("%q: Stopped=%v Reset=%v, want stopped in place", code, r.Stopped, r.Reset)
		}
		if r.ExitCode == 0 || !strings.Contains(r.Stderr, "CodeTimeout") {
			t.Errorf("%q: exit %d, stderr %q: want a CodeTimeout traceback", code, r.ExitCode, r.Stderr)
		}
	}
	r := run(t, s, "print(kept)")
	if r.Stdout != "still here\n" {
		t.Errorf("after timeouts: stdout %q, stderr %q: the variables were lost", r.Stdout, r.Stderr)
	}
}

func testTimeoutCancelsToolCalls(t *testing.T, nb NewBackend) {
	cancelled := make(chan string, 1)
	h := transport.ToolHandlerFunc(func(ctx context.Context, c transport.ToolCall) transport.ToolResult {
		select {
		case <-ctx.Done():
			cancelled <- c.Name
			return transport.Errorf("Cancelled", "cancelled")
		case <-time.After(30 * time.Second):
			return transport.ToolResult{Value: "too late"}
		}
	})
	s := open(t, nb, transport.SessionConfig{Tools: h})
	r := exec(t, s, transport.Block{Code: "from codemode_runtime import call\ncall('hang', {})", Timeout: time.Second})
	if !r.Stopped {
		t.Fatalf("Stopped = false; stderr %q", r.Stderr)
	}
	select {
	case name := <-cancelled:
		if name != "hang" {
			t.Errorf("cancelled %q", name)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the in-flight tool call's context was not cancelled")
	}
}

// testInterruptAmidToolCalls: a block that does nothing but call tools
// is interrupted while a call is in flight, while its reply is on the
// way, and between two calls; every time it stops in place, with its
// variables kept, never by a kill. The tool answers at once or after a
// short wait, and the timeouts vary, so that the interrupt lands in each
// part of a call over the rounds.
func testInterruptAmidToolCalls(t *testing.T, nb NewBackend) {
	var n atomic.Int64
	h := transport.ToolHandlerFunc(func(ctx context.Context, c transport.ToolCall) transport.ToolResult {
		if d := time.Duration(n.Add(1)%4) * 500 * time.Microsecond; d > 0 {
			select {
			case <-ctx.Done():
				return transport.Errorf("Cancelled", "cancelled")
			case <-time.After(d):
			}
		}
		return transport.ToolResult{Value: 1}
	})
	s := open(t, nb, transport.SessionConfig{Tools: h})
	wantOK(t, run(t, s, "from codemode_runtime import call\nkept = 0"))
	const rounds = 30
	for i := range rounds {
		code := "kept += 1\nwhile True:\n    call('tick', {})"
		if i%2 == 1 {
			// The code swallows the cancelled call's TimeoutError; only
			// the interrupt stops it.
			code = "kept += 1\nwhile True:\n    try:\n        call('tick', {})\n    except Exception:\n        pass"
		}
		timeout := 20*time.Millisecond + time.Duration(i%7)*3*time.Millisecond
		r := exec(t, s, transport.Block{Code: code, Timeout: timeout, Grace: 2 * time.Second})
		if !r.Stopped || r.Reset {
			t.Fatalf("round %d: Stopped=%v Reset=%v stderr %q: want the block stopped in place", i, r.Stopped, r.Reset, r.Stderr)
		}
	}
	r := run(t, s, "print(kept)")
	if r.Stdout != fmt.Sprintf("%d\n", rounds) {
		t.Errorf("after the interrupts: stdout %q stderr %q, want %d: the variables were lost", r.Stdout, r.Stderr, rounds)
	}
}

func testGraceReset(t *testing.T, nb NewBackend) {
	s := open(t, nb, transport.SessionConfig{})
	wantOK(t, run(t, s, "lost = 1"))
	for _, code := range []string{
		// Ignores the interrupt.
		"import signal\nsignal.signal(signal.SIGUSR1, signal.SIG_IGN)\nwhile True: pass",
		// Stuck in C code, which never checks for the interrupt.
		"sum(range(10**15))",
	} {
		r := exec(t, s, transport.Block{Code: code, Timeout: time.Second, Grace: 500 * time.Millisecond})
		if !r.Reset {
			t.Fatalf("%q: Reset = false (Stopped=%v, stderr %q), want the worker killed", code, r.Stopped, r.Stderr)
		}
		if !strings.Contains(r.Stderr, "variables") {
			t.Errorf("stderr %q does not tell that the variables are gone", r.Stderr)
		}
		r = run(t, s, "print('lost' in globals())\nlost = 1")
		if r.Stdout != "False\n" {
			t.Errorf("after a reset: stdout %q stderr %q, want a fresh namespace", r.Stdout, r.Stderr)
		}
	}
}

func testContextCancel(t *testing.T, nb NewBackend) {
	s := open(t, nb, transport.SessionConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	r, err := s.Exec(ctx, transport.Block{Code: "import time\ntime.sleep(3600)", Timeout: 30 * time.Second})
	if err != nil {
		t.Fatalf("Exec: %v", err)
	}
	if !r.Stopped {
		t.Errorf("Stopped = false after the context was cancelled; stderr %q", r.Stderr)
	}
	// The code's CodeTimeout says what happened, not that a timeout passed.
	if !strings.Contains(r.Stderr, "CodeTimeout: The host cancelled the code") || strings.Contains(r.Stderr, "longer than") {
		t.Errorf("stderr %q: want a CodeTimeout that says the host cancelled the code", r.Stderr)
	}
	wantOK(t, run(t, s, "pass"))
}

func testOutputBound(t *testing.T, nb NewBackend) {
	s := open(t, nb, transport.SessionConfig{})
	const limit = 64 << 10
	r := exec(t, s, transport.Block{
		Code:           "import sys\nsys.stdout.write('HEAD' + 'x' * 3_000_000 + 'TAIL')\nimport os\nos.system('head -c 1000000 /dev/zero | tr \"\\\\0\" y')",
		MaxOutputBytes: limit,
	})
	wantOK(t, r)
	if int64(len(r.Stdout)) != limit {
		t.Errorf("len(stdout) = %d, want the %d-byte bound", len(r.Stdout), limit)
	}
	if want := int64(3_000_008+1_000_000) - limit; r.StdoutDropped != want {
		t.Errorf("StdoutDropped = %d, want %d", r.StdoutDropped, want)
	}
	if !strings.HasPrefix(r.Stdout, "HEADxxx") || !strings.HasSuffix(r.Stdout, "yyyy") {
		t.Errorf("bounded stdout lost its head or tail: %q…%q", r.Stdout[:10], r.Stdout[len(r.Stdout)-10:])
	}
	r = run(t, s, "print('small')")
	if r.Stdout != "small\n" || r.StdoutDropped != 0 {
		t.Errorf("the next block: stdout %q dropped %d", r.Stdout, r.StdoutDropped)
	}
	// The worst case for the frame size: both streams at the default bound
	// with bytes that JSON escapes six-fold, and invalid UTF-8.
	r = exec(t, s, transport.Block{Code: "import os\nfor fd in (1, 2):\n    os.write(fd, b'\\x01\\xff' * 2_200_000)", Timeout: 2 * time.Minute})
	if len(r.Stdout) < 4<<20 || r.StdoutDropped == 0 || r.StderrDropped == 0 {
		t.Errorf("escaped flood: %d bytes kept, %d and %d dropped", len(r.Stdout), r.StdoutDropped, r.StderrDropped)
	}
}

func testWorkspaceFiles(t *testing.T, nb NewBackend) {
	s := open(t, nb, transport.SessionConfig{})
	r := run(t, s, `
import os
os.makedirs("out/deep", exist_ok=True)
open("a.txt", "w").write("alpha")
open("out/deep/b.bin", "wb").write(bytes(range(256)))
os.symlink("/etc/passwd", "link")
os.mkfifo("fifo")
open("hard1", "w").write("h")
os.link("hard1", "hard2")
`)
	wantOK(t, r)
	var got []string
	for _, f := range r.Files {
		got = append(got, fmt.Sprintf("%s:%d", f.Path, f.Size))
	}
	if want := []string{"a.txt:5", "out/deep/b.bin:256"}; !slices.Equal(got, want) {
		t.Errorf("Files = %v, want %v (no symlink, fifo or hard-linked file)", got, want)
	}
	data, err := s.ReadFile(context.Background(), "out/deep/b.bin")
	if err != nil || len(data) != 256 || data[255] != 255 {
		t.Errorf("ReadFile = %d bytes, %v", len(data), err)
	}
	for _, bad := range []string{"link", "fifo", "hard1", "../etc/passwd", "/etc/passwd", "out/../a.txt", "missing", "out"} {
		if data, err := s.ReadFile(context.Background(), bad); err == nil {
			t.Errorf("ReadFile(%q) = %d bytes, want an error", bad, len(data))
		}
	}
	// Only what changed is listed next time.
	r = run(t, s, "open('a.txt', 'a').write('!')\nopen('c.txt', 'w').write('c')")
	got = got[:0]
	for _, f := range r.Files {
		got = append(got, f.Path)
	}
	if want := []string{"a.txt", "c.txt"}; !slices.Equal(got, want) {
		t.Errorf("second block Files = %v, want %v", got, want)
	}
}

func testWorkerCrash(t *testing.T, nb NewBackend) {
	s := open(t, nb, transport.SessionConfig{})
	wantOK(t, run(t, s, "v = 1"))
	r := run(t, s, "import os\nprint('bye', flush=True)\nos._exit(7)")
	if !r.Reset || r.ExitCode != 7 {
		t.Errorf("Reset=%v ExitCode=%d, want a reset with exit code 7", r.Reset, r.ExitCode)
	}
	if !strings.Contains(r.Stdout, "bye") {
		t.Errorf("stdout %q lost the output printed before the crash", r.Stdout)
	}
	r = run(t, s, "print('v' in globals())")
	if r.Stdout != "False\n" {
		t.Errorf("after a crash: stdout %q stderr %q", r.Stdout, r.Stderr)
	}
	// A worker that breaks the control channel is replaced too.
	r = run(t, s, "import os\nos.write(4, b'garbage\\n')\nimport time\ntime.sleep(5)")
	if !r.Reset {
		t.Errorf("garbage on the control channel: Reset=false, stderr %q", r.Stderr)
	}
	wantOK(t, run(t, s, "pass"))
}

// testFiles: the files of the session config are importable and
// read-only; a backend that is not isolated may let code write next to
// them.
func testFiles(t *testing.T, nb NewBackend, isolated bool) {
	files := map[string][]byte{
		"tools/__init__.py":   []byte("from .greet import greet\n"),
		"tools/greet.py":      []byte("from codemode_runtime import call\ndef greet(*, name):\n    return call('greet', {'name': name})\n"),
		"tools/data/info.txt": []byte("read-only"),
	}
	s := open(t, nb, transport.SessionConfig{Files: files, Tools: echoTools()})
	r := run(t, s, `
from tools import greet
print(greet(name="ada")["args"]["name"])
import tools, os
d = os.path.dirname(tools.__file__)
print(open(os.path.join(d, "data", "info.txt")).read())
try:
    open(os.path.join(d, "evil.py"), "w")
    print("writable")
except OSError:
    print("read-only")
`)
	wantOK(t, r)
	want := "ada\nread-only\nread-only\n"
	if !isolated {
		want = "ada\nread-only\n" // a plain process may write where it likes
		if i := strings.LastIndex(strings.TrimSuffix(r.Stdout, "\n"), "\n"); i >= 0 {
			r.Stdout = r.Stdout[:i+1]
		}
	}
	if r.Stdout != want {
		t.Errorf("stdout = %q, want %q", r.Stdout, want)
	}
}

func testClose(t *testing.T, nb NewBackend) {
	s := open(t, nb, transport.SessionConfig{})
	errc := make(chan error, 1)
	go func() {
		_, err := s.Exec(context.Background(), transport.Block{Code: "import time\ntime.sleep(3600)"})
		errc <- err
	}()
	time.Sleep(200 * time.Millisecond)
	if err := s.Close(); err != nil && !errors.Is(err, transport.ErrClosed) {
		t.Errorf("Close: %v", err)
	}
	select {
	case err := <-errc:
		if err == nil {
			t.Error("Exec returned no error after Close")
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Close did not unblock a running Exec")
	}
	if _, err := s.Exec(context.Background(), transport.Block{Code: "pass"}); err == nil {
		t.Error("Exec after Close succeeded")
	}
	if err := s.Close(); err != nil && !errors.Is(err, transport.ErrClosed) {
		t.Errorf("second Close: %v", err)
	}
}

// testForkedChildExits: a child the code forks that leaves with sys.exit
// neither ends its parent's block nor runs the next one.
func testForkedChildExits(t *testing.T, nb NewBackend) {
	s := open(t, nb, transport.SessionConfig{})
	r := run(t, s, "import os, sys, time\npid = os.fork()\nif pid == 0:\n    print('child', flush=True)\n    sys.exit(0)\n"+
		"time.sleep(0.5)\nos.waitpid(pid, 0)\nprint('parent', os.getpid())")
	wantOK(t, r)
	if !strings.Contains(r.Stdout, "child\n") || !strings.Contains(r.Stdout, "parent ") {
		t.Fatalf("stdout %q: want the child's line and then the parent's", r.Stdout)
	}
	parent := strings.TrimSpace(r.Stdout[strings.Index(r.Stdout, "parent ")+len("parent "):])
	r = run(t, s, "import os; print(os.getpid())")
	wantOK(t, r)
	if got := strings.TrimSpace(r.Stdout); got != parent {
		t.Errorf("the next block ran in process %s, want the worker %s", got, parent)
	}
}

// testForkedChildrenReturn: many children that fall back into the runner
// (an exception, the end of the code) send nothing the host sees.
func testForkedChildrenReturn(t *testing.T, nb NewBackend) {
	s := open(t, nb, transport.SessionConfig{})
	r := run(t, s, "import os, time\nkids = []\nfor i in range(30):\n    pid = os.fork()\n    if pid == 0:\n"+
		"        if i % 2: raise RuntimeError('child fails')\n        break\n    kids.append(pid)\nelse:\n"+
		"    for k in kids: os.waitpid(k, 0)\n    print('parent ok')")
	wantOK(t, r)
	if !strings.Contains(r.Stdout, "parent ok") {
		t.Fatalf("stdout %q stderr %q: want the parent to finish", r.Stdout, r.Stderr)
	}
	for i := range 3 {
		r = run(t, s, fmt.Sprintf("print(%d)", i))
		wantOK(t, r)
		if r.Stdout != fmt.Sprintf("%d\n", i) || r.Reset {
			t.Errorf("block %d after the children: stdout %q reset %v stderr %q", i, r.Stdout, r.Reset, r.Stderr)
		}
	}
}

// testForkBomb: a fork bomb ends with its block, and the next block runs
// and is reported as run. Only isolated backends get a real one; the others
// get a bounded tree of children that fork and fall back into the runner.
// A real one is stopped at the block's timeout: in place (the bomb's
// processes frozen, then killed, and the variables kept), or, should the
// worker not stop within the grace period, by a restart that says so;
// either way none of its processes is left.
func testForkBomb(t *testing.T, nb NewBackend, isolated bool) {
	s := open(t, nb, transport.SessionConfig{})
	code := "import os\nfor _ in range(4):\n    os.fork()\n    os.fork()\nraise SystemExit(3)"
	if isolated {
		// Every process forks until the task limit refuses; a refused one
		// waits a little before it tries again, as most real bombs do by
		// accident, so that the machine running the tests stays usable.
		code = "kept = 41\nimport os, time\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        time.sleep(0.05)"
	}
	r := exec(t, s, transport.Block{Code: code, Timeout: 2 * time.Second, Grace: 500 * time.Millisecond})
	t.Logf("fork bomb: exit %d stopped %v reset %v", r.ExitCode, r.Stopped, r.Reset)
	if isolated {
		switch {
		case r.Stopped && !r.Reset:
			if !strings.Contains(r.Stderr, "processes it had started were killed") {
				t.Errorf("the bomb stopped in place; stderr %q does not say its processes were killed", r.Stderr)
			}
			if r = run(t, s, "print(kept + 1)"); r.Stdout != "42\n" {
				t.Errorf("after the bomb stopped in place: stdout %q stderr %q, want the variable kept", r.Stdout, r.Stderr)
			}
		case r.Reset:
			if !strings.Contains(r.Stderr, "did not stop within") {
				t.Errorf("the bomb's block was restarted; stderr %q does not say why", r.Stderr)
			}
		default:
			t.Errorf("the bomb's block was neither stopped nor restarted: exit %d stderr %q", r.ExitCode, r.Stderr)
		}
		// Only the sandbox's own processes are left (its init, its
		// server or supervisor, the worker): none of the bomb's.
		r = run(t, s, "import os\nprint(sum(1 for p in os.listdir('/proc') if p.isdigit()))")
		if n, err := strconv.Atoi(strings.TrimSpace(r.Stdout)); err != nil || n > 6 {
			t.Errorf("after the fork bomb the sandbox has %q processes (stderr %q); want its own few", r.Stdout, r.Stderr)
		}
	}
	for i := range 3 {
		r = exec(t, s, transport.Block{Code: fmt.Sprintf("print(%d)", i), Timeout: 30 * time.Second})
		if r.ExitCode != 0 || r.Stdout != fmt.Sprintf("%d\n", i) {
			t.Errorf("block %d after the fork bomb: exit %d stdout %q stderr %q", i, r.ExitCode, r.Stdout, r.Stderr)
		}
	}
}

// testLateInterrupt: an interrupt signal that reaches the worker while no
// interrupt of the running block was asked for stops nothing.
func testLateInterrupt(t *testing.T, nb NewBackend) {
	s := open(t, nb, transport.SessionConfig{})
	r := run(t, s, "import os, signal, time\nfor sig in (signal.SIGUSR1, signal.SIGINT):\n    os.kill(os.getpid(), sig)\n    time.sleep(0.05)\nprint('still running')")
	wantOK(t, r)
	if r.Stdout != "still running\n" || r.Stopped {
		t.Errorf("a stray interrupt signal stopped the block: stdout %q stderr %q", r.Stdout, r.Stderr)
	}
}

// testInterruptAfterTheBlock: a block that swallows its interrupts ends
// while the server is still re-signalling; the blocks after it run whole.
func testInterruptAfterTheBlock(t *testing.T, nb NewBackend) {
	s := open(t, nb, transport.SessionConfig{})
	r := exec(t, s, transport.Block{Code: "import time\nn = 0\nwhile n < 3:\n    try:\n        time.sleep(5)\n    except BaseException:\n        n += 1\nprint('swallowed', n)",
		Timeout: 300 * time.Millisecond, Grace: 5 * time.Second})
	if !r.Stopped || !strings.Contains(r.Stdout, "swallowed 3") {
		t.Fatalf("stdout %q stderr %q stopped %v: want a block stopped in place that swallowed three interrupts", r.Stdout, r.Stderr, r.Stopped)
	}
	for i := range 5 {
		r = run(t, s, fmt.Sprintf("import time\nt = time.monotonic()\nwhile time.monotonic() - t < 0.1:\n    pass\nprint(%d)", i))
		if r.ExitCode != 0 || r.Stopped || r.Stdout != fmt.Sprintf("%d\n", i) {
			t.Errorf("block %d after the stopped one: exit %d stopped %v stdout %q stderr %q", i, r.ExitCode, r.Stopped, r.Stdout, r.Stderr)
		}
	}
}

// testEarlierBlocksThreads: a tool call from a thread that an earlier
// block started is refused in Python, and never reaches the host.
func testEarlierBlocksThreads(t *testing.T, nb NewBackend) {
	var calls atomic.Int64
	h := transport.ToolHandlerFunc(func(ctx context.Context, c transport.ToolCall) transport.ToolResult {
		calls.Add(1)
		return transport.ToolResult{Value: "ran"}
	})
	s := open(t, nb, transport.SessionConfig{Tools: h})
	wantOK(t, run(t, s, "import threading, time\nfrom codemode_runtime import call\nres = {}\ngo = threading.Event()\n"+
		"def late():\n    go.wait()\n    try:\n        res['v'] = call('probe', {})\n    except Exception as e:\n        res['err'] = f'{type(e).__name__}: {e}'\n"+
		"t = threading.Thread(target=late)\nt.start()\nprint(call('probe', {}))"))
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d calls reached the host in the first block, want 1", n)
	}
	r := run(t, s, "go.set()\nt.join()\nprint(res)\n"+
		"inner = threading.Thread(target=lambda: res.update(own=call('probe', {})))\ninner.start(); inner.join()\nprint(res['own'])")
	wantOK(t, r)
	if !strings.Contains(r.Stdout, "earlier block") || strings.Contains(r.Stdout, "'v'") {
		t.Errorf("stdout %q: want the earlier block's thread refused with a message saying why", r.Stdout)
	}
	if !strings.HasSuffix(r.Stdout, "ran\n") {
		t.Errorf("stdout %q: a thread the running block started must still call tools", r.Stdout)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("%d calls reached the host, want 2 (the refused one must not)", n)
	}
}

// testStreamsSoundEachBlock: whatever a block did to stdout and stderr,
// the next one prints.
func testStreamsSoundEachBlock(t *testing.T, nb NewBackend) {
	s := open(t, nb, transport.SessionConfig{})
	for _, breaker := range []string{
		"import sys; sys.stdout.close(); sys.stderr.close()",
		"import sys, io; sys.stdout = io.StringIO(); sys.stderr = None",
		"import os; os.close(1); os.close(2)",
		"import os; fd = os.open('/dev/null', os.O_WRONLY); os.dup2(fd, 1); os.dup2(fd, 2)",
	} {
		_ = run(t, s, breaker)
		r := run(t, s, "import sys, subprocess\nprint('out', flush=True)\nprint('err', file=sys.stderr)\nsubprocess.run(['/bin/echo', 'child'])")
		if r.ExitCode != 0 || r.Stdout != "out\nchild\n" || r.Stderr != "err\n" {
			t.Errorf("after %q: exit %d stdout %q stderr %q, want sound streams", breaker, r.ExitCode, r.Stdout, r.Stderr)
		}
	}
}
