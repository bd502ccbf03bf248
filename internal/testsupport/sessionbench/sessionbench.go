package sessionbench

import (
	"context"
	"fmt"
	"os"
	osexec "os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/transport"
)

// Median is the median of ds (the upper one of an even count).
func Median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// Micros is d in microseconds, as b.ReportMetric takes it.
func Micros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }

// Millis is d in milliseconds, as b.ReportMetric takes it.
func Millis(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// ExecPrint runs a print(1) block in s and returns how long Exec took. It
// fails b unless the block printed 1.
func ExecPrint(b testing.TB, s transport.Session) time.Duration {
	b.Helper()
	t0 := time.Now()
	r, err := s.Exec(context.Background(), transport.Block{Code: "print(1)"})
	d := time.Since(t0)
	if err != nil || r.Stdout != "1\n" {
		b.Fatalf("print(1): %v %+v", err, r)
	}
	return d
}

// BenchWarmPrint runs a print(1) block in s per round of b's loop and
// reports the median as median-µs.
func BenchWarmPrint(b *testing.B, s transport.Session) {
	var lat []time.Duration
	for b.Loop() {
		lat = append(lat, ExecPrint(b, s))
	}
	b.ReportMetric(Micros(Median(lat)), "median-µs")
}

// NoopTools answers every tool call with an empty result.
var NoopTools transport.ToolHandler = transport.ToolHandlerFunc(func(context.Context, transport.ToolCall) transport.ToolResult {
	return transport.ToolResult{}
})

// ToolCalls makes n calls of a tool named "noop" from Python in s, one
// after another, timed by Python around each call, and returns their
// median in microseconds and the calls made per second. s's tool handler
// must answer them (see [NoopTools]).
func ToolCalls(b testing.TB, s transport.Session, n int) (medianMicros, perSecond float64) {
	b.Helper()
	code := fmt.Sprintf(`
import time
from codemode_runtime import call
lat = []
t0 = time.perf_counter()
for _ in range(%d):
    a = time.perf_counter()
    call("noop", {})
    lat.append(time.perf_counter() - a)
total = time.perf_counter() - t0
lat.sort()
print(lat[len(lat) // 2] * 1e6, %d / total)
`, n, n)
	r, err := s.Exec(context.Background(), transport.Block{Code: code})
	if err != nil || r.ExitCode != 0 {
		b.Fatalf("the tool calls: %v %+v", err, r)
	}
	f := strings.Fields(r.Stdout)
	if len(f) != 2 {
		b.Fatalf("the tool calls printed %q, want a median and a rate", r.Stdout)
	}
	med, err1 := strconv.ParseFloat(f[0], 64)
	rate, err2 := strconv.ParseFloat(f[1], 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("the tool calls printed %q: %v %v", r.Stdout, err1, err2)
	}
	return med, rate
}

// BenchToolCall makes b.N no-op tool calls from Python in s (see
// [ToolCalls]) and reports their median as median-µs and the rate as
// calls/s.
func BenchToolCall(b *testing.B, s transport.Session) {
	b.ResetTimer()
	med, rate := ToolCalls(b, s, b.N)
	b.StopTimer()
	b.ReportMetric(med, "median-µs")
	b.ReportMetric(rate, "calls/s")
}

// floorEcho is the floor's Python side: pinned to the CPU in argv[2]
// unless it is -1, it times argv[1] round trips of one byte to the host
// over a pair of pipes, fd 3 to write and fd 4 to read, and prints their
// median in microseconds.
const floorEcho = `
import os, sys, time
n, cpu = int(sys.argv[1]), int(sys.argv[2])
if cpu >= 0:
    os.sched_setaffinity(0, {cpu})
lat = []
for _ in range(n):
    a = time.perf_counter()
    os.write(3, b"x")
    os.read(4, 1)
    lat.append(time.perf_counter() - a)
lat.sort()
print(lat[len(lat) // 2] * 1e6)
`

// Floor is where [PipeFloor] places its two ends: on CPUs of their own
// choosing (the scheduler's), on one CPU, or on two.
type Floor int

// The placements of [PipeFloor].
const (
	Unpinned Floor = iota
	SameCPU
	OtherCPUs
)

// PipeFloor is the least a tool call from Python can cost here: the median
// of n round trips of one byte from a Python process to a goroutine of
// this process blocked reading a pipe, which writes it back, timed by
// Python as ToolCalls times a call, with the two ends placed as at says.
// Two processes that wake each other pay what the machine charges for it:
// on a virtual machine whose idle CPUs halt, a wake across CPUs costs tens
// of microseconds, on one CPU a few.
func PipeFloor(b testing.TB, python string, n int, at Floor) float64 {
	b.Helper()
	toHost, fromPy, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	toPy, fromHost, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	hostCPU, pyCPU := -1, -1
	switch at {
	case SameCPU:
		hostCPU, pyCPU = 0, 0
	case OtherCPUs:
		hostCPU, pyCPU = 0, 1
	}
	cmd := osexec.Command(python, "-I", "-S", "-c", floorEcho, strconv.Itoa(n), strconv.Itoa(pyCPU))
	cmd.ExtraFiles = []*os.File{fromPy, toPy}
	var out strings.Builder
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	fromPy.Close()
	toPy.Close()
	go func() {
		defer pinThread(hostCPU)()
		buf := make([]byte, 1)
		for {
			if _, err := toHost.Read(buf); err != nil {
				break
			}
			if _, err := fromHost.Write(buf); err != nil {
				break
			}
		}
		fromHost.Close()
	}()
	err = cmd.Wait()
	toHost.Close()
	med, perr := strconv.ParseFloat(strings.TrimSpace(out.String()), 64)
	if err != nil || perr != nil {
		b.Fatalf("the pipe floor: %v %v (printed %q)", err, perr, out.String())
	}
	return med
}

// BenchToolCallVsFloor is [BenchToolCall] with [PipeFloor] timed in the
// same loop, in alternating rounds of a few hundred: it reports the calls'
// median as median-µs, the floor's as floor-µs with the scheduler placing
// both ends, floor-same-cpu-µs and floor-other-cpus-µs pinned, and the
// ratio of the calls to the unpinned floor.
func BenchToolCallVsFloor(b *testing.B, s transport.Session, python string) {
	const round = 250
	var calls []float64
	floors := map[Floor][]float64{}
	for b.Loop() {
		med, _ := ToolCalls(b, s, round)
		calls = append(calls, med)
		for _, at := range []Floor{Unpinned, SameCPU, OtherCPUs} {
			floors[at] = append(floors[at], PipeFloor(b, python, round, at))
		}
	}
	median := func(v []float64) float64 {
		slices.Sort(v)
		return v[len(v)/2]
	}
	c, f := median(calls), median(floors[Unpinned])
	b.ReportMetric(c, "median-µs")
	b.ReportMetric(f, "floor-µs")
	b.ReportMetric(median(floors[SameCPU]), "floor-same-cpu-µs")
	b.ReportMetric(median(floors[OtherCPUs]), "floor-other-cpus-µs")
	b.ReportMetric(c/f, "ratio")
}

// BenchOpenVsBare times opening a session of open against a bare spawn of
// python with `-c pass` in the same loop, so the ratio compares like with
// like on whatever the machine is doing, and reports both medians and
// their ratio. between, if set, runs before each round, untimed.
func BenchOpenVsBare(b *testing.B, python string, open transport.Backend, between func()) {
	var bare, sess []time.Duration
	for b.Loop() {
		if between != nil {
			b.StopTimer()
			between()
			b.StartTimer()
		}
		t0 := time.Now()
		if err := osexec.Command(python, "-c", "pass").Run(); err != nil {
			b.Fatal(err)
		}
		bare = append(bare, time.Since(t0))

		t0 = time.Now()
		s, err := open.Open(context.Background(), transport.SessionConfig{})
		if err != nil {
			b.Fatal(err)
		}
		sess = append(sess, time.Since(t0))
		b.StopTimer()
		s.Close()
		b.StartTimer()
	}
	mb, ms := Median(bare), Median(sess)
	b.ReportMetric(Millis(mb), "bare-ms")
	b.ReportMetric(Millis(ms), "session-ms")
	b.ReportMetric(float64(ms)/float64(mb), "ratio")
}

// TurnBlocks are the blocks of one turn as [BenchTurn] runs it: three
// blocks with ten tool calls in all, each block using what the one before
// it left.
var TurnBlocks = []string{
	"from codemode_runtime import call\nrows = [call('noop', {'i': i}) for i in range(4)]\nprint(len(rows))",
	"seen = [call('noop', {'row': i}) for i in range(3)]\nprint(len(rows) + len(seen))",
	"for i in range(3):\n    call('noop', {'final': i})\nprint('done', len(seen))",
}

// Turn opens a session of open with [NoopTools], runs [TurnBlocks] in it
// and closes it: what a user of the plugin pays for one turn's sandbox.
// It returns how long that took.
func Turn(b testing.TB, open transport.Backend) time.Duration {
	b.Helper()
	t0 := time.Now()
	s, err := open.Open(context.Background(), transport.SessionConfig{Tools: NoopTools})
	if err != nil {
		b.Fatal(err)
	}
	for _, code := range TurnBlocks {
		r, err := s.Exec(context.Background(), transport.Block{Code: code})
		if err != nil || r.ExitCode != 0 {
			s.Close()
			b.Fatalf("a block of the turn: %v %+v", err, r)
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	return time.Since(t0)
}

// BenchTurn times [Turn] against a bare spawn of python with `-c pass` in
// the same loop, and reports both medians and their ratio.
func BenchTurn(b *testing.B, python string, open transport.Backend) {
	var bare, turn []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if err := osexec.Command(python, "-c", "pass").Run(); err != nil {
			b.Fatal(err)
		}
		bare = append(bare, time.Since(t0))
		turn = append(turn, Turn(b, open))
	}
	mb, mt := Median(bare), Median(turn)
	b.ReportMetric(Millis(mb), "bare-ms")
	b.ReportMetric(Millis(mt), "turn-ms")
	b.ReportMetric(float64(mt)/float64(mb), "ratio")
}

// BenchManyFiles fills the workspace of s with n small files in one
// block, untimed, then runs b.N blocks of code, each timed by Exec, and
// reports their median as median-µs: what a block costs once the
// workspace holds many files.
func BenchManyFiles(b *testing.B, s transport.Session, n int, code string) {
	fill := fmt.Sprintf("import os\nos.makedirs('many', exist_ok=True)\nfor i in range(%d):\n    with open(f'many/f{i}.txt', 'w') as f:\n        f.write(str(i))\nfrom pathlib import Path\nPath('one.txt').write_text('0')\nn = 0", n)
	r, err := s.Exec(context.Background(), transport.Block{Code: fill})
	if err != nil || r.ExitCode != 0 {
		b.Fatalf("filling the workspace: %v %+v", err, r)
	}
	var lat []time.Duration
	for b.Loop() {
		t0 := time.Now()
		r, err := s.Exec(context.Background(), transport.Block{Code: code})
		lat = append(lat, time.Since(t0))
		if err != nil || r.ExitCode != 0 {
			b.Fatalf("%q: %v %+v", code, err, r)
		}
	}
	b.ReportMetric(Micros(Median(lat)), "median-µs")
}
