package adksuite

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os/exec"
	"reflect"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/genai"

	"github.com/adk-codemode/codemode/egress"
	"github.com/adk-codemode/codemode/transport"
)

// ToolName is the name of the plugin's code tool on both lines.
const ToolName = "execute_code"

// What the suite pins of what a model and a person see, written out here
// rather than taken from the code under test, so that a change to them
// fails a test and is made on purpose.
const (
	// confirmationCallName is the name of the call by which ADK asks a
	// person to confirm a tool call, and of the person's answer to it.
	confirmationCallName = "adk_request_confirmation"
	// untrustedPrefix starts every line of output that imitates a role of
	// the conversation, as the model reads it.
	untrustedPrefix = "[untrusted output] "
)

// A Line is one ADK line's adapter under test.
type Line interface {
	// Start builds a runner with the plugin configured from s, its
	// model, tools and services, and closes it when t ends. A Setup the
	// plugin refuses fails t.
	Start(t testing.TB, s Setup) Agent
	// Refuses builds the plugin configured from s, as Start does, without
	// a runner, and closes it: it returns the error the plugin's
	// constructor refuses s with, or nil when it accepts s. A Setup the
	// line cannot build fails t.
	Refuses(t testing.TB, s Setup) error
	// Check runs the plugin package's Check for the configuration s makes:
	// a sandbox of its backend is started and stopped.
	Check(ctx context.Context, t testing.TB, s Setup) error
}

// Setup is what a test asks of a line: the plugin's configuration, the
// agent's tools and model, and the runner's services.
type Setup struct {
	Config   Config
	Tools    []Tool
	Toolsets []Toolset
	// Namespaces give toolsets a namespace other than their name, as the
	// plugin's Config.Namespaces does.
	Namespaces []Namespace
	// Model answers the agent's model requests; nil for a script with no
	// steps.
	Model Model
	// Artifacts gives the runner an in-memory artifact service.
	Artifacts bool
	// NoPlugin attaches only the agent's hooks (before-model and
	// on-tool-error) to the agent, not the plugin to the runner.
	NoPlugin bool
	// Callbacks are tool callbacks registered beside the plugin.
	Callbacks Callbacks
	// Gemini, when set, makes the agent's model ADK's Gemini model,
	// speaking the Gemini API to the server it names; Model is then
	// unused.
	Gemini *GeminiModel
	// Streaming runs every invocation with server-sent-event streaming,
	// so a model that streams yields partial events before the whole.
	Streaming bool
	// Instruction is the agent's instruction; empty for the line's own.
	Instruction string
	// ServicesOf, when set, is an agent this line started earlier whose
	// session and artifact services the runner uses in place of new ones:
	// a host that restarts its plugin over the sessions it keeps.
	ServicesOf Agent
	// PendingResultBytes, when positive, lowers the bound on the tool
	// results a block holds before it saves them (the engine's
	// MaxPendingResultBytes) while the test runs.
	PendingResultBytes int
	// OutputFilesTimeout, when positive, lowers the bound on reading a
	// block's changed files from the sandbox (the engine's
	// OutputFilesTimeout) while the test runs.
	OutputFilesTimeout time.Duration
}

// Callbacks are before- and after-tool callbacks, of a plugin of their
// own registered after Code Mode's (Plugin*) and of the agent (Agent*).
// Each returns a replacement (a non-nil map or error) or nothing.
type Callbacks struct {
	PluginBefore, AgentBefore func(c Call, tool string, args map[string]any) (map[string]any, error)
	PluginAfter, AgentAfter   func(c Call, tool string, args, result map[string]any, err error) (map[string]any, error)
}

// Tool is a function tool: a line builds it with its functiontool.
type Tool struct {
	Name, Description string
	// Params is the schema of the arguments; nil for none (the schema
	// NoParams returns).
	Params *jsonschema.Schema
	// Declaration, when set, is the tool's function declaration as
	// given, in place of Name, Description and Params: the line builds a
	// tool of its own that declares it and runs Run, as an OpenAPI
	// toolset's tools are made.
	Declaration *genai.FunctionDeclaration
	// Confirm makes every call wait for a person's confirmation;
	// ConfirmIf, those it returns true for.
	Confirm   bool
	ConfirmIf func(args map[string]any) bool
	// LongRunning marks the tool long-running.
	LongRunning bool
	Run         func(c Call, args map[string]any) (map[string]any, error)
	// Output is the schema of the result, declared as the function's
	// response; nil for the line's default.
	Output *jsonschema.Schema
	// RunAny runs the tool in place of Run, for a result of any JSON
	// type: ADK gives the model one that is not an object as
	// {"result": value}.
	RunAny func(c Call, args map[string]any) (any, error)
}

