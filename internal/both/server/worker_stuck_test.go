//go:build linux

package server

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/internal/protocol/wire"
	"github.com/adk-codemode/codemode/transport"
)

// The regression tests of this file run each scenario twice: with the
// server in this process and the worker under a real supervisor (Attach),
// and with the server and its worker in this process (Serve), the way a
// remote sandbox runs them.

var sessionModes = []string{"attach", "serve"}

// openSession opens a session in mode with cfg and scfg. Closing it, which
// the test's cleanup does too, must not take long.
func openSession(t *testing.T, mode string, cfg Config, scfg transport.SessionConfig) *wire.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var s *wire.Client
	var err error
	switch mode {
	case "attach":
		hostEnd, sp := startSupervisor(t, cfg)
		s, err = Attach(ctx, hostEnd, cfg, scfg, wire.ClientOptions{OnClose: sp.wait}, nil)
	case "serve":
		host, sb, perr := SocketPair()
		if perr != nil {
			t.Fatal(perr)
		}
		served := make(chan error, 1)
		go func() {
			served <- Serve(context.Background(), wire.NewConn(sb, sb, sb, 0), cfg)
			sb.Close()
		}()
		wait := func() error {
			select {
			case err := <-served:
				return err
			case <-time.After(30 * time.Second):
				return errors.New("Serve did not return after the session closed")
			}
		}
		s, err = wire.NewClient(ctx, wire.NewConn(host, host, host, 0), scfg, wire.ClientOptions{OnClose: wait})
	default:
		t.Fatalf("unknown mode %q", mode)
	}
	if err != nil {
		t.Fatalf("open a session (%s): %v", mode, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// closeWithin closes s and fails the test if that takes longer than d.
func closeWithin(t *testing.T, s *wire.Client, d time.Duration) {
	t.Helper()
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Logf("Close: %v", err)
		}
	case <-time.After(d):
		t.Fatalf("Close did not return within %s", d)
	}
}

