package adksuite

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/adk-codemode/codemode/backend/jail"
	"github.com/adk-codemode/codemode/internal/both/observe"
	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
)

// observeTests are what a turn shows of itself: the span tree, the
// metrics and the audit records of blocks, tool calls from code and
// approvals, with nothing secret in them.
var observeTests = []test{
	{"Observability", testObservability},
	{"TraceCodeRedacts", testTraceCodeRedacts},
	{"MemoryKillObserved", testMemoryKillObserved},
}

// observeSwap passes ended spans to the recorder a test installs. Both
// ADK lines take their tracer from the global provider once, so the
// global provider is set once for the test binary and each test installs
// its recorder.
type observeSwap struct {
	sdktrace.SpanProcessor
	rec atomic.Pointer[tracetest.SpanRecorder]
}

func (p *observeSwap) OnStart(ctx context.Context, s sdktrace.ReadWriteSpan) {
	if r := p.rec.Load(); r != nil {
		r.OnStart(ctx, s)
	}
}

func (p *observeSwap) OnEnd(s sdktrace.ReadOnlySpan) {
	if r := p.rec.Load(); r != nil {
		r.OnEnd(s)
	}
}

var (
	observeTracingOnce sync.Once
	observeTracing     = &observeSwap{SpanProcessor: tracetest.NewSpanRecorder()}
)

// observeRecordSpans sets the global tracer provider (once) and records
// the spans that end during the test: ADK's and, with no TracerProvider
// in the Config, Code Mode's.
func observeRecordSpans(t *testing.T) *tracetest.SpanRecorder {
	observeTracingOnce.Do(func() {
		otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(observeTracing)))
	})
	rec := tracetest.NewSpanRecorder()
	observeTracing.rec.Store(rec)
	t.Cleanup(func() { observeTracing.rec.Store(nil) })
	return rec
}

// observeSecret looks like a payment provider's live key: planted in
// code, arguments and output, it must show up in no span, metric or
// record.
const observeSecret = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"

func observeAttr(kv []attribute.KeyValue, key string) (attribute.Value, bool) {
	for _, a := range kv {
		if string(a.Key) == key {
			return a.Value, true
		}
	}
	return attribute.Value{}, false
}

func observeAttrString(s sdktrace.ReadOnlySpan, key string) string {
	v, _ := observeAttr(s.Attributes(), key)
	return v.String()
}

