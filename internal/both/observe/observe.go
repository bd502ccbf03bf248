package observe

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of every span and metric.
const ScopeName = "github.com/adk-codemode/codemode"

// DefaultRecordCodeBytes bounds the code recorded on a block's span when
// Config.RecordCode is set and RecordCodeBytes is not.
const DefaultRecordCodeBytes = 4096

// Config says where spans, metrics and audit records go.
type Config struct {
	// TracerProvider makes the spans; nil means the global one
	// (otel.GetTracerProvider), which records nothing until the program
	// sets one.
	TracerProvider trace.TracerProvider
	// MeterProvider makes the metrics; nil means the global one.
	MeterProvider metric.MeterProvider
	// AuditLog, if set, gets one record per block and per tool call from
	// code, at level Info.
	AuditLog *slog.Logger
	// RecordCode puts the code of each block on its span (attribute
	// codemode.code), cut to RecordCodeBytes and with every value that
	// looks like a credential redacted (see Redact). Off, a span has the
	// code's size and SHA-256 only.
	RecordCode      bool
	RecordCodeBytes int
}

// Observer records blocks, sandbox starts and tool calls. Its methods are
// safe for concurrent use; a nil *Observer records nothing.
type Observer struct {
	tracer   trace.Tracer
	audit    *slog.Logger
	code     int // bytes of code recorded; 0: none
	sandbox  metric.Int64UpDownCounter
	starts   metric.Float64Histogram
	blocks   metric.Float64Histogram
	calls    metric.Float64Histogram
	cuts     metric.Int64Counter
	pending  metric.Int64UpDownCounter
	waits    metric.Float64Histogram
	poolSize metric.Int64Gauge
	misses   metric.Int64Counter
}

// New returns an Observer for cfg.
func New(cfg Config) *Observer {
	tp, mp := cfg.TracerProvider, cfg.MeterProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter(ScopeName)
	o := &Observer{tracer: tp.Tracer(ScopeName), audit: cfg.AuditLog}
	if cfg.RecordCode {
		o.code = cfg.RecordCodeBytes
		if o.code <= 0 {
			o.code = DefaultRecordCodeBytes
		}
	}
	seconds := metric.WithUnit("s")
	// The instruments of a metric API never fail to be made (a provider
	// that cannot make one returns a no-op one and reports to otel's error
	// handler), so the errors are left to it.
	o.sandbox, _ = m.Int64UpDownCounter("codemode.sandboxes.open", metric.WithDescription("Sandboxes open."), metric.WithUnit("{sandbox}"))
	o.starts, _ = m.Float64Histogram("codemode.sandbox.start.duration", metric.WithDescription("Time to start a sandbox, by backend, start path and outcome."), seconds)
	o.blocks, _ = m.Float64Histogram("codemode.block.duration", metric.WithDescription("Time a block of code ran, by backend and outcome (ok, error, timeout, killed, interrupted, lost, failed)."), seconds)
	o.calls, _ = m.Float64Histogram("codemode.tool_call.duration", metric.WithDescription("Time a tool call from code took, by tool and outcome (ok, error, validation_error, denied, timeout, refused)."), seconds)
	o.cuts, _ = m.Int64Counter("codemode.output.truncations", metric.WithDescription("Outputs cut, by stream and where (sandbox, model)."), metric.WithUnit("{output}"))
	o.pending, _ = m.Int64UpDownCounter("codemode.approvals.pending", metric.WithDescription("Tool calls from code waiting for a person's approval."), metric.WithUnit("{call}"))
	o.waits, _ = m.Float64Histogram("codemode.approval.wait", metric.WithDescription("Time a tool call from code waited for approval, by decision."), seconds)
	o.poolSize, _ = m.Int64Gauge("codemode.pool.size", metric.WithDescription("Sandboxes started ahead and waiting in a pool."), metric.WithUnit("{sandbox}"))
	o.misses, _ = m.Int64Counter("codemode.pool.misses", metric.WithDescription("Sandboxes a pool had none ready for and started on demand."), metric.WithUnit("{sandbox}"))
	return o
}

// Identity says whose a block is: the ADK invocation, session, agent and
// the execute_code call that ran it.
type Identity struct {
	Invocation, Session, Agent, CallID string
}

func (id Identity) attrs() []slog.Attr {
	return []slog.Attr{
		slog.String("invocation", id.Invocation), slog.String("session", id.Session),
		slog.String("agent", id.Agent), slog.String("execute_code_call", id.CallID),
	}
}

// A Block is one block of code, from launch to end.
type Block struct {
	o       *Observer
	span    trace.Span
	id      Identity
	backend string
	start   time.Time
	code    int
	sum     string
	calls   atomic.Int64
}

