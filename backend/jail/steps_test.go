//go:build linux && amd64

package jail

import (
	"slices"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/adk-codemode/codemode/transport"
)

// TestStartSteps checks that each step of a start is an event of the span
// the caller's context carries (the plugin's codemode.sandbox.start), in
// order, on both paths.
func TestStartSteps(t *testing.T) {
	common := []string{"codemode.sandbox.setup", "codemode.sandbox.worker_spawned", "codemode.sandbox.worker_ready", "codemode.sandbox.handshake"}
	for _, c := range []struct {
		name string
		be   *Backend
		want []string
	}{
		{"forked", &Backend{Config: Config{Processes: 103}}, append([]string{"codemode.sandbox.template_fork"}, common...)},
		{"cold", &Backend{Cold: true}, common},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Cleanup(func() { _ = c.be.Close() })
			if c.name == "forked" {
				if coldByDefault {
					t.Skip("CODEMODE_JAIL_START=cold makes every Backend start cold")
				}
				sessionOf(t, c.be).Close() // the template's start is not this start
			}
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			ctx, span := tp.Tracer("test").Start(t.Context(), "start")
			s, err := c.be.Open(ctx, transport.SessionConfig{})
			skipIfUnsupported(t, err)
			if err != nil {
				t.Fatal(err)
			}
			span.End()
			s.Close()
			if fb := s.(*Session).Fallback(); fb != nil {
				t.Fatalf("the session fell back: %v", fb)
			}
			var got []string
			for _, ev := range rec.Ended()[0].Events() {
				got = append(got, ev.Name)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("events %q, want %q", got, c.want)
			}
		})
	}
}

// BenchmarkStartSteps reports where a start's time goes, step by step: the
// median time from the start (or the step before) to each event of
// TestStartSteps, in ms, on both paths.
func BenchmarkStartSteps(b *testing.B) {
	for _, c := range []struct {
		name string
		be   *Backend
	}{
		{"forked", &Backend{Config: Config{Processes: 103}}},
		{"cold", &Backend{Cold: true}},
	} {
		b.Run(c.name, func(b *testing.B) {
			defer func() { _ = c.be.Close() }()
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			open := func() {
				ctx, span := tp.Tracer("bench").Start(b.Context(), "start")
				s, err := c.be.Open(ctx, transport.SessionConfig{})
				span.End()
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				s.Close()
				b.StartTimer()
			}
			open() // the template's start is not a session's
			rec.Reset()
			for b.Loop() {
				open()
			}
			steps := map[string][]float64{}
			var order []string
			for _, sp := range rec.Ended() {
				last := sp.StartTime()
				for _, ev := range sp.Events() {
					if _, ok := steps[ev.Name]; !ok {
						order = append(order, ev.Name)
					}
					steps[ev.Name] = append(steps[ev.Name], float64(ev.Time.Sub(last).Microseconds())/1000)
					last = ev.Time
				}
			}
			for _, name := range order {
				b.ReportMetric(medianF(steps[name]), name[len("codemode.sandbox."):]+"-ms")
			}
		})
	}
}
