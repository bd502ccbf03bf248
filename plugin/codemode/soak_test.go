package codemode

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/backend/jail"
	"google.golang.org/genai"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"

	"github.com/adk-codemode/codemode/internal/testsupport/adksuite"
)

// The soak drives the plugin through a real runner, a scripted model and
// the jail, turn after turn, with a fault of one class in most turns, and
// fails on a leak (processes, goroutines, descriptors, temporary
// directories, cgroups), a duplicated side effect or a result that does
// not say what happened. CODEMODE_SOAK_TURNS sets the number of turns
// (150 by default; `make soak` runs 1,000).

// soakCase is one class of turn: the code of each execute_code call, in
// order ("{T}" is the turn's label), what each result must say, and how
// many side effects the turn leaves.
type soakCase struct {
	name    string
	steps   []string
	check   func(outs []map[string]any) string // "" if the results are right
	records int
	cancel  bool // cancel the turn's context while its code runs
}

func stdoutOf(outs []map[string]any, i int) string {
	if i >= len(outs) {
		return ""
	}
	s, _ := outs[i]["stdout"].(string)
	return s
}

func stderrOf(outs []map[string]any, i int) string {
	if i >= len(outs) {
		return ""
	}
	s, _ := outs[i]["stderr"].(string)
	return s
}

// want returns a check that result i's stream contains each of subs.
func want(i int, stream string, subs ...string) func([]map[string]any) string {
	return func(outs []map[string]any) string {
		if i >= len(outs) {
			return fmt.Sprintf("result %d missing (%d results)", i, len(outs))
		}
		got, _ := outs[i][stream].(string)
		for _, s := range subs {
			if !strings.Contains(got, s) {
				return fmt.Sprintf("result %d %s lacks %q:\n%s", i, stream, s, clipText(got))
			}
		}
		return ""
	}
}

func all(checks ...func([]map[string]any) string) func([]map[string]any) string {
	return func(outs []map[string]any) string {
		for _, c := range checks {
			if msg := c(outs); msg != "" {
				return msg
			}
		}
		return ""
	}
}

func clipText(s string) string {
	if len(s) > 600 {
		return s[:300] + " … " + s[len(s)-300:]
	}
	return s
}

