package adksuite

import (
	"context"
	"fmt"
	"log/slog"
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

// A Line is one ADK line's adapter under test.
type Line interface {
	// Start builds a runner with the plugin configured from s, its
	// model, tools and services, and closes it when t ends. A Setup the
	// plugin refuses fails t.
	Start(t testing.TB, s Setup) Agent
}

// Setup is what a test asks of a line: the plugin's configuration, the
// agent's tools and model, and the runner's services.
type Setup struct {
	Config   Config
	Tools    []Tool
	Toolsets []Toolset
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
	// Params is the schema of the arguments; nil for an object of any
	// properties.
	Params *jsonschema.Schema
	// Confirm makes every call wait for a person's confirmation;
	// ConfirmIf, those it returns true for.
	Confirm   bool
	ConfirmIf func(args map[string]any) bool
	// LongRunning marks the tool long-running.
	LongRunning bool
	Run         func(c Call, args map[string]any) (map[string]any, error)
}

// Toolset is a static toolset of the given tools, named Name.
type Toolset struct {
	Name  string
	Tools []Tool
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
	// OpenTurns is how many turns the plugin holds.
	OpenTurns() int
	// Close closes the plugin.
	Close() error
}

// Event is what the tests read of a session event.
type Event struct {
	Author             string
	Content            *genai.Content
	StateDelta         map[string]any
	ArtifactDelta      map[string]int64
	LongRunningToolIDs []string
	ErrorCode          string
	ErrorMessage       string
}

// Request is what the tests read of a model request.
type Request struct {
	Contents []*genai.Content
	Config   *genai.GenerateContentConfig
	// Runnable are the names of the tools the request lets ADK run.
	Runnable []string
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
	// OnArtifactsSaved is called with the delta of artifacts a block
	// saved; the line sets it on its Config (its context differs).
	OnArtifactsSaved func(delta map[string]int64) `adksuite:"line"`
}

// Budgets mirrors the plugin's Budgets.
type Budgets struct {
	ToolCalls        int
	ToolCallsPerTool map[string]int
	ResultBytes      int64
	EgressBytes      int64
	BlocksPerTurn    int
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