// StartBlock starts the span of a block of code run on backend, under
// ctx's span, and returns the context its work (sandbox start, tool
// calls) runs in.
func (o *Observer) StartBlock(ctx context.Context, id Identity, backend, code string) (context.Context, *Block) {
	if o == nil {
		return ctx, nil
	}
	h := sha256.Sum256([]byte(code))
	b := &Block{o: o, id: id, backend: backend, start: time.Now(), code: len(code), sum: hex.EncodeToString(h[:])}
	attrs := []attribute.KeyValue{
		attribute.String("codemode.backend", backend),
		attribute.Int("codemode.code.bytes", len(code)),
		attribute.String("codemode.code.sha256", b.sum),
		attribute.String("gen_ai.tool.call.id", id.CallID),
	}
	if o.code > 0 {
		attrs = append(attrs, attribute.String("codemode.code", Redact(cut(code, o.code))))
	}
	ctx, b.span = o.tracer.Start(ctx, "codemode.block", trace.WithAttributes(attrs...))
	return ctx, b
}

// cut is s cut to at most n bytes, on a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Outcomes of a block.
const (
	OK          = "ok"
	Error       = "error"         // the code raised, or exited non-zero
	Timeout     = "timeout"       // stopped in place at its time limit
	Killed      = "killed"        // did not stop in time; the worker was restarted
	OutOfMemory = "out_of_memory" // killed by the sandbox's memory limit; the worker was restarted
	Interrupted = "interrupted"   // the execute_code call ended before the block
	Lost        = "lost"          // the connection to the sandbox was lost
	Failed      = "failed"        // the sandbox could not start or the host failed
)

// BlockEnd is how a block ended.
type BlockEnd struct {
	Outcome   string
	Exception string // the exception's type, for Error
	Lost      string // for Lost: not_run, ran or unknown
	ExitCode  int
	// Output bytes as they reached the host, and those the sandbox
	// dropped from their middle.
	Stdout, Stderr               int
	StdoutDropped, StderrDropped int64
	Files                        int  // workspace files created or changed
	Background                   bool // threads or processes left running
	// EgressMetered says the session meters its egress: EgressBytes is
	// what the block moved through the egress proxy, both ways, and
	// EgressExceeded says Budgets.EgressBytes refused or cut a connection.
	EgressMetered  bool
	EgressBytes    int64
	EgressExceeded bool
	Err            error
}

// End ends the block's span and records its duration and audit record.
func (b *Block) End(e BlockEnd) {
	if b == nil {
		return
	}
	d := time.Since(b.start)
	attrs := []attribute.KeyValue{
		attribute.String("codemode.block.outcome", e.Outcome),
		attribute.Int("codemode.block.exit_code", e.ExitCode),
		attribute.Int("codemode.stdout.bytes", e.Stdout),
		attribute.Int("codemode.stderr.bytes", e.Stderr),
		attribute.Int("codemode.files.changed", e.Files),
		attribute.Int64("codemode.tool_calls", b.calls.Load()),
	}
	if e.Exception != "" {
		attrs = append(attrs, attribute.String("codemode.block.exception", e.Exception))
	}
	if e.Lost != "" {
		attrs = append(attrs, attribute.String("codemode.block.lost", e.Lost))
	}
	if e.Background {
		attrs = append(attrs, attribute.Bool("codemode.block.background", true))
	}
	if e.EgressMetered {
		attrs = append(attrs, attribute.Int64("codemode.egress.bytes", e.EgressBytes))
	}
	if e.EgressExceeded {
		attrs = append(attrs, attribute.String("codemode.budget_exceeded", "Budgets.EgressBytes"))
	}
	for _, s := range []struct {
		name    string
		dropped int64
	}{{"stdout", e.StdoutDropped}, {"stderr", e.StderrDropped}} {
		if s.dropped > 0 {
			attrs = append(attrs, attribute.Int64("codemode."+s.name+".dropped_bytes", s.dropped))
			b.o.Truncated(context.Background(), s.name, "sandbox")
		}
	}
	b.span.SetAttributes(attrs...)
	if e.Outcome != OK {
		msg := e.Outcome
		if e.Err != nil {
			msg = e.Err.Error()
		} else if e.Exception != "" {
			msg = e.Exception
		}
		b.span.SetStatus(codes.Error, msg)
	}
	b.span.End()
	b.o.blocks.Record(context.Background(), d.Seconds(), metric.WithAttributes(
		attribute.String("codemode.backend", b.backend), attribute.String("codemode.block.outcome", e.Outcome)))
	if b.o.audit != nil {
		rec := append(b.id.attrs(),
			slog.String("backend", b.backend), slog.String("outcome", e.Outcome), slog.Duration("duration", d),
			slog.Int("code_bytes", b.code), slog.String("code_sha256", b.sum),
			slog.Int("stdout_bytes", e.Stdout), slog.Int("stderr_bytes", e.Stderr),
			slog.Int("files_changed", e.Files), slog.Int64("tool_calls", b.calls.Load()))
		if e.Exception != "" {
			rec = append(rec, slog.String("exception", e.Exception))
		}
		if e.Lost != "" {
			rec = append(rec, slog.String("lost", e.Lost))
		}
		if e.EgressMetered {
			rec = append(rec, slog.Int64("egress_bytes", e.EgressBytes))
		}
		if e.EgressExceeded {
			rec = append(rec, slog.String("budget_exceeded", "Budgets.EgressBytes"))
		}
		b.o.audit.LogAttrs(context.Background(), slog.LevelInfo, "codemode.block", rec...)
	}
}

