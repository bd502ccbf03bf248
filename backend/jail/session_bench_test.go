package jail_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/adk-codemode/codemode/backend/jail"
	"github.com/adk-codemode/codemode/internal/testsupport/sessionbench"
	"github.com/adk-codemode/codemode/transport"
)

// BenchmarkSessionColdStart opens a jailed session with no pool and no
// warm session (jail, sandbox server, Python worker, ready report) and, in
// the same loop, spawns the same interpreter bare with `-c pass`, so the
// ratio compares like with like on whatever the machine is doing.
// "forked" is the default start, a session forked from a template process
// (the template is started before the timed loop); "cold" starts each
// session's jail from scratch (Backend.Cold).
func BenchmarkSessionColdStart(b *testing.B) {
	for _, start := range startPaths {
		b.Run(start.name, func(b *testing.B) {
			forked, be := start.forked, start.backend()
			defer be.Close()
			// One session before the loop: it skips where the jail cannot
			// run, and starts the template of the forked case.
			s, err := be.Open(context.Background(), transport.SessionConfig{})
			if err != nil {
				b.Skip(err)
			}
			if err := s.(*jail.Session).Fallback(); forked && err != nil {
				b.Skipf("no template: %v", err)
			}
			s.Close()
			benchOpenVsBare(b, be, be, nil)
		})
	}
}

// startPaths are the two ways a session starts: forked from a template
// (the default, even where CODEMODE_JAIL_START=cold is set) and cold.
var startPaths = []struct {
	name    string
	forked  bool
	backend func() *jail.Backend
}{
	{"forked", true, func() *jail.Backend { return jail.ForkingBackend(jail.Config{}) }},
	{"cold", false, func() *jail.Backend { return &jail.Backend{Cold: true} }},
}

// benchOpenVsBare is sessionbench.BenchOpenVsBare with be's interpreter.
func benchOpenVsBare(b *testing.B, be *jail.Backend, open transport.Backend, between func()) {
	py, err := be.Config.Interpreter()
	if err != nil {
		b.Skip(err)
	}
	sessionbench.BenchOpenVsBare(b, py, open, between)
}

// BenchmarkWarmPrint runs print(1) blocks in one warm session.
func BenchmarkWarmPrint(b *testing.B) {
	s, err := (&jail.Backend{}).Open(context.Background(), transport.SessionConfig{})
	if err != nil {
		b.Skip(err)
	}
	defer s.Close()
	sessionbench.BenchWarmPrint(b, s)
}

// BenchmarkToolCall makes no-op tool calls from Python to a Go handler and
// back; Python times each call.
func BenchmarkToolCall(b *testing.B) {
	s, err := (&jail.Backend{}).Open(context.Background(), transport.SessionConfig{Tools: sessionbench.NoopTools})
	if err != nil {
		b.Skip(err)
	}
	defer s.Close()
	sessionbench.BenchToolCall(b, s)
}

// BenchmarkToolCallVsFloor makes rounds of 250 no-op tool calls from
// Python, each followed by 250 round trips of a byte between Python and
// this process over a bare pipe (sessionbench.PipeFloor): what a call costs
// against what two processes waking each other cost on this machine.
func BenchmarkToolCallVsFloor(b *testing.B) {
	be := &jail.Backend{}
	py, err := be.Config.Interpreter()
	if err != nil {
		b.Skip(err)
	}
	s, err := be.Open(context.Background(), transport.SessionConfig{Tools: sessionbench.NoopTools})
	if err != nil {
		b.Skip(err)
	}
	defer s.Close()
	sessionbench.BenchToolCallVsFloor(b, s, py)
}

// BenchmarkTurn is what a user pays for one turn's sandbox: open a
// session, run three blocks with ten tool calls in all, close it; on each
// start path, against a bare `python3 -c pass` in the same loop.
func BenchmarkTurn(b *testing.B) {
	for _, start := range startPaths {
		b.Run(start.name, func(b *testing.B) {
			be := start.backend()
			defer be.Close()
			py, err := be.Config.Interpreter()
			if err != nil {
				b.Skip(err)
			}
			s, err := be.Open(context.Background(), transport.SessionConfig{})
			if err != nil {
				b.Skip(err)
			}
			s.Close()
			sessionbench.BenchTurn(b, py, be)
		})
	}
}

// BenchmarkBlockManyFiles runs blocks in a session whose workspace holds
// 10,000 small files: a block that rewrites one file and a block that
// changes nothing, on each start path.
func BenchmarkBlockManyFiles(b *testing.B) {
	for _, start := range startPaths {
		for _, block := range []struct{ name, code string }{
			{"one-file", "n += 1\nPath('one.txt').write_text(str(n))"},
			{"no-op", "x = 1"},
		} {
			b.Run(start.name+"/"+block.name, func(b *testing.B) {
				be := start.backend()
				defer be.Close()
				s, err := be.Open(context.Background(), transport.SessionConfig{})
				if err != nil {
					b.Skip(err)
				}
				defer s.Close()
				sessionbench.BenchManyFiles(b, s, 10_000, block.code)
			})
		}
	}
}

// BenchmarkSessionMemory reports the unique set size (private clean and
// dirty pages, from /proc/PID/smaps_rollup) of an idle session's
// processes, its pid 1 and its worker, for a forked and a cold session.
func BenchmarkSessionMemory(b *testing.B) {
	for _, start := range startPaths {
		b.Run(start.name, func(b *testing.B) {
			be := start.backend()
			defer be.Close()
			var uss []float64
			for b.Loop() {
				s, err := be.Open(context.Background(), transport.SessionConfig{})
				if err != nil {
					b.Skip(err)
				}
				if _, err := s.Exec(context.Background(), transport.Block{Code: "pass"}); err != nil {
					b.Fatal(err)
				}
				pid := s.(*jail.Session).Pid()
				total := 0
				for _, p := range append([]int{pid}, childrenOf(pid)...) {
					total += privateKB(b, p)
				}
				uss = append(uss, float64(total)/1024)
				s.Close()
			}
			slices.Sort(uss)
			b.ReportMetric(uss[len(uss)/2], "uss-MB")
		})
	}
}

func childrenOf(pid int) []int {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	var out []int
	for _, f := range strings.Fields(string(data)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

func privateKB(b *testing.B, pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		b.Fatal(err)
	}
	kb := 0
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && (f[0] == "Private_Clean:" || f[0] == "Private_Dirty:") {
			n, _ := strconv.Atoi(f[1])
			kb += n
		}
	}
	return kb
}