// testObservability runs turns through a real runner and the jail with
// the OpenTelemetry SDK's in-memory exporters and an audit log, and
// checks the span tree, the metrics and the records: a turn of two
// blocks (parallel calls from threads, a tool error, a validation
// failure; then a timeout), and turns with an approval granted and one
// declined.
func testObservability(t *testing.T, l Line) {
	rec := observeRecordSpans(t)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	var audit bytes.Buffer
	var auditMu sync.Mutex
	logger := slog.New(slog.NewJSONHandler(observeLockedWriter{&auditMu, &audit}, nil))

	fail := Tool{
		Name: "fail", Description: "Always fails.",
		Run: func(Call, map[string]any) (map[string]any, error) { return nil, errors.New("the upstream is down") },
	}
	pause := Tool{
		Name: "pause", Description: "Wait a little, then echo the label.",
		Params: object(map[string]*jsonschema.Schema{"label": str("")}),
		Run: func(_ Call, a map[string]any) (map[string]any, error) {
			time.Sleep(100 * time.Millisecond)
			return map[string]any{"label": a["label"]}, nil
		},
	}
	tools := append(approvalTools(newApprovalEffects()), fail, pause)
	obsCfg := Config{MeterProvider: mp, AuditLog: logger, Timeout: 2 * time.Second}

	blockOne := `from concurrent.futures import ThreadPoolExecutor
from tools import record, fail, pause, ToolError
key = "` + observeSecret + `"
with ThreadPoolExecutor(4) as pool:
    print(list(pool.map(lambda i: pause(label=f"{key}-{i}")["label"][-1], range(4))))
try:
    fail()
except ToolError as e:
    print("failed:", e.type)
try:
    record(label=5)
except ToolError as e:
    print("invalid:", e.type)
print(key)`
	blockTwo := `import time
time.sleep(30)`
	m := NewScript().On("work", Exec(blockOne), Exec(blockTwo), Say("done"))
	f := start(t, l, Setup{Tools: tools, Model: m, Config: obsCfg})
	out := Outputs(f.turn("s1", "work"))
	if len(out) != 2 || !strings.Contains(out[0]["stdout"].(string), "failed: ") {
		t.Fatalf("outputs %v, want two, the first with the failed call", out)
	}
	if !strings.Contains(out[0]["stdout"].(string), "invalid: ValidationError") {
		t.Errorf("first block's stdout %q, want the validation failure", out[0]["stdout"])
	}

	// Approvals: one granted, one declined, each in a turn of its own.
	// The model runs the code, and once the block has answered, ends the
	// turn.
	am := NewScript().
		On("pay", Exec(approvalPayCode), Say("paid")).
		On("rm", Exec(`from tools import delete_file, ToolDeniedError
try:
    delete_file(path="a.txt")
except ToolDeniedError:
    print("denied")`), Say("kept"))
	a := start(t, l, Setup{Tools: approvalTools(newApprovalEffects()), Model: am, Config: obsCfg})
	c := onlyApprovalRequest(t, a.turn("s2", "pay"))
	time.Sleep(20 * time.Millisecond) // a wait the span can show
	a.answerApproval("s2", c, true)
	c = onlyApprovalRequest(t, a.turn("s3", "rm"))
	a.answerApproval("s3", c, false)

	spans := rec.Ended()
	byID := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byID[s.SpanContext().SpanID().String()] = s
	}
	parent := func(s sdktrace.ReadOnlySpan) sdktrace.ReadOnlySpan { return byID[s.Parent().SpanID().String()] }
	var blocks, calls, starts []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.InstrumentationScope().Name != observe.ScopeName {
			continue
		}
		switch {
		case s.Name() == "codemode.block":
			blocks = append(blocks, s)
		case s.Name() == "codemode.sandbox.start":
			starts = append(starts, s)
		case strings.HasPrefix(s.Name(), "execute_tool "):
			calls = append(calls, s)
		default:
			t.Errorf("unexpected span %q", s.Name())
		}
	}
	if len(blocks) != 4 {
		t.Fatalf("%d block spans, want 4 (two blocks, the paid and the deleting one)", len(blocks))
	}
	outcomes := map[string]int{}
	for _, b := range blocks {
		// A block's span is a child of the span ADK opens for the
		// execute_code call, which both lines name so.
		p := parent(b)
		if p == nil || p.Name() != "execute_tool execute_code" {
			t.Errorf("block span's parent %v, want ADK's execute_tool execute_code span", p)
		}
		outcomes[observeAttrString(b, "codemode.block.outcome")]++
		if observeAttrString(b, "codemode.code.sha256") == "" || observeAttrString(b, "codemode.backend") == "" {
			t.Errorf("block span without its code hash or backend: %v", b.Attributes())
		}
		if _, ok := observeAttr(b.Attributes(), "codemode.code"); ok {
			t.Errorf("the code is on a block span without TraceCode")
		}
	}
	if outcomes["ok"] != 3 || outcomes["timeout"] != 1 {
		t.Errorf("block outcomes %v, want 3 ok and 1 timeout", outcomes)
	}
	for _, s := range starts {
		if p := parent(s); p == nil || p.Name() != "codemode.block" {
			t.Errorf("sandbox start's parent %v, want a block span", p)
		}
		path := observeAttrString(s, "codemode.sandbox.start_path")
		if path != "forked" && path != "cold" && path != "fallback" {
			t.Errorf("sandbox start path %q", path)
		}
		if !strings.HasPrefix(observeAttrString(s, "codemode.backend"), "jail:") {
			continue
		}
		// Each step of the jail's start is an event of the span, in order.
		want := []string{"codemode.sandbox.setup", "codemode.sandbox.worker_spawned", "codemode.sandbox.worker_ready", "codemode.sandbox.handshake"}
		if path == "forked" {
			want = append([]string{"codemode.sandbox.template_fork"}, want...)
		}
		var got []string
		for _, ev := range s.Events() {
			got = append(got, ev.Name)
		}
		if !slices.Equal(got, want) {
			t.Errorf("a %s start's events %q, want %q", path, got, want)
		}
	}
	if len(starts) != 3 {
		t.Errorf("%d sandbox starts, want 3 (one per turn)", len(starts))
	}
	callOutcomes := map[string]int{}
	var records []sdktrace.ReadOnlySpan
	var approved, declined sdktrace.ReadOnlySpan
	for _, s := range calls {
		if p := parent(s); p == nil || p.Name() != "codemode.block" {
			t.Errorf("%s's parent %v, want a block span", s.Name(), p)
		}
		if observeAttrString(s, "gen_ai.tool.call.id") == "" || observeAttrString(s, "gen_ai.operation.name") != "execute_tool" {
			t.Errorf("%s lacks ADK's attributes: %v", s.Name(), s.Attributes())
		}
		o := observeAttrString(s, "codemode.tool.outcome")
		callOutcomes[s.Name()+":"+o]++
		if s.Name() == "execute_tool pause" {
			records = append(records, s)
		}
		for _, ev := range s.Events() {
			if ev.Name == "codemode.approval.answered" {
				d, _ := observeAttr(ev.Attributes, "codemode.approval.decision")
				switch d.AsString() {
				case observe.Approved:
					approved = s
				case observe.Declined:
					declined = s
				}
			}
		}
	}
	for _, want := range []string{"execute_tool fail:error", "execute_tool record:validation_error", "execute_tool send_money:ok", "execute_tool delete_file:denied"} {
		if callOutcomes[want] != 1 {
			t.Errorf("tool call outcomes %v, want one %s", callOutcomes, want)
		}
	}
	if approved == nil || declined == nil || approved.Name() != "execute_tool send_money" || declined.Name() != "execute_tool delete_file" {
		t.Errorf("approval events: approved on %v, declined on %v", approved, declined)
	}
	// The four calls from the thread pool ran side by side: some two
	// overlap in time.
	overlap := false
	for i := range records {
		for j := range records {
			if i != j && records[i].StartTime().Before(records[j].EndTime()) && records[j].StartTime().Before(records[i].EndTime()) {
				overlap = true
			}
		}
	}
	if len(records) != 4 || !overlap {
		t.Errorf("%d pause calls, overlapping %v; want the four parallel ones to overlap", len(records), overlap)
	}
	// Each names its thread by number: the pool's threads, never the main
	// one (0).
	threads := map[int64]bool{}
	for _, s := range records {
		v, _ := observeAttr(s.Attributes(), "codemode.tool.thread")
		threads[v.AsInt64()] = true
	}
	if len(threads) < 2 || threads[0] {
		t.Errorf("the pause calls' threads %v, want at least two, none the main thread", threads)
	}
	// The execute_code call that resumed the paid block links to it.
	linked := false
	for _, s := range spans {
		for _, lk := range s.Links() {
			if b, ok := byID[lk.SpanContext.SpanID().String()]; ok && b.Name() == "codemode.block" && s.Name() == "execute_tool execute_code" {
				linked = true
			}
		}
	}
	if !linked {
		t.Error("no execute_code span links to the block it resumed")
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	metrics := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			metrics[m.Name] = m.Data
		}
	}
	blockOutcomes := observeHistogramAttrs(t, metrics["codemode.block.duration"], "codemode.block.outcome")
	if blockOutcomes["ok"] != 3 || blockOutcomes["timeout"] != 1 {
		t.Errorf("codemode.block.duration counts by outcome %v", blockOutcomes)
	}
	toolOutcomes := observeHistogramAttrs(t, metrics["codemode.tool_call.duration"], "codemode.tool.outcome")
	if toolOutcomes["validation_error"] != 1 || toolOutcomes["denied"] != 1 || toolOutcomes["error"] != 1 || toolOutcomes["ok"] < 6 {
		t.Errorf("codemode.tool_call.duration counts by outcome %v", toolOutcomes)
	}
	for _, name := range []string{"codemode.sandbox.start.duration", "codemode.sandboxes.open", "codemode.approval.wait", "codemode.approvals.pending"} {
		if metrics[name] == nil {
			t.Errorf("no %s metric", name)
		}
	}

	auditMu.Lock()
	logText := audit.String()
	auditMu.Unlock()
	var blockRecs, callRecs int
	for _, line := range strings.Split(strings.TrimSpace(logText), "\n") {
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("audit record %q: %v", line, err)
		}
		switch r["msg"] {
		case "codemode.block":
			blockRecs++
			if r["invocation"] == "" || r["session"] == "" || r["agent"] == "" || r["code_sha256"] == nil {
				t.Errorf("block record lacks who or what: %v", r)
			}
		case "codemode.tool_call":
			callRecs++
			if r["tool"] == "delete_file" && r["approval"] != observe.Declined {
				t.Errorf("delete_file's record %v, want the declined approval", r)
			}
		}
	}
	if blockRecs != 4 || callRecs < 9 {
		t.Errorf("%d block and %d tool call records, want 4 and at least 9", blockRecs, callRecs)
	}

	// Nothing recorded holds the secret from the code, the arguments or
	// the output: no span of Code Mode's scope, no metric, no record.
	for _, s := range spans {
		if s.InstrumentationScope().Name != observe.ScopeName {
			continue // ADK's own spans record a call's arguments and response (docs/observability.md)
		}
		if strings.Contains(fmt.Sprint(s.Name(), s.Attributes(), s.Events(), s.Status()), observeSecret[8:]) {
			t.Errorf("span %s holds the secret", s.Name())
		}
	}
	if strings.Contains(fmt.Sprintf("%+v", rm), observeSecret[8:]) {
		t.Error("a metric holds the secret")
	}
	if strings.Contains(logText, observeSecret[8:]) {
		t.Error("the audit log holds the secret")
	}
}

