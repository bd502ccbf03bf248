package codemode

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	eng "github.com/adk-codemode/codemode/internal/host/engine"
	"github.com/adk-codemode/codemode/internal/testsupport/adksuite"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/artifact"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
)

// costedArtifacts is an artifact service that counts its writes and the
// bytes they carry, and takes a fixed time for each, as a store across a
// network would.
type costedArtifacts struct {
	artifact.Service
	delay  time.Duration
	writes atomic.Int64
	bytes  atomic.Int64
}

func (c *costedArtifacts) Save(ctx context.Context, req *artifact.SaveRequest) (*artifact.SaveResponse, error) {
	c.writes.Add(1)
	if req.Part != nil && req.Part.InlineData != nil {
		c.bytes.Add(int64(len(req.Part.InlineData.Data)))
	}
	time.Sleep(c.delay)
	return c.Service.Save(ctx, req)
}

// costTurnBlock is one block of the measured turn: nine tool calls, three
// of them with a 25 kB result (under Config.LargeResultBytes, so the code
// gets them whole), six with a 2 kB one.
const costTurnBlock = `from tools import fetch_report
total = 0
for size in (25_000, 2_000, 2_000, 25_000, 2_000, 2_000, 25_000, 2_000, 2_000):
    total += len(fetch_report(size=size)["body"])
print(total)`

// BenchmarkToolResultArtifacts measures what saving the tool results of
// code costs a turn of three blocks of nine tool calls each, against an
// artifact service that takes 20 ms a write: "per-block" as Code Mode
// saves them, "per-call" with one write for each result (the pending
// bound at zero, which saves each result as soon as it is collected, as
// upstream saves one artifact per call), and "off" without an artifact
// service. It reports the writes and KiB written per turn.
func BenchmarkToolResultArtifacts(b *testing.B) {
	script := func() *adksuite.Script {
		return adksuite.NewScript().On("go", adksuite.Exec(costTurnBlock), adksuite.Exec(costTurnBlock), adksuite.Exec(costTurnBlock), adksuite.Say("done"))
	}
	for _, mode := range []string{"per-call", "per-block", "off"} {
		b.Run(mode, func(b *testing.B) {
			if mode == "per-call" {
				old := eng.MaxPendingResultBytes
				eng.MaxPendingResultBytes = 0
				b.Cleanup(func() { eng.MaxPendingResultBytes = old })
			}
			fc := fixtureConfig{cfg: Config{Tools: []tool.Tool{bigTool(b)}}}
			var svc *costedArtifacts
			if mode != "off" {
				svc = &costedArtifacts{Service: artifact.InMemoryService(), delay: 20 * time.Millisecond}
				fc.artifacts = svc
			}
			f := newFixture(b, script(), fc)
			// One turn before the timed loop starts the jail's template.
			f.turn(context.Background(), "warm", "go")
			if svc != nil {
				svc.writes.Store(0)
				svc.bytes.Store(0)
			}
			turns := 0
			for b.Loop() {
				evs := f.turn(context.Background(), fmt.Sprintf("s%d", turns), "go")
				for _, out := range outputs(evs) {
					if out["stdout"] != "87000\n" {
						b.Fatalf("block printed %q, stderr %q", out["stdout"], out["stderr"])
					}
				}
				turns++
			}
			if svc != nil {
				b.ReportMetric(float64(svc.writes.Load())/float64(turns), "writes/turn")
				b.ReportMetric(float64(svc.bytes.Load())/1024/float64(turns), "KiB/turn")
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(turns), "ms/turn")
		})
	}
}

// bigTool returns {"body": "x" * size}.
func bigTool(t testing.TB) tool.Tool {
	t.Helper()
	big, err := functiontool.New(functiontool.Config{Name: "fetch_report", Description: "Fetch a report."},
		func(_ agent.Context, a struct {
			Size int `json:"size"`
		}) (map[string]any, error) {
			return map[string]any{"body": strings.Repeat("x", a.Size)}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return big
}
