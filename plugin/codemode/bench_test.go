package codemode

import (
	"context"
	"errors"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/backend/jail"
	"github.com/adk-codemode/codemode/transport"
)

// BenchmarkJailColdStartInADKProgram is BenchmarkSessionColdStart of
// transport/jail run from a binary the size of an ADK agent (this test
// binary links ADK, genai, gRPC, OpenTelemetry and the rest). A jail
// re-executes the host binary, and its init runs every package
// initializer the program has before the jail's own hook: this shows what
// that costs an agent against the small jail test binary.
func BenchmarkJailColdStartInADKProgram(b *testing.B) {
	be := &jail.Backend{}
	py, err := be.Config.Interpreter()
	if err != nil {
		b.Skip(err)
	}
	var bare, sess []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if err := exec.Command(py, "-c", "pass").Run(); err != nil {
			b.Fatal(err)
		}
		bare = append(bare, time.Since(t0))

		t0 = time.Now()
		s, err := be.Open(context.Background(), transport.SessionConfig{})
		if errors.Is(err, jail.ErrUnsupported) {
			b.Skip(err)
		}
		if err != nil {
			b.Fatal(err)
		}
		sess = append(sess, time.Since(t0))
		b.StopTimer()
		s.Close()
		b.StartTimer()
	}
	mb, ms := benchMedian(bare), benchMedian(sess)
	b.ReportMetric(float64(mb.Microseconds())/1000, "bare-ms")
	b.ReportMetric(float64(ms.Microseconds())/1000, "session-ms")
	b.ReportMetric(float64(ms)/float64(mb), "ratio")
}

func benchMedian(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
