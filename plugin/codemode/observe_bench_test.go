package codemode

import (
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"

	"github.com/adk-codemode/codemode/internal/testsupport/adksuite"
	"github.com/adk-codemode/codemode/internal/testsupport/sessionbench"
)

// observedConfigs are the two sides of the observability benchmarks: off
// (no provider set: the global no-op ones), and on, with the SDK's tracer
// provider exporting each span to memory, its meter provider with a
// reader, and an audit log.
func observedConfigs() []struct {
	name string
	cfg  Config
} {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewInMemoryExporter()))
	return []struct {
		name string
		cfg  Config
	}{
		{"off", Config{}},
		{"on", Config{TracerProvider: tp, MeterProvider: mp, AuditLog: discardLogger()}},
	}
}

// BenchmarkObservedToolCall is a no-op tool call from code with tracing,
// metrics and the audit log off and on: each iteration a turn whose block
// times 200 calls itself; call-µs is the median per call, as the code
// sees it.
func BenchmarkObservedToolCall(b *testing.B) {
	noop, err := functiontool.New(functiontool.Config{Name: "noop", Description: "Do nothing."},
		func(agent.Context, struct{}) (map[string]any, error) { return map[string]any{}, nil })
	if err != nil {
		b.Fatal(err)
	}
	code := `import time
from tools import noop
noop()
t = time.perf_counter_ns()
for _ in range(200):
    noop()
print((time.perf_counter_ns() - t) // 200)`
	for _, c := range observedConfigs() {
		b.Run(c.name, func(b *testing.B) {
			cfg := c.cfg
			cfg.Tools = []tool.Tool{noop}
			m := adksuite.NewScript().On("go", adksuite.Exec(code), adksuite.Say("ok"))
			f := newFixture(b, m, fixtureConfig{cfg: cfg})
			var per []time.Duration
			for b.Loop() {
				out := outputs(f.turn(b.Context(), "s1", "go"))
				ns, err := strconv.Atoi(strings.TrimSpace(fmt.Sprint(out[0]["stdout"])))
				if err != nil {
					b.Fatalf("block printed %v: %v", out[0], err)
				}
				per = append(per, time.Duration(ns))
			}
			b.ReportMetric(float64(sessionbench.Median(per).Nanoseconds())/1000, "call-µs")
		})
	}
}

// BenchmarkObservedWarmBlock is a turn of 40 no-op blocks through the
// runner, with observability off and on; block-µs is the turn's time per
// block (the turn's sandbox start included, the same on both sides).
func BenchmarkObservedWarmBlock(b *testing.B) {
	steps := make([]adksuite.Step, 0, 41)
	for range 40 {
		steps = append(steps, adksuite.Exec("x = 1"))
	}
	steps = append(steps, adksuite.Say("ok"))
	for _, c := range observedConfigs() {
		b.Run(c.name, func(b *testing.B) {
			m := adksuite.NewScript().On("go", steps...)
			f := newFixture(b, m, fixtureConfig{cfg: c.cfg})
			var per []time.Duration
			for b.Loop() {
				start := time.Now()
				f.turn(b.Context(), "s1", "go")
				per = append(per, time.Since(start)/40)
			}
			b.ReportMetric(float64(sessionbench.Median(per).Nanoseconds())/1000, "block-µs")
		})
	}
}

// discardLogger is an audit log that formats each record as JSON and
// drops it: the cost of the records without the cost of a disk.
func discardLogger() *slog.Logger { return slog.New(slog.NewJSONHandler(io.Discard, nil)) }
