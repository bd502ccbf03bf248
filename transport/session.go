package transport

import (
	"context"
	"fmt"
	"time"
)

// Backend starts sandboxes.
type Backend interface {
	// Name identifies the backend and the sandbox it starts (for example
	// "jail:/usr/bin/python3"). Two backends with the same name report the
	// same [Environment], so callers may cache it by name.
	Name() string
	// Open starts a sandbox and returns its session, ready to run code.
	Open(ctx context.Context, cfg SessionConfig) (Session, error)
}

// A NetworkDescriber is a [Backend] that can say what the code in its
// sandboxes can reach over the network, in a sentence for the model
// ("none: ..."). The plugin shows it in the <code-mode> block, so that the
// model does not try pip install or HTTP where they cannot work. A backend
// that cannot know (a remote sandbox, whose network its platform sets)
// need not implement it.
type NetworkDescriber interface {
	DescribeNetwork() string
}

// A StartReporter is a [Session] that says how it started, for traces and
// metrics: path names the way (for a jail "forked", "cold" or "fallback")
// and reason, for a fallback, why the usual way failed.
type StartReporter interface {
	StartPath() (path, reason string)
}

// An EgressMeter is a [Session] whose code reaches the network through an
// egress proxy on the host that counts each block's bytes. The plugin
// calls MeterEgress before each block and EgressUsage after it.
type EgressMeter interface {
	// MeterEgress starts counting a block's egress bytes afresh and bounds
	// them, both ways, by limit; zero means no bound. Past it the proxy
	// refuses new connections (HTTP 403, naming the bound) and cuts those
	// in flight.
	MeterEgress(limit int64)
	// EgressUsage reports the bytes moved through the proxy, both ways,
	// since MeterEgress, and whether the bound refused or cut a
	// connection.
	EgressUsage() (bytes int64, exceeded bool)
}

// An EgressMetering is a [Backend] that says whether its sessions meter
// their egress per block ([EgressMeter]): whether they have an egress
// proxy at all.
type EgressMetering interface {
	MetersEgress() bool
}

// MetersEgress reports whether b's sessions meter their egress per block.
func MetersEgress(b Backend) bool {
	m, ok := b.(EgressMetering)
	return ok && m.MetersEgress()
}

// EgressMeterOf is s's [EgressMeter], or nil. It looks through sessions
// that wrap another and say so with an Unwrap() Session method.
func EgressMeterOf(s Session) EgressMeter {
	for s != nil {
		if m, ok := s.(EgressMeter); ok {
			return m
		}
		u, ok := s.(interface{ Unwrap() Session })
		if !ok {
			return nil
		}
		s = u.Unwrap()
	}
	return nil
}

// NoNetwork is the [NetworkDescriber] sentence of a backend whose
// sandboxes have no network but their own loopback.
const NoNetwork = "none: only the sandbox's own loopback; pip install and HTTP requests fail, so use the tools for data from outside"

// NetworkOf is b's [NetworkDescriber] sentence, or "" when b does not say.
func NetworkOf(b Backend) string {
	if d, ok := b.(NetworkDescriber); ok {
		return d.DescribeNetwork()
	}
	return ""
}

// SessionConfig is what a session needs from its host.
type SessionConfig struct {
	// Files are placed read-only in the sandbox under a directory that is on
	// Python's sys.path, keyed by slash-separated relative path, for example
	// "tools/__init__.py". This is how the generated tools package arrives.
	Files map[string][]byte
	// Tools answers the tool calls made by code. Nil means every call fails
	// with a ToolNotFound error.
	Tools ToolHandler
	// MaxConcurrentCalls bounds the tool calls in flight at once; calls over
	// it fail at once. Zero means 64.
	MaxConcurrentCalls int
}

// Session is one live sandbox with one persistent Python worker.
type Session interface {
	// Environment is what the sandbox reported when it became ready.
	Environment() Environment
	// Exec runs one block and waits for its result. Calls are serialised.
	// Cancelling ctx interrupts the block like a timeout does: the code's
	// CodeTimeout says "The host cancelled the code: " and the context's
	// cause, or, for a cause that is a [StopReason], its StopMessage alone.
	// A lost connection is a [*ConnectionError].
	Exec(ctx context.Context, b Block) (*Result, error)
	// ReadFile returns a regular file from the workspace, by the relative
	// path listed in [Result.Files].
	ReadFile(ctx context.Context, path string) ([]byte, error)
	// Close ends the sandbox and every process in it. It is safe to call
	// more than once and from any goroutine.
	Close() error
}

