package codemode

import (
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool"

	"github.com/adk-codemode/codemode/egress"
	"github.com/adk-codemode/codemode/transport"
)

// Defaults of [Config].
const (
	DefaultMaxOutputChars = 50_000
	DefaultMaxCodeChars   = 1_000_000
	DefaultTimeout        = 60 * time.Second
	DefaultGrace          = time.Second
	DefaultIdleTimeout    = 10 * time.Minute
	// DefaultApprovalTimeout is how long a block paused for a person's
	// approval waits for the answer.
	DefaultApprovalTimeout = 10 * time.Minute
	DefaultBlockBudget     = 50_000
	// DefaultLargeResultBytes is the size of a tool result, in bytes of
	// JSON, past which it is saved as an artifact of its own.
	DefaultLargeResultBytes = 50_000
)

// ToolName is the name of the tool that runs the model's code.
const ToolName = "execute_code"

// Config configures Code Mode. The zero value is ready to use: no tools, the
// local jail with the host's Python, and the limits below.
type Config struct {
	// Tools are the tools the code may call, at the top level of the
	// generated tools package. Each must carry a function declaration and
	// be runnable (every functiontool and MCP tool is).
	Tools []tool.Tool
	// Toolsets are resolved again on every invocation; the tools of a
	// toolset are placed in the namespace tools.<toolset name>, or the one
	// Namespaces gives it. A toolset that fails to list its tools is left
	// out of that model request, with a note to the model and an error in
	// the log, and tried again on the next; see StrictToolsets.
	Toolsets []tool.Toolset
	// Namespaces gives toolsets of Toolsets a namespace other than their
	// own name: for example two MCP toolsets, which ADK names
	// "mcp_tool_set" alike. Each must name a toolset of Toolsets (the same
	// value), and two toolsets may not share a namespace.
	Namespaces []Namespace
	// StrictToolsets makes a toolset that fails to list its tools fail the
	// model request, as before this option existed, instead of being left
	// out of it.
	StrictToolsets bool

	// Backend starts the sandboxes. Nil means &jail.Backend{}, the local
	// namespace jail running the host's python3, whose sessions are forked
	// from a template process that the plugin's Close stops. A Backend
	// given here is the caller's to close.
	Backend transport.Backend
	// Egress, if set, lets code reach the hosts the policy allows, over
	// HTTP and HTTPS through a proxy on the host, and nothing else
	// (docs/security.md). It applies to the default backend: a Backend
	// given here takes its own (jail.Backend's Egress), and setting both
	// is an error. Nil means no network at all.
	Egress *egress.Policy

	// MaxOutputChars bounds stdout and stderr, each, as the model sees them:
	// longer output is cut to its head and tail. Zero means 50,000.
	MaxOutputChars int
	// MaxCodeChars refuses longer code before any sandbox starts. Zero means
	// 1,000,000; negative means no limit.
	MaxCodeChars int
	// Timeout bounds the run time of one block of code, not counting the
	// time it waits for a person's approval (see ApprovalTimeout); the host
	// keeps the clock. At the timeout the code is interrupted and keeps its
	// variables; code that does not stop within Grace is killed and the
	// turn's variables are lost. Zero means 60s; negative means no bound.
	Timeout time.Duration
	// Grace is how long interrupted code may take to stop before its
	// worker is killed and restarted. Zero means 1s.
	Grace time.Duration
	// ToolTimeout is a ceiling on each tool call made from code; a timeout
	// the code passes can only lower it. Zero means none.
	ToolTimeout time.Duration
	// IdleTimeout closes a turn's sandbox that has not been used for this
	// long, in case the turn's end was never observed. Zero means 10m.
	IdleTimeout time.Duration
	// ApprovalTimeout bounds how long a block paused at a tool call that
	// asked for confirmation waits for the answer: its sandbox, the paused
	// block and its variables stay alive past the end of the invocation
	// for this long, then the sandbox is closed and the model is told on
	// the next call. Time spent waiting does not count against Timeout.
	// Zero means 10m.
	ApprovalTimeout time.Duration
	// Durable lets a block paused for approval resume in another process
	// (after a restart, or on a replica sharing the session and artifact
	// services): the turn's record, saved as an artifact at the pause, has
	// its blocks run again in a fresh sandbox with every earlier tool call
	// answered from it, then the approved call runs. Code that does
	// something else the second time stops with ResumeDivergedError. It
	// needs an artifact service; docs/plugin.md (Durable blocks) says what
	// it requires of code.
	Durable bool
	// BlockBudget is the size in characters the <code-mode> block aims to
	// fit: each namespace's section shows full detail, signatures with
	// one-line summaries, or names only, the largest giving way first; a
	// pointer to discover the tools from Python when even the names do not
	// fit. Zero means 50,000.
	BlockBudget int
	// DisableBlock leaves the system instruction alone; the execute_code
	// description then tells the model to discover the tools itself. The
	// tools package still has search(query) and describe(name), and the
	// description names them and the module to import them from: "tools",
	// or "tools._discovery" when a tool or namespace is called search or
	// describe, or when Toolsets are set (their tools are known only per
	// invocation, and tools._discovery always has both).
	DisableBlock bool

	// DisableArtifactTools leaves save_artifact, load_artifact and
	// list_artifacts out of the tools package. They are there by default,
	// at the top level ahead of the other tools, and reach the invocation's
	// ADK artifact service.
	DisableArtifactTools bool
	// DisableToolResultArtifacts stops saving the result of each tool
	// called from code as an artifact. By default each such tool gains the
	// optional parameters artifact_name and artifact_description, and the
	// results of a block are saved together when it ends, in an artifact
	// of the ToolResultsMIMEType kind (one the code named, or one over
	// LargeResultBytes, alone, of the ToolResultMIMEType kind); see
	// [ReadToolResults].
	DisableToolResultArtifacts bool
	// LargeResultBytes is the size of a tool result (its JSON encoding)
	// past which it is saved as an artifact of its own at once rather than
	// with the block's other results. The code gets the result itself
	// either way. Zero means 50,000; negative means never.
	LargeResultBytes int
	// OnArtifactsSaved, if set, is called after each execute_code block
	// that saved at least one artifact, with the execute_code call's
	// context and the block's delta: each artifact name and the highest
	// version the block saved of it. The same delta is on the execute_code
	// event's Actions.ArtifactDelta. It runs before execute_code returns;
	// it cannot change the result.
	OnArtifactsSaved func(ctx agent.Context, delta map[string]int64)

	// TracerProvider makes the spans of each block, sandbox start and tool
	// call from code, under ADK's execute_tool span of the execute_code
	// call (docs/observability.md lists them); nil means the global
	// provider, which records nothing until the program sets one. No span
	// holds code, arguments, results or output, unless TraceCode is set.
	TracerProvider trace.TracerProvider
	// MeterProvider makes Code Mode's metrics; nil means the global one.
	MeterProvider metric.MeterProvider
	// AuditLog, if set, gets one record at level Info per block
	// ("codemode.block") and per tool call from code
	// ("codemode.tool_call"): who, what, the outcome, the duration and
	// the sizes, never the values.
	AuditLog *slog.Logger
	// Direct names tools of Tools, or of a toolset, that the model may also
	// call directly, as ordinary function calls, besides from code: the
	// hybrid setup. A single lookup, or a step whose result the model must
	// read before it decides, is cheaper as a direct call; chains, fan-out,
	// loops and reductions are cheaper in code. The block says so in a
	// <routing> element. A direct call runs as ADK runs any tool call.
	Direct []string

	// Budgets bound what one block may spend (tool calls, in all and per
	// tool, and bytes of tool results) and how many execute_code calls one
	// invocation may make (100 by default).
	Budgets Budgets

	// TraceCode puts each block's code on its span (codemode.code), its
	// first 4,096 bytes, with values that look like credentials redacted.
	// Off, the span has the code's size and SHA-256 only.
	TraceCode bool
}

// Namespace names the namespace of one toolset of [Config.Toolsets]: its
// tools are tools.<Name>.<tool> in the code.
type Namespace struct {
	Toolset tool.Toolset
	Name    string
}

// withDefaults returns cfg with its zero values replaced by the defaults.
func (cfg Config) withDefaults() Config {
	if cfg.MaxOutputChars <= 0 {
		cfg.MaxOutputChars = DefaultMaxOutputChars
	}
	if cfg.MaxCodeChars == 0 {
		cfg.MaxCodeChars = DefaultMaxCodeChars
	}
	switch {
	case cfg.Timeout == 0:
		cfg.Timeout = DefaultTimeout
	case cfg.Timeout < 0:
		cfg.Timeout = 0
	}
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.ToolTimeout < 0 {
		cfg.ToolTimeout = 0
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.ApprovalTimeout <= 0 {
		cfg.ApprovalTimeout = DefaultApprovalTimeout
	}
	if cfg.LargeResultBytes == 0 {
		cfg.LargeResultBytes = DefaultLargeResultBytes
	}
	if cfg.BlockBudget <= 0 {
		cfg.BlockBudget = DefaultBlockBudget
	}
	return cfg
}