// observeHistogramAttrs counts a histogram's measurements by the value of
// key.
func observeHistogramAttrs(t *testing.T, data metricdata.Aggregation, key string) map[string]uint64 {
	t.Helper()
	h, ok := data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("%T is not a float64 histogram", data)
	}
	out := map[string]uint64{}
	for _, dp := range h.DataPoints {
		v, _ := dp.Attributes.Value(attribute.Key(key))
		out[v.AsString()] += dp.Count
	}
	return out
}

// observeLockedWriter serialises the writes of an audit log that blocks
// and calls from threads write to at once.
type observeLockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l observeLockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// testTraceCodeRedacts: with TraceCode, a block's span holds its code,
// with a value that looks like a credential redacted.
func testTraceCodeRedacts(t *testing.T, l Line) {
	rec := observeRecordSpans(t)
	code := `key = "` + observeSecret + `"
print(len(key))`
	m := NewScript().On("go", Exec(code), Say("ok"))
	f := start(t, l, Setup{Model: m, Config: Config{TraceCode: true}})
	if out := Outputs(f.turn("s1", "go"))[0]; out["stderr"] != "" {
		t.Fatalf("stderr: %s\nstdout: %s", out["stderr"], out["stdout"])
	}
	var got string
	for _, s := range rec.Ended() {
		if s.Name() == "codemode.block" {
			got = observeAttrString(s, "codemode.code")
		}
	}
	if want := `key = "[redacted]"` + "\nprint(len(key))"; got != want {
		t.Errorf("codemode.code = %q, want %q", got, want)
	}
}

