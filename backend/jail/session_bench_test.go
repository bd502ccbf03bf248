package jail_test

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/backend/jail"
	"github.com/adk-codemode/codemode/transport"
)

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkSessionColdStart opens a jailed session (jail, sandbox server,
// Python worker, ready report) and, in the same loop, spawns the same
// interpreter bare with `-c pass`, so the ratio compares like with like
// on whatever the machine is doing.
func BenchmarkSessionColdStart(b *testing.B) {
	be := &jail.Backend{}
	benchOpenVsBare(b, be, be, nil)
}

// benchOpenVsBare times opening a session of open against a bare spawn of
// be's interpreter in the same loop, and reports both medians and their
// ratio. between, if set, runs before each round, untimed.
func benchOpenVsBare(b *testing.B, be *jail.Backend, open transport.Backend, between func()) {
	py, err := be.Config.Interpreter()
	if err != nil {
		b.Skip(err)
	}
	var bare, sess []time.Duration
	for b.Loop() {
		if between != nil {
			b.StopTimer()
			between()
			b.StartTimer()
		}
		t0 := time.Now()
		if err := exec.Command(py, "-c", "pass").Run(); err != nil {
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
	mb, ms := median(bare), median(sess)
	b.ReportMetric(float64(mb.Microseconds())/1000, "bare-ms")
	b.ReportMetric(float64(ms.Microseconds())/1000, "session-ms")
	b.ReportMetric(float64(ms)/float64(mb), "ratio")
}

// BenchmarkWarmPrint runs print(1) blocks in one warm session.
func BenchmarkWarmPrint(b *testing.B) {
	s, err := (&jail.Backend{}).Open(context.Background(), transport.SessionConfig{})
	if err != nil {
		b.Skip(err)
	}
	defer s.Close()
	var lat []time.Duration
	for b.Loop() {
		t0 := time.Now()
		r, err := s.Exec(context.Background(), transport.Block{Code: "print(1)"})
		if err != nil || r.Stdout != "1\n" {
			b.Fatal(err, r)
		}
		lat = append(lat, time.Since(t0))
	}
	b.ReportMetric(float64(median(lat).Nanoseconds())/1000, "median-µs")
}

// BenchmarkToolCall makes no-op tool calls from Python to a Go handler and
// back; Python times each call.
func BenchmarkToolCall(b *testing.B) {
	noop := transport.ToolHandlerFunc(func(ctx context.Context, c transport.ToolCall) transport.ToolResult {
		return transport.ToolResult{}
	})
	s, err := (&jail.Backend{}).Open(context.Background(), transport.SessionConfig{Tools: noop})
	if err != nil {
		b.Skip(err)
	}
	defer s.Close()
	b.ResetTimer()
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
`, b.N, b.N)
	r, err := s.Exec(context.Background(), transport.Block{Code: code})
	if err != nil || r.ExitCode != 0 {
		b.Fatal(err, r.Stderr)
	}
	f := strings.Fields(r.Stdout)
	med, _ := strconv.ParseFloat(f[0], 64)
	rate, _ := strconv.ParseFloat(f[1], 64)
	b.ReportMetric(med, "median-µs")
	b.ReportMetric(rate, "calls/s")
}