// Toolset is a static toolset of the given tools, named Name.
type Toolset struct {
	Name  string
	Tools []Tool
	// Resolve, when set, gives the toolset's tools each time they are
	// asked for, in place of Tools: a toolset whose tools change from one
	// invocation to the next.
	Resolve func() []Tool
	// Command, when set, makes the toolset ADK's MCP toolset of the
	// server the command starts, speaking MCP over its standard input
	// and output, in place of Name and Tools. The test ends the command.
	Command *exec.Cmd
	// Filter, when set, keeps only the toolset's tools of these names,
	// as ADK's FilterToolset does.
	Filter []string
	// ListErr, when set, is called each time the toolset lists its
	// tools: an error fails the listing, as an MCP toolset's does once
	// its server is gone.
	ListErr func() error
}

// Namespace gives a toolset the namespace Name, as the plugin's
// Namespace does. Toolset points to the toolset it names: an element of
// the Setup's Toolsets (&s.Toolsets[i]), the same toolset as long as the
// slice is; a pointer to any other Toolset names a toolset the Setup
// does not have.
type Namespace struct {
	Toolset *Toolset
	Name    string
}

// Call is what a tool or callback gets of its call.
type Call interface {
	context.Context
	FunctionCallID() string
	// SetState sets a key of the session's state through the call's
	// actions.
	SetState(key string, value any) error
	// TransferTo asks for a transfer to another agent.
	TransferTo(agent string)
	// InvocationID is the id of the invocation the call runs in.
	InvocationID() string
	// RequestConfirmation asks a person to confirm the call, with a hint
	// and a payload of the tool's own; the tool returns its error.
	RequestConfirmation(hint string, payload any) error
	// Confirmation is the person's answer the call carries, or nil when
	// it carries none.
	Confirmation() *Confirmation
	// Escalate asks to escalate to the agent's parent.
	Escalate()
}

// Confirmation is a request for a person's confirmation of a tool call,
// or the answer to one, as ADK's toolconfirmation spells it in the
// arguments of its adk_request_confirmation call.
type Confirmation struct {
	Hint      string `json:"hint"`
	Confirmed bool   `json:"confirmed"`
	Payload   any    `json:"payload"`
}

// ToolResult mirrors the plugin's ToolResult: one tool result that a
// tool-result artifact holds.
type ToolResult struct {
	Tool        string          `json:"tool"`
	CallID      string          `json:"call_id"`
	Name        string          `json:"artifact_name,omitempty"`
	Description string          `json:"artifact_description,omitempty"`
	Result      json.RawMessage `json:"result"`
}

// Agent is a runner with the plugin, as a test drives it.
type Agent interface {
	// Send runs one invocation of session sid for the user's content and
	// returns its events.
	Send(ctx context.Context, sid string, msg *genai.Content) ([]Event, error)
	// State reads a key of session sid's state; ok is false when unset.
	State(ctx context.Context, sid, key string) (v any, ok bool, err error)
	// Artifact loads an artifact of session sid; version 0 is the latest.
	Artifact(ctx context.Context, sid, name string, version int64) (*genai.Part, error)
	// ArtifactNames lists session sid's artifacts.
	ArtifactNames(ctx context.Context, sid string) ([]string, error)
	// ToolResults reads a loaded artifact as a host reads tool results,
	// with the plugin's IsToolResultArtifact and ReadToolResults; ok is
	// false for an artifact that holds none.
	ToolResults(part *genai.Part) (rs []ToolResult, ok bool, err error)
	// ArtifactVersions lists the versions of an artifact of session sid.
	ArtifactVersions(ctx context.Context, sid, name string) ([]int64, error)
	// OpenTurns is how many turns the plugin holds.
	OpenTurns() int
	// RunCode runs the plugin's execute_code tool once, outside any turn,
	// with a bare tool context, as a flow calls a tool, and returns what
	// the tool returns.
	RunCode(ctx context.Context, code string) (map[string]any, error)
	// ReleaseTurns ends every turn the plugin holds, as the end of an
	// invocation does.
	ReleaseTurns()
	// InFlight lists the invocations with a block in flight.
	InFlight() []string
	// Interrupt stops the block invocation runs, if any, with cause, as
	// the plugin's interrupt for package mcpserver does; it reports
	// whether a block was running.
	Interrupt(invocation string, cause error) bool
	// Close closes the plugin.
	Close() error
}