// StopReason is a cause of a block's context (see
// [context.WithCancelCause]) that says in its own words why the host
// stopped the code, such as "The code ran for longer than 30s and was
// stopped.": [Session.Exec] gives the code that message as it is.
type StopReason interface {
	error
	StopMessage() string
}

// Environment describes the sandbox's interpreter.
type Environment struct {
	PythonVersion string
	// Packages maps an import name to the distributions that provide it and
	// their versions, for example {"yaml": {"PyYAML": "6.0.1"}}.
	Packages map[string]map[string]string
}

// Block is one piece of code to run.
type Block struct {
	Code string
	// Timeout bounds the block's run time; zero means no bound. At the
	// timeout the block is interrupted in place and its in-flight tool
	// calls are cancelled.
	Timeout time.Duration
	// Grace is how long an interrupted block may take to stop before the
	// worker is killed and restarted. Zero means 1s.
	Grace time.Duration
	// MaxOutputBytes bounds what is kept of stdout and of stderr; past it
	// the middle is dropped. Zero means the server's default (4 MiB, also
	// the most it allows).
	MaxOutputBytes int64
}

// Result is the outcome of a block.
type Result struct {
	ExitCode      int
	Stdout        string
	Stderr        string
	StdoutDropped int64 // bytes dropped from the middle of Stdout
	StderrDropped int64
	// Stopped: the block hit its timeout and stopped in place; the
	// session's variables are intact.
	Stopped bool
	// Reset: the block did not stop within the grace period; the worker
	// was killed and restarted and the session's variables are gone.
	Reset bool
	// OutOfMemory: the worker was killed because the sandbox ran out of
	// memory (its memory limit's OOM killer), on a backend that can tell;
	// Reset is true too, and the note on Stderr says so.
	OutOfMemory bool
	// Background: threads or processes the block started still run.
	Background bool
	// Files lists the regular files the block created or changed in the
	// workspace.
	Files    []File
	Duration time.Duration
}

// File names a regular file in the sandbox's workspace.
type File struct {
	Path string // slash-separated, relative to the workspace
	Size int64
}

// ToolHandler runs the tool calls that sandbox code makes.
type ToolHandler interface {
	// CallTool runs one call. It is called concurrently. ctx is cancelled
	// when the sandbox abandons the call or its timeout passes.
	CallTool(ctx context.Context, call ToolCall) ToolResult
}

// ToolHandlerFunc adapts a function to [ToolHandler].
type ToolHandlerFunc func(ctx context.Context, call ToolCall) ToolResult

// CallTool calls f.
func (f ToolHandlerFunc) CallTool(ctx context.Context, call ToolCall) ToolResult { return f(ctx, call) }

// ToolCall is one call from sandbox code.
type ToolCall struct {
	ID   string
	Name string // dotted path of the tool in the tools package, or its raw name
	Args map[string]any
	// Timeout is the caller's own bound, zero if none. The host may apply
	// a lower one.
	Timeout time.Duration
	// Thread numbers the calling thread within its block, for traces: 0 the
	// main thread, then 1, 2... in the order of each thread's first call.
	Thread int
}

// ToolResult is the answer to a [ToolCall]: a JSON-compatible value, or an
// error that the sandbox raises as a Python exception.
type ToolResult struct {
	Value any
	Err   *ToolError
}

// ToolError is a failed tool call as the sandbox sees it: the code gets a
// Python exception of class Type with Message.
type ToolError struct {
	// Type names the Python exception class, for example "ToolError",
	// "ValidationError" or "HTTPStatusError".
	Type    string
	Message string
	// Trace is an optional traceback for the exception's notes.
	Trace string
	// StatusCode and Body describe a failed HTTP request, for
	// HTTPStatusError; zero and nil otherwise.
	StatusCode int
	Body       any
}

func (e *ToolError) Error() string { return e.Type + ": " + e.Message }

// Errorf returns a failed [ToolResult] with the given Python-facing type.
func Errorf(typ, format string, args ...any) ToolResult {
	return ToolResult{Err: &ToolError{Type: typ, Message: fmt.Sprintf(format, args...)}}
}