// testMemoryKillObserved: a block whose worker the jail's memory limit
// kills tells the model so, with the limit, and its span and audit record
// have the outcome out_of_memory.
func testMemoryKillObserved(t *testing.T, l Line) {
	rec := observeRecordSpans(t)
	var audit bytes.Buffer
	var auditMu sync.Mutex
	logger := slog.New(slog.NewJSONHandler(observeLockedWriter{&auditMu, &audit}, nil))
	be := &jail.Backend{Config: jail.Config{MemoryBytes: 128 << 20, AddressSpaceBytes: 4 << 30}}
	t.Cleanup(func() { _ = be.Close() })
	Backend(t) // skips or fails where the jail cannot run
	m := NewScript().On("go", Exec("x = b'x' * (1 << 30)"), Say("done"))
	f := start(t, l, Setup{Model: m, Config: Config{Backend: be, AuditLog: logger}})
	out := Outputs(f.turn("s1", "go"))
	if len(out) != 1 {
		t.Fatalf("%d results, want 1", len(out))
	}
	stderr, _ := out[0]["stderr"].(string)
	if !strings.Contains(stderr, "the sandbox ran out of memory (its limit is 128 MiB)") {
		if !strings.Contains(stderr, "signal killed") {
			t.Fatalf("stderr %q: want the worker killed", stderr)
		}
		hostcap.Missing(t, hostcap.Cgroup, "the jail has no memory cgroup to tell a memory kill by")
	}
	var outcome string
	for _, s := range rec.Ended() {
		if s.Name() == "codemode.block" {
			outcome = observeAttrString(s, "codemode.block.outcome")
		}
	}
	if outcome != "out_of_memory" {
		t.Errorf("the block span's outcome is %q, want out_of_memory", outcome)
	}
	auditMu.Lock()
	defer auditMu.Unlock()
	if !strings.Contains(audit.String(), `"outcome":"out_of_memory"`) {
		t.Errorf("the audit log has no out_of_memory outcome:\n%s", audit.String())
	}
}