// fakePython writes a shell script that stands in for the interpreter: it
// sends a tool call before its ready frame, then logs every line it reads
// on fd 3 to <dir>/<pid>.log, and exits with status 3 when it gets a run
// frame.
func fakePython(t *testing.T, dir string) string {
	t.Helper()
	script := `#!/bin/sh
log="` + dir + `/$$.log"
: > "$log"
printf '%s\n' '{"kind":"tool_call","id":"early","block":"b1","name":"secret","args":{}}' '{"kind":"ready","protocol_version":3}' >&4
while IFS= read -r line <&3; do
	printf '%s\n' "$line" >> "$log"
	case $line in
	*'"kind":"run"'*) exit 3 ;;
	esac
done
`
	path := filepath.Join(t.TempDir(), "python")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// waitForLogs waits until n of the fake workers' logs in dir hold the
// refusal of their early tool call.
func waitForLogs(t *testing.T, dir string, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ents, _ := os.ReadDir(dir)
		refused := 0
		var logs []string
		for _, e := range ents {
			b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
			logs = append(logs, e.Name()+": "+string(b))
			if strings.Contains(string(b), `"kind":"tool_result","id":"early"`) && strings.Contains(string(b), "ProtocolError") {
				refused++
			}
		}
		if refused >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of the fake workers had their early tool call refused, want %d; what they read:\n%s", refused, n, strings.Join(logs, "\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestToolCallBeforeReady: a worker that sends a tool call before its
// ready frame, the first one or one started after a reset, gets it
// refused; the host neither crashes nor runs the call.
func TestToolCallBeforeReady(t *testing.T) {
	needPython(t)
	for _, mode := range sessionModes {
		t.Run(mode, func(t *testing.T) {
			logs := t.TempDir()
			cfg := Config{Python: fakePython(t, logs), Workdir: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin"}}
			var ran atomic.Int32
			tools := transport.ToolHandlerFunc(func(ctx context.Context, c transport.ToolCall) transport.ToolResult {
				ran.Add(1)
				return transport.ToolResult{Value: "secret"}
			})
			s := openSession(t, mode, cfg, transport.SessionConfig{Tools: tools})
			waitForLogs(t, logs, 1)
			// The fake worker exits when it reads the block, and the
			// worker started in its place calls before it is ready too.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			r, err := s.Exec(ctx, transport.Block{Code: "pass"})
			if err != nil {
				t.Fatalf("Exec: %v", err)
			}
			if !r.Reset || r.ExitCode != 3 {
				t.Errorf("block: %+v; want a reset with exit code 3", r)
			}
			waitForLogs(t, logs, 2)
			if n := ran.Load(); n != 0 {
				t.Errorf("the handler ran %d tool calls sent before ready", n)
			}
			closeWithin(t, s, 30*time.Second)
		})
	}
}

// TestWorkerNotReadingDoesNotHang: a worker that stops reading its fd 3
// (here it stops itself) must not hang the server when a block larger than
// the pipe's buffer is sent to it: the block's timeout, grace and reset
// work as for any stuck block, and so does closing the session.
func TestWorkerNotReadingDoesNotHang(t *testing.T) {
	needPython(t)
	for _, mode := range sessionModes {
		t.Run(mode, func(t *testing.T) {
			cfg := Config{Python: testPython, Workdir: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin"}}
			s := openSession(t, mode, cfg, transport.SessionConfig{})
			r := runCode(t, s, `import os, signal, threading, time
def stop():
    time.sleep(0.2)
    os.kill(os.getpid(), signal.SIGSTOP)
threading.Thread(target=stop, daemon=True).start()
print(os.getpid())
`)
			pid, err := strconv.Atoi(strings.TrimSpace(r.Stdout))
			if err != nil {
				t.Fatalf("first block: %+v", r)
			}
			deadline := time.Now().Add(20 * time.Second)
			for {
				if state, _, _, ok := procStat(pid); ok && state == "T" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the worker did not stop itself")
				}
				time.Sleep(10 * time.Millisecond)
			}
			// More than any pipe buffer holds (1 MiB for an unprivileged
			// process).
			code := "x = '" + strings.Repeat("a", 3<<20>>1) + "'\nprint('ran')\n"
			type result struct {
				r   *transport.Result
				err error
			}
			done := make(chan result, 1)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			start := time.Now()
			go func() {
				r, err := s.Exec(ctx, transport.Block{Code: code, Timeout: 500 * time.Millisecond, Grace: 500 * time.Millisecond})
				done <- result{r, err}
			}()
			select {
			case res := <-done:
				if res.err != nil {
					t.Fatalf("Exec after %s: %v", time.Since(start), res.err)
				}
				if !res.r.Reset || !strings.Contains(res.r.Stderr, "did not stop within") {
					t.Errorf("the block sent to a stopped worker: %+v; want a reset after the grace period", res.r)
				}
			case <-time.After(8 * time.Second):
				// The client's backstop ends the wait after 11s.
				t.Fatal("Exec did not return within 8s of a block with a 500ms timeout")
			}
			if r := runCode(t, s, "print('y' in globals(), 6 * 7)"); r.Stdout != "False 42\n" || r.Reset {
				t.Errorf("after the reset: %+v", r)
			}
			// Stop the new worker too, send it a large block, and close the
			// session while the block waits for it.
			r = runCode(t, s, "import os, signal, threading, time\nthreading.Thread(target=lambda: (time.sleep(0.2), os.kill(os.getpid(), signal.SIGSTOP)), daemon=True).start()\nprint(os.getpid())\n")
			pid, err = strconv.Atoi(strings.TrimSpace(r.Stdout))
			if err != nil {
				t.Fatalf("third block: %+v", r)
			}
			for {
				if state, _, _, ok := procStat(pid); ok && state == "T" {
					break
				}
				if time.Now().After(deadline.Add(20 * time.Second)) {
					t.Fatal("the worker did not stop itself")
				}
				time.Sleep(10 * time.Millisecond)
			}
			go func() {
				r, err := s.Exec(ctx, transport.Block{Code: code})
				done <- result{r, err}
			}()
			time.Sleep(200 * time.Millisecond)
			closeWithin(t, s, 20*time.Second)
			select {
			case res := <-done:
				if res.err == nil {
					t.Errorf("Exec of a block that never ran: %+v; want an error", res.r)
				}
			case <-time.After(5 * time.Second):
				t.Error("Exec did not return after Close")
			}
		})
	}
}

// TestDeadWorkerCallsCancelled: the tool calls of a worker that dies are
// cancelled on the host, so that they neither run on nor hold the slots
// that the next worker's calls need.
func TestDeadWorkerCallsCancelled(t *testing.T) {
	needPython(t)
	for _, mode := range sessionModes {
		t.Run(mode, func(t *testing.T) {
			started := filepath.Join(t.TempDir(), "started")
			cancelled := make(chan struct{})
			tools := transport.ToolHandlerFunc(func(ctx context.Context, c transport.ToolCall) transport.ToolResult {
				switch c.Name {
				case "slow":
					if err := os.WriteFile(started, nil, 0o644); err != nil {
						return transport.Errorf("OSError", "%v", err)
					}
					select {
					case <-ctx.Done():
						close(cancelled)
						return transport.Errorf("TimeoutError", "cancelled")
					case <-time.After(time.Minute):
						return transport.ToolResult{Value: "slow"}
					}
				case "quick":
					return transport.ToolResult{Value: 1}
				}
				return transport.Errorf("ToolNotFound", "no tool %s", c.Name)
			})
			cfg := Config{Python: testPython, Workdir: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin"}}
			s := openSession(t, mode, cfg, transport.SessionConfig{Tools: tools, MaxConcurrentCalls: 1})
			r := runCode(t, s, `import codemode_runtime as rt, os, threading, time
threading.Thread(target=lambda: rt.call("slow", {}), daemon=True).start()
while not os.path.exists(`+strconv.Quote(started)+`):
    time.sleep(0.01)
os._exit(3)
`)
			if !r.Reset || r.ExitCode != 3 {
				t.Fatalf("exiting block: %+v", r)
			}
			select {
			case <-cancelled:
			case <-time.After(10 * time.Second):
				t.Error("the tool call of the worker that died was not cancelled")
			}
			if r := runCode(t, s, "import codemode_runtime as rt\nprint(rt.call('quick', {}))\n"); r.Stdout != "1\n" || r.ExitCode != 0 {
				t.Errorf("the next worker's tool call: %+v", r)
			}
			closeWithin(t, s, 30*time.Second)
		})
	}
}

// TestWorkerQueueBounded: results for a worker that does not read them
// wait in a bounded queue; past the bound the worker is reset, and the
// next block runs in a fresh one.
func TestWorkerQueueBounded(t *testing.T) {
	needPython(t)
	defer func(v int) { maxQueued = v }(maxQueued)
	maxQueued = 64 << 10
	const n = 40
	for _, mode := range sessionModes {
		t.Run(mode, func(t *testing.T) {
			var started atomic.Int32
			allStarted := make(chan struct{})
			release := make(chan struct{})
			tools := transport.ToolHandlerFunc(func(ctx context.Context, c transport.ToolCall) transport.ToolResult {
				if c.Name == "sync" {
					// The block waits here until every thread's call has
					// reached the host: a thread whose call is still unsent
					// when its block ends is refused as an earlier block's.
					select {
					case <-allStarted:
					case <-ctx.Done():
					}
					return transport.ToolResult{Value: "ok"}
				}
				if started.Add(1) == n {
					close(allStarted)
				}
				select {
				case <-release:
				case <-ctx.Done():
				}
				return transport.ToolResult{Value: strings.Repeat("v", 32<<10)}
			})
			cfg := Config{Python: testPython, Workdir: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin"}}
			s := openSession(t, mode, cfg, transport.SessionConfig{Tools: tools})
			r := runCode(t, s, `import codemode_runtime as rt, os, threading
z = 1
for i in range(`+strconv.Itoa(n)+`):
    threading.Thread(target=lambda: rt.call("wait", {}), daemon=True).start()
rt.call("sync", {})
print(os.getpid())
`)
			pid, err := strconv.Atoi(strings.TrimSpace(r.Stdout))
			if err != nil {
				t.Fatalf("first block: %+v", r)
			}
			select {
			case <-allStarted:
			case <-time.After(20 * time.Second):
				t.Fatalf("%d of %d tool calls started", started.Load(), n)
			}
			if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			// 40 results of 32 KiB: more than the pipe and the queue hold.
			close(release)
			deadline := time.Now().Add(20 * time.Second)
			for {
				if state, _, _, ok := procStat(pid); !ok || state == "Z" {
					break
				}
				if time.Now().After(deadline) {
					_ = syscall.Kill(pid, syscall.SIGCONT)
					t.Fatal("the worker that did not read its results was not killed")
				}
				time.Sleep(20 * time.Millisecond)
			}
			r = run(t, s, transport.Block{Code: "print('z' in globals())", Timeout: 10 * time.Second})
			if r.Stdout != "False\n" || r.Reset || r.Stopped {
				t.Errorf("the block after the reset: %+v", r)
			}
			closeWithin(t, s, 30*time.Second)
		})
	}
}
