package engine

import (
	"context"
	"errors"
	"regexp"
	"strings"

	"github.com/adk-codemode/codemode/internal/both/observe"
	"github.com/adk-codemode/codemode/transport"
)

// CodeTimeout is the cause of a block's context when its run time ran out:
// a [transport.StopReason], whose message the code is given as it is.
type CodeTimeout struct{ Msg string }

func (e *CodeTimeout) Error() string       { return e.Msg }
func (e *CodeTimeout) StopMessage() string { return e.Msg }

// LostError is a block whose sandbox was lost; Msg tells the model what
// that means for the code.
type LostError struct {
	Msg   string
	Stage string // whether the code ran: not_run, ran or unknown
}

func (e *LostError) Error() string { return e.Msg }

// DeniedType is the Python exception type (transport.ToolError.Type) of a
// tool call from code that a person declined to approve.
const DeniedType = "ToolDeniedError"

// exceptionLine is the last line of a Python traceback: the exception's
// type, perhaps dotted, then its message.
var exceptionLine = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)(?::|$)`)

// BlockEnd says how a block run in ctx ended, for its span and audit
// record.
func BlockEnd(ctx context.Context, res *transport.Result, err error) observe.BlockEnd {
	var lost *LostError
	switch {
	case errors.As(err, &lost):
		return observe.BlockEnd{Outcome: observe.Lost, Lost: lost.Stage, Err: err}
	case err != nil:
		return observe.BlockEnd{Outcome: observe.Failed, Err: err}
	}
	e := observe.BlockEnd{
		Outcome: observe.OK, ExitCode: res.ExitCode,
		Stdout: len(res.Stdout), Stderr: len(res.Stderr),
		StdoutDropped: res.StdoutDropped, StderrDropped: res.StderrDropped,
		Files: len(res.Files), Background: res.Background,
	}
	var timeout *CodeTimeout
	switch {
	case res.Reset && res.OutOfMemory:
		e.Outcome = observe.OutOfMemory
	case res.Reset:
		e.Outcome = observe.Killed
	case res.Stopped && errors.As(context.Cause(ctx), &timeout):
		e.Outcome = observe.Timeout
	case res.Stopped:
		e.Outcome = observe.Interrupted
	case res.ExitCode != 0:
		e.Outcome = observe.Error
		e.Exception = exceptionType(res.Stderr)
	}
	return e
}

// exceptionType is the type of the exception a traceback in stderr ends
// with, or "".
func exceptionType(stderr string) string {
	i := strings.LastIndex(stderr, "Traceback (most recent call last):")
	if i < 0 {
		return ""
	}
	var last string
	for _, l := range strings.Split(stderr[i:], "\n") {
		if l != "" && l[0] != ' ' && l[0] != '\t' {
			if m := exceptionLine.FindStringSubmatch(l); m != nil {
				last = m[1]
			}
		}
	}
	return last
}

// ToolOutcome classifies a tool call's result for its span and audit
// record.
func ToolOutcome(res transport.ToolResult) (outcome, errType string) {
	if res.Err == nil {
		return observe.OK, ""
	}
	switch t := res.Err.Type; t {
	case "ValidationError":
		return observe.ValidationError, t
	case "TimeoutError":
		return observe.Timeout, t
	case DeniedType:
		return observe.Denied, t
	case "UnsupportedToolActionError":
		return observe.Refused, t
	case BudgetType:
		return observe.BudgetExceeded, t
	default:
		return observe.Error, t
	}
}

// observedCallKey is the context key of a tool call's *observe.ToolCall.
type observedCallKey struct{}

// WithObservedCall is ctx carrying the tool call oc, for ObservedCall.
func WithObservedCall(ctx context.Context, oc *observe.ToolCall) context.Context {
	return context.WithValue(ctx, observedCallKey{}, oc)
}

// ObservedCall is the tool call of ctx, or nil.
func ObservedCall(ctx context.Context) *observe.ToolCall {
	oc, _ := ctx.Value(observedCallKey{}).(*observe.ToolCall)
	return oc
}

// EndObserved ends the tool call oc of call with its result res.
func EndObserved(oc *observe.ToolCall, call transport.ToolCall, res transport.ToolResult) {
	if oc == nil {
		return
	}
	outcome, errType := ToolOutcome(res)
	var argsBytes, resultBytes int
	var err error
	if oc.Recording() {
		argsBytes = JSONSize(call.Args)
		if res.Err == nil {
			resultBytes = JSONSize(res.Value)
		} else {
			err = errors.New(res.Err.Type)
		}
	}
	oc.End(outcome, errType, argsBytes, resultBytes, err)
}
