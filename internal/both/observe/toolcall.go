package observe

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Outcomes of a tool call from code, besides OK, Error and Timeout.
const (
	ValidationError = "validation_error" // its arguments did not match the schema; not run
	Denied          = "denied"           // a person declined it, or a callback vetoed it
	Refused         = "refused"          // it asked for what code cannot honour
	BudgetExceeded  = "budget_exceeded"  // a budget of the block ran out; not made, or its result withheld
)

// ToolCallStart describes a tool call from code.
type ToolCallStart struct {
	Tool        string // the tool's ADK name, as ADK names a direct call's span
	CodeName    string // the dotted name the code called it by
	Description string
	Thread      int // the calling thread's number within its block; 0 the main thread
}

// A ToolCall is one tool call from code. Its methods may be called from
// any goroutine, and do nothing once End has run: a call abandoned at its
// timeout ends while the tool still runs.
type ToolCall struct {
	b     *Block
	span  trace.Span
	s     ToolCallStart
	start time.Time

	mu    sync.Mutex // guards the fields below
	ended bool
	wait  time.Duration // waited for approval
	id    string
	via   string // the callback that answered in the tool's place
	answr string // the approval decision, if it was asked
}

// StartToolCall starts the span of a tool call from the block's code, as
// a child of the block's span. ADK's attributes of a direct call's span
// are set, but never its arguments or result.
func (b *Block) StartToolCall(ctx context.Context, s ToolCallStart) (context.Context, *ToolCall) {
	if b == nil {
		return ctx, nil
	}
	b.calls.Add(1)
	c := &ToolCall{b: b, s: s, start: time.Now()}
	ctx, c.span = b.o.tracer.Start(trace.ContextWithSpan(ctx, b.span), "execute_tool "+s.Tool, trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("gen_ai.tool.name", s.Tool),
		attribute.String("gen_ai.tool.description", s.Description),
		attribute.String("codemode.tool.code_name", s.CodeName),
		attribute.Int("codemode.tool.thread", s.Thread),
	))
	return ctx, c
}

// Recording says whether the call's sizes are wanted: by a span that
// records or by the audit log. Measuring them costs an encoding of the
// arguments and the result.
func (c *ToolCall) Recording() bool {
	return c != nil && (c.span.IsRecording() || c.b.o.audit != nil)
}

// SetCallID records the call's function call id, once it has one.
func (c *ToolCall) SetCallID(id string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return
	}
	c.id = id
	c.span.SetAttributes(attribute.String("gen_ai.tool.call.id", id))
}

// ApprovalAsked marks the call waiting for a person's approval.
func (c *ToolCall) ApprovalAsked() {
	if c == nil {
		return
	}
	c.span.AddEvent("codemode.approval.asked")
	c.b.o.pending.Add(context.Background(), 1)
}

// Decisions on an approval asked.
const (
	Approved   = "approved"
	Declined   = "declined"
	Unanswered = "unanswered" // the block ended, or the wait timed out, first
)

// ApprovalAnswered records the decision on the approval asked, after
// waiting wait.
func (c *ToolCall) ApprovalAnswered(decision string, wait time.Duration) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.answr = decision
	c.wait = wait
	c.span.AddEvent("codemode.approval.answered", trace.WithAttributes(
		attribute.String("codemode.approval.decision", c.answr), attribute.Float64("codemode.approval.wait_seconds", wait.Seconds())))
	c.b.o.pending.Add(context.Background(), -1)
	c.b.o.waits.Record(context.Background(), wait.Seconds(), metric.WithAttributes(attribute.String("codemode.approval.decision", c.answr)))
}

// AnsweredBy names the callback that answered in the tool's place (a
// before-tool callback's result or error, an on-error callback's).
func (c *ToolCall) AnsweredBy(callback string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ended {
		c.via = callback
	}
}

// End ends the call: its outcome, the Python exception type code got when
// it failed, the sizes of its arguments' and result's JSON (when
// Recording), and its error.
func (c *ToolCall) End(outcome, errType string, argsBytes, resultBytes int, err error) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return
	}
	c.ended = true
	d := time.Since(c.start)
	attrs := []attribute.KeyValue{
		attribute.String("codemode.tool.outcome", outcome),
		attribute.Int("codemode.tool.args.bytes", argsBytes),
		attribute.Int("codemode.tool.result.bytes", resultBytes),
	}
	if errType != "" {
		attrs = append(attrs, attribute.String("error.type", errType))
	}
	if c.via != "" {
		attrs = append(attrs, attribute.String("codemode.tool.answered_by", c.via))
	}
	c.span.SetAttributes(attrs...)
	if outcome != OK {
		c.span.SetStatus(codes.Error, outcome+": "+errType)
		if err != nil {
			c.span.RecordError(err)
		}
	}
	c.span.End()
	o := c.b.o
	o.calls.Record(context.Background(), d.Seconds(), metric.WithAttributes(
		attribute.String("gen_ai.tool.name", c.s.Tool), attribute.String("codemode.tool.outcome", outcome)))
	if o.audit != nil {
		rec := append(c.b.id.attrs(),
			slog.String("tool", c.s.Tool), slog.String("call", c.id), slog.String("outcome", outcome),
			slog.Duration("duration", d), slog.Int("args_bytes", argsBytes), slog.Int("result_bytes", resultBytes))
		if errType != "" {
			rec = append(rec, slog.String("error_type", errType))
		}
		if c.answr != "" {
			rec = append(rec, slog.String("approval", c.answr), slog.Duration("approval_wait", c.wait))
		}
		if c.via != "" {
			rec = append(rec, slog.String("answered_by", c.via))
		}
		o.audit.LogAttrs(context.Background(), slog.LevelInfo, "codemode.tool_call", rec...)
	}
}