// Event is what the tests read of a session event.
type Event struct {
	Author             string
	InvocationID       string
	Content            *genai.Content
	StateDelta         map[string]any
	ArtifactDelta      map[string]int64
	LongRunningToolIDs []string
	ErrorCode          string
	ErrorMessage       string
	// Partial marks a streamed chunk of a model response, which the
	// event of the whole response repeats.
	Partial bool
}

// GeminiModel is ADK's Gemini model on the Gemini API's backend: Name
// is the model's name, BaseURL the address of the server that speaks the
// API, and APIKey the key the client sends it.
type GeminiModel struct {
	Name, BaseURL, APIKey string
}

// Request is what the tests read of a model request.
type Request struct {
	Contents []*genai.Content
	Config   *genai.GenerateContentConfig
	// Runnable are the names of the tools the request lets ADK run.
	Runnable []string
	// CodeTool says whether the tool the request lets ADK run as
	// execute_code is the plugin's own.
	CodeTool bool
}

// Model answers model requests.
type Model interface {
	Reply(ctx context.Context, req Request) (*genai.Content, error)
}

// Config mirrors the fields of the plugin's Config that both lines
// spell the same: CopyTo sets each one on a line's Config by name. The
// tools and toolsets are the Setup's.
type Config struct {
	Backend                    transport.Backend
	Egress                     *egress.Policy
	StrictToolsets             bool
	MaxOutputChars             int
	MaxCodeChars               int
	Timeout                    time.Duration
	Grace                      time.Duration
	ToolTimeout                time.Duration
	IdleTimeout                time.Duration
	ApprovalTimeout            time.Duration
	BlockBudget                int
	DisableBlock               bool
	DisableArtifactTools       bool
	DisableToolResultArtifacts bool
	LargeResultBytes           int
	TracerProvider             trace.TracerProvider
	MeterProvider              metric.MeterProvider
	AuditLog                   *slog.Logger
	Direct                     []string
	Budgets                    Budgets
	TraceCode                  bool
	Durable                    bool
	// OnArtifactsSaved is called with the name of the agent the hook's
	// context is of and the delta of artifacts a block saved; the line
	// sets it on its Config (its context differs).
	OnArtifactsSaved func(agent string, delta map[string]int64) `adksuite:"line"`
}

// Budgets mirrors the plugin's Budgets.
type Budgets struct {
	ToolCalls        int
	ToolCallsPerTool map[string]int
	ResultBytes      int64
	EgressBytes      int64
	BlocksPerTurn    int
	// ModelCallsPerTurn bounds the model calls of one invocation.
	ModelCallsPerTurn int
}

// CopyTo sets every field of c that is not its zero value, and not the
// line's to set, on the struct dst points to, by name. A field dst lacks
// or holds as another type is an error: the mirror and the plugin's
// Config have drifted apart.
func (c Config) CopyTo(dst any) error {
	d := reflect.ValueOf(dst)
	if d.Kind() != reflect.Pointer || d.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("adksuite: CopyTo wants a pointer to a struct, not %T", dst)
	}
	return copyFields(d.Elem(), reflect.ValueOf(c))
}

func copyFields(dst, src reflect.Value) error {
	for i := range src.NumField() {
		f := src.Type().Field(i)
		v := src.Field(i)
		if f.Tag.Get("adksuite") == "line" || v.IsZero() {
			continue
		}
		to := dst.FieldByName(f.Name)
		switch {
		case !to.IsValid():
			return fmt.Errorf("adksuite: %s has no field %s", dst.Type(), f.Name)
		case f.Type.Kind() == reflect.Struct && to.Kind() == reflect.Struct && !v.Type().AssignableTo(to.Type()):
			if err := copyFields(to, v); err != nil {
				return err
			}
		case v.Type().AssignableTo(to.Type()):
			to.Set(v)
		default:
			return fmt.Errorf("adksuite: %s.%s is a %s, not a %s", dst.Type(), f.Name, to.Type(), f.Type)
		}
	}
	return nil
}