var soakCases = []soakCase{
	{name: "ok", steps: []string{"record(label='{T}')\nprint('ok')"}, check: want(0, "stdout", "ok"), records: 1},
	{name: "timeout", steps: []string{"record(label='{T}')\nimport time\nkept = 1\ntime.sleep(30)", "print('kept', kept)"},
		check: all(want(0, "stderr", "CodeTimeout", "longer than"), want(1, "stdout", "kept 1")), records: 1},
	{name: "masked-signals", steps: []string{"import signal, time\nrecord(label='{T}')\nsignal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())\ntime.sleep(30)", "print('alive')"},
		check: all(want(0, "stderr", "longer than", "did not stop within"), want(1, "stdout", "alive")), records: 1},
	{name: "worker-kill", steps: []string{"record(label='{T}')\nimport os, signal\nos.kill(os.getpid(), signal.SIGKILL)", "print('alive')"},
		check: all(want(0, "stderr", "Python process ended"), want(1, "stdout", "alive")), records: 1},
	{name: "init-kill", steps: []string{"record(label='{T}')\nkill_init()\nprint('after')", "print('alive')"},
		check: all(want(0, "stderr", "connection to the sandbox was lost"), want(1, "stdout", "alive")), records: 1},
	{name: "cancel", steps: []string{"record(label='{T}')\nimport time\ntime.sleep(30)"}, cancel: true, records: 1,
		check: func(outs []map[string]any) string {
			// The turn may end before its result is recorded. One that is
			// says the host cancelled the code, or, when the cancel came
			// before the sandbox had started, that it could not start.
			if len(outs) == 0 {
				return ""
			}
			if e, _ := outs[0]["error"].(string); e != "" {
				if !strings.Contains(e, "start the sandbox") || !strings.Contains(e, "context canceled") {
					return "a turn cancelled before its code ran got an error that does not say so: " + clipText(e)
				}
				return ""
			}
			if e := stderrOf(outs, 0); !strings.Contains(e, "cancelled") || strings.Contains(e, "longer than") {
				return "a cancelled block's result does not say it was cancelled:\n" + clipText(e)
			}
			return ""
		}},
	{name: "flood", steps: []string{"record(label='{T}')\nimport sys\nfor _ in range(200):\n    sys.stdout.write('y' * 50000)"},
		check: want(0, "stdout", "Output too long"), records: 1},
	{name: "fork-bomb", steps: []string{"record(label='{T}')\nimport os, time\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        time.sleep(0.01)", "print('alive')"},
		check: want(1, "stdout", "alive"), records: 1},
	{name: "memory-bomb", steps: []string{"record(label='{T}')\nx = bytearray(8 << 30)", "print('alive')"},
		check: all(func(outs []map[string]any) string {
			if e := stderrOf(outs, 0); !strings.Contains(e, "MemoryError") && !strings.Contains(e, "Python process ended") {
				return "a memory bomb's result says neither MemoryError nor that the process ended:\n" + clipText(e)
			}
			return ""
		}, want(1, "stdout", "alive")), records: 1},
	{name: "hanging-tool", steps: []string{"record(label='{T}')\nimport codemode_runtime\ntry:\n    codemode_runtime.call('hang', {}, timeout=0.5)\nexcept TimeoutError:\n    print('tool timeout')"},
		check: want(0, "stdout", "tool timeout"), records: 1},
	{name: "panicking-tool", steps: []string{"record(label='{T}')\ntry:\n    boom()\nexcept Exception as e:\n    print(type(e).__name__, e)"},
		check: func(outs []map[string]any) string {
			o := stdoutOf(outs, 0)
			if !strings.Contains(o, "kaboom") || strings.Contains(o, "goroutine") || strings.Contains(o, ".go:") {
				return "a panicking tool's error is missing or carries the host's stack:\n" + clipText(o)
			}
			return ""
		}, records: 1},
	{name: "fork-exit", steps: []string{"import os, sys, time\nrecord(label='{T}')\npid = os.fork()\nif pid == 0:\n    print('child', flush=True)\n    sys.exit(0)\ntime.sleep(0.3)\nos.waitpid(pid, 0)\nparent = os.getpid()\nprint('parent done')",
		"import os\nprint(os.getpid() == parent)"},
		check: all(want(0, "stdout", "child", "parent done"), want(1, "stdout", "True")), records: 1},
	{name: "late-interrupt", steps: []string{"import time\nrecord(label='{T}')\nn = 0\nwhile n < 3:\n    try:\n        time.sleep(5)\n    except BaseException:\n        n += 1\nprint('swallowed', n)",
		"import time\nt = time.monotonic()\nwhile time.monotonic() - t < 0.3:\n    pass\nprint('whole')"},
		check: all(want(0, "stdout", "swallowed 3"), want(1, "stdout", "whole")), records: 1},
	{name: "earlier-thread", steps: []string{"import threading\nrecord(label='{T}')\ngo = threading.Event()\nres = {}\ndef late():\n    go.wait()\n    try:\n        record(label='{T}-late')\n    except Exception as e:\n        res['err'] = str(e)\nth = threading.Thread(target=late)\nth.start()",
		"go.set()\nth.join()\nprint(res)"},
		check: want(1, "stdout", "earlier block"), records: 1},
	{name: "stdout-closed", steps: []string{"record(label='{T}')\nimport sys\nsys.stdout.close()", "print('hello')"},
		check: want(1, "stdout", "hello"), records: 1},
}