// LinkFrom links ctx's span to the block's: for the execute_code call
// that resumes a block paused for approval, whose span is not the block's
// parent.
func (b *Block) LinkFrom(ctx context.Context) {
	if b == nil {
		return
	}
	trace.SpanFromContext(ctx).AddLink(trace.Link{SpanContext: b.span.SpanContext(),
		Attributes: []attribute.KeyValue{attribute.String("codemode.link", "resumes")}})
}

// Truncated counts an output cut: in the sandbox, or for the model.
func (o *Observer) Truncated(ctx context.Context, stream, where string) {
	if o == nil {
		return
	}
	o.cuts.Add(ctx, 1, metric.WithAttributes(attribute.String("codemode.stream", stream), attribute.String("codemode.truncated_at", where)))
}

// A SandboxStart is the start of one sandbox.
type SandboxStart struct {
	o       *Observer
	span    trace.Span
	backend string
	start   time.Time
}

// StartSandbox starts the span of a sandbox's start on backend.
func (o *Observer) StartSandbox(ctx context.Context, backend string) (context.Context, *SandboxStart) {
	if o == nil {
		return ctx, nil
	}
	s := &SandboxStart{o: o, backend: backend, start: time.Now()}
	ctx, s.span = o.tracer.Start(ctx, "codemode.sandbox.start", trace.WithAttributes(attribute.String("codemode.backend", backend)))
	return ctx, s
}

// End ends the start: path says how the sandbox started (for example
// forked, cold, fallback, pooled; "" if the backend does not say), reason
// why it fell back, and err why it failed.
func (s *SandboxStart) End(path, reason string, err error) {
	if s == nil {
		return
	}
	outcome := OK
	attrs := []attribute.KeyValue{attribute.String("codemode.sandbox.start_path", path)}
	if reason != "" {
		attrs = append(attrs, attribute.String("codemode.sandbox.fallback_reason", reason))
	}
	if err != nil {
		outcome = Error
		s.span.RecordError(err)
		s.span.SetStatus(codes.Error, err.Error())
	}
	s.span.SetAttributes(attrs...)
	s.span.End()
	s.o.starts.Record(context.Background(), time.Since(s.start).Seconds(), metric.WithAttributes(
		attribute.String("codemode.backend", s.backend), attribute.String("codemode.sandbox.start_path", path), attribute.String("codemode.outcome", outcome)))
	if err == nil {
		s.o.sandbox.Add(context.Background(), 1, metric.WithAttributes(attribute.String("codemode.backend", s.backend)))
	}
}

// SandboxClosed counts a sandbox of backend closed.
func (o *Observer) SandboxClosed(backend string) {
	if o == nil {
		return
	}
	o.sandbox.Add(context.Background(), -1, metric.WithAttributes(attribute.String("codemode.backend", backend)))
}

// PoolSize records how many sandboxes a pool holds ready.
func (o *Observer) PoolSize(backend string, n int) {
	if o == nil {
		return
	}
	o.poolSize.Record(context.Background(), int64(n), metric.WithAttributes(attribute.String("codemode.backend", backend)))
}

// PoolMiss counts a sandbox a pool had none ready for.
func (o *Observer) PoolMiss(backend string) {
	if o == nil {
		return
	}
	o.misses.Add(context.Background(), 1, metric.WithAttributes(attribute.String("codemode.backend", backend)))
}

// Event adds the event name, with attrs, to ctx's span, if it records: a
// backend marks the steps of a sandbox's start this way (the span is the
// plugin's codemode.sandbox.start).
func Event(ctx context.Context, name string, attrs ...attribute.KeyValue) {
	if s := trace.SpanFromContext(ctx); s.IsRecording() {
		s.AddEvent(name, trace.WithAttributes(attrs...))
	}
}

// Resumed records an attempt to resume a session of backend over a new
// connection, as a span of its own from the global tracer provider: it
// happens in the background, outside any block, as the attempt's
// number, its outcome and its error.
func Resumed(ctx context.Context, backend string, attempt int, started time.Time, err error) {
	_, s := otel.GetTracerProvider().Tracer(ScopeName).Start(ctx, "codemode.sandbox.resume",
		trace.WithTimestamp(started), trace.WithAttributes(
			attribute.String("codemode.backend", backend), attribute.Int("codemode.attempt", attempt)))
	if err != nil {
		s.RecordError(err)
		s.SetStatus(codes.Error, err.Error())
	}
	s.End()
}