func TestSoak(t *testing.T) {
	turns := 150
	if v := os.Getenv("CODEMODE_SOAK_TURNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("CODEMODE_SOAK_TURNS=%q: want a positive number of turns", v)
		}
		turns = n
	}
	if testing.Short() {
		turns = len(soakCases)
	}
	adksuite.Backend(t) // skips where the jail is unavailable
	// A temporary directory of the soak's own: the leak check counts what
	// the soak leaves there, not what tests of other packages, running at
	// the same time, have in the shared one.
	t.Setenv("TMPDIR", t.TempDir())
	// The soak's jails get fewer processes than the default, so that its
	// fork bombs load the machine less while other tests run.
	backend := &jail.Backend{Config: jail.Config{Processes: 64}}

	var mu sync.Mutex
	records := map[string]int{}
	record, err := functiontool.New(functiontool.Config{Name: "record", Description: "Record a side effect."},
		func(_ agent.Context, a struct {
			Label string `json:"label"`
		}) (map[string]any, error) {
			mu.Lock()
			records[a.Label]++
			mu.Unlock()
			return map[string]any{}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	hang, err := functiontool.New(functiontool.Config{Name: "hang", Description: "Wait until cancelled."},
		func(ctx agent.Context, _ struct{}) (map[string]any, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
	if err != nil {
		t.Fatal(err)
	}
	boom, err := functiontool.New(functiontool.Config{Name: "boom", Description: "Panic."},
		func(_ agent.Context, _ struct{}) (map[string]any, error) { panic("kaboom") })
	if err != nil {
		t.Fatal(err)
	}
	killInit, err := functiontool.New(functiontool.Config{Name: "kill_init", Description: "Kill the jails' init processes."},
		func(_ agent.Context, _ struct{}) (map[string]any, error) {
			// The session's init: a cold jail's, or the pid 1 of a
			// session forked from a template (the template lives on).
			for _, pid := range adksuite.SessionInits() {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			time.Sleep(200 * time.Millisecond)
			return map[string]any{}, nil
		})
	if err != nil {
		t.Fatal(err)
	}

	m := adksuite.NewScript()
	for i := range turns {
		c := soakCases[i%len(soakCases)]
		label := fmt.Sprintf("t%d", i)
		var steps []adksuite.Step
		for _, code := range c.steps {
			steps = append(steps, adksuite.Exec("from tools import record, hang, boom, kill_init\n"+strings.ReplaceAll(code, "{T}", label)))
		}
		m.On(label, append(steps, adksuite.Say("done"))...)
	}

	baseGoroutines := runtime.NumGoroutine()
	baseFDs := countFDs()
	baseTemp := tempDirs()
	f := newFixture(t, m, fixtureConfig{cfg: Config{
		Tools:   []tool.Tool{record, hang, boom, killInit},
		Backend: backend,
		// Bounds generous enough for a loaded machine: a turn's first line
		// must run well before its timeout.
		Timeout:     3 * time.Second,
		Grace:       time.Second,
		IdleTimeout: 2 * time.Second,
	}})

	faults, wrong, effects := 0, 0, 0
	start := time.Now()
	for i := range turns {
		c := soakCases[i%len(soakCases)]
		if c.name != "ok" {
			faults++
		}
		label := fmt.Sprintf("t%d", i)
		outs := f.soakTurn(label, c.cancel)
		if msg := c.check(outs); msg != "" {
			wrong++
			t.Errorf("turn %d (%s): %s", i, c.name, msg)
		}
		mu.Lock()
		n, late := records[label], records[label+"-late"]
		mu.Unlock()
		// A cancel may come before the code runs at all: then nothing is
		// recorded, and never twice.
		if n != c.records && !(c.cancel && n == 0) || late != 0 {
			effects++
			t.Errorf("turn %d (%s): side effect recorded %d times (late thread %d), want %d", i, c.name, n, late, c.records)
		}
	}
	elapsed := time.Since(start)

	// Every turn has ended: nothing of theirs may remain.
	leaks := 0
	leak := func(what string, ok func() (bool, string)) {
		deadline := time.Now().Add(30 * time.Second)
		for {
			good, detail := ok()
			if good {
				return
			}
			if time.Now().After(deadline) {
				leaks++
				t.Errorf("leak: %s: %s", what, detail)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	leak("sandbox processes", func() (bool, string) { p := adksuite.SandboxProcesses(); return len(p) == 0, strings.Join(p, ", ") })
	// No session is left: stop the template they were forked from, so
	// that what it holds (its jail, descriptors, cgroups) is not counted
	// below. Whatever remains after that is a leak.
	if err := backend.Close(); err != nil {
		leaks++
		t.Errorf("leak: the template did not stop: %v", err)
	}
	leak("goroutines", func() (bool, string) {
		n := runtime.NumGoroutine()
		return n <= baseGoroutines+8, fmt.Sprintf("%d now, %d before", n, baseGoroutines)
	})
	leak("descriptors", func() (bool, string) {
		n := countFDs()
		return n <= baseFDs+4, fmt.Sprintf("%d open now, %d before", n, baseFDs)
	})
	leak("temporary directories", func() (bool, string) {
		now := tempDirs()
		return now <= baseTemp, fmt.Sprintf("%d codemode-* entries in %s now, %d before", now, os.TempDir(), baseTemp)
	})
	leak("cgroups", func() (bool, string) { c := jailCgroups(); return len(c) == 0, strings.Join(c, ", ") })
	t.Logf("soak: %d turns (%d with a fault) in %s: %d leaks, %d duplicated side effects or lost ones, %d misclassified results",
		turns, faults, elapsed.Round(time.Second), leaks, effects, wrong)
}

// soakTurn runs one turn and returns its execute_code results. A turn whose
// context is cancelled while its code runs may end with an error.
func (f *fixture) soakTurn(msg string, cancel bool) []map[string]any {
	ctx, stop := context.WithTimeout(context.Background(), 2*time.Minute)
	defer stop()
	if cancel {
		time.AfterFunc(time.Second, stop)
	}
	var outs []map[string]any
	for ev, err := range f.runner.Run(ctx, "user", "soak-"+msg, genai.NewContentFromText(msg, genai.RoleUser), agent.RunConfig{}) {
		if err != nil {
			if !cancel {
				f.t.Errorf("turn %s: %v", msg, err)
			}
			break
		}
		outs = append(outs, outputs([]*session.Event{ev})...)
	}
	return outs
}

func countFDs() int {
	ents, _ := os.ReadDir("/proc/self/fd")
	return len(ents)
}

func tempDirs() int {
	m, _ := filepath.Glob(filepath.Join(os.TempDir(), "codemode-*"))
	return len(m)
}

// jailCgroups lists the cgroups that jails of this process created and
// that still exist, but those of a template (its own jail's, and the blank
// session's it forked ahead): see templateOwned.
func jailCgroups() []string {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var base string
		switch {
		case parts[1] == "" && parts[0] == "0":
			base = filepath.Join("/sys/fs/cgroup", parts[2])
		case strings.Contains(parts[1], "memory") || strings.Contains(parts[1], "pids"):
			base = filepath.Join("/sys/fs/cgroup", strings.TrimPrefix(parts[1], "name="), parts[2])
		default:
			continue
		}
		m, _ := filepath.Glob(filepath.Join(base, fmt.Sprintf("codemode-jail-%d-*", os.Getpid())))
		for _, dir := range m {
			if !ofTemplate(dir) {
				out = append(out, dir)
			}
		}
	}
	return out
}

// ofTemplate reports whether every process in the cgroup dir belongs to a
// template (an empty cgroup left behind belongs to nobody).
func ofTemplate(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	pids := strings.Fields(string(data))
	if err != nil || len(pids) == 0 {
		return false
	}
	for _, f := range pids {
		pid, err := strconv.Atoi(f)
		if err != nil || !adksuite.OfTemplate(pid) {
			return false
		}
	}
	return true
}
