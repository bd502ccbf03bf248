package codemode

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/genai"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"

	"github.com/adk-codemode/codemode/backend/jail"
	"github.com/adk-codemode/codemode/egress"
)

// TestNewRefusesMistakes: each setting that cannot be meant fails New with
// the field's name, before any sandbox starts; what the docs allow passes.
func TestNewRefusesMistakes(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
		want string // in the error; "" for none
	}{
		{"zero", Config{}, ""},
		{"no timeout", Config{Timeout: -1}, ""},
		{"no code limit", Config{MaxCodeChars: -1}, ""},
		{"never large", Config{LargeResultBytes: -1}, ""},
		{"timeout in nanoseconds", Config{Timeout: 30}, "Config.Timeout is 30ns, under a millisecond"},
		{"negative grace", Config{Grace: -time.Second}, "Config.Grace is -1s"},
		{"negative tool timeout", Config{ToolTimeout: -time.Second}, "Config.ToolTimeout is -1s"},
		{"negative idle timeout", Config{IdleTimeout: -time.Minute}, "Config.IdleTimeout"},
		{"negative approval timeout", Config{ApprovalTimeout: -time.Minute}, "Config.ApprovalTimeout"},
		{"approval timeout in nanoseconds", Config{ApprovalTimeout: 600}, "Config.ApprovalTimeout is 600ns"},
		{"negative output", Config{MaxOutputChars: -5}, "Config.MaxOutputChars is -5"},
		{"negative budget", Config{BlockBudget: -1}, "Config.BlockBudget is -1"},
		{"jail's negative id", Config{Backend: &jail.Backend{Config: jail.Config{PayloadHostID: -3}}}, "Config.PayloadHostID is -3"},
		{"egress policy", Config{Egress: &egress.Policy{Allow: []string{"api.example.com:443"}}}, ""},
		{"unreadable egress entry", Config{Egress: &egress.Policy{Allow: []string{"api.example.com"}}}, "Config.Egress: "},
		{"egress beside a backend", Config{Egress: &egress.Policy{}, Backend: &jail.Backend{}}, "Config.Egress applies to the default backend only"},
		{"jail's bad egress entry", Config{Backend: &jail.Backend{Egress: &egress.Policy{Allow: []string{"*:443"}}}}, "Backend.Egress"},
		{"jail's missing python", Config{Backend: &jail.Backend{Config: jail.Config{Python: "/nonexistent/python3"}}}, "Config.Python"},
	} {
		p, err := New(c.cfg)
		if p != nil {
			_ = p.Close()
		}
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: New: %v, want no error", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: New: %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

// TestCheck: Check starts a sandbox of the configured backend and returns
// the real reason it does not work, where New, which starts nothing,
// cannot know it.
func TestCheck(t *testing.T) {
	ctx := t.Context()
	if err := Check(ctx, Config{Backend: testBackend(t)}); err != nil {
		t.Fatalf("Check of a working backend: %v", err)
	}
	if err := Check(ctx, Config{Backend: failingBackend{}}); err == nil || !strings.Contains(err.Error(), "no sandbox here") {
		t.Errorf("Check of a backend that cannot open a session: %v, want its reason", err)
	}
	if err := Check(ctx, Config{Backend: &jail.Backend{Config: jail.Config{Python: "/bin/true"}}}); err == nil || !strings.Contains(err.Error(), "does not run as Python 3") {
		t.Errorf("Check of an interpreter that is not Python: %v, want it to say so", err)
	}
	small := &jail.Backend{Config: jail.Config{MemoryBytes: 4 << 20}, Cold: true}
	var le *jail.LimitError
	if err := Check(ctx, Config{Backend: small}); !errors.As(err, &le) || le.Field != "MemoryBytes" {
		t.Errorf("Check of a jail whose memory limit is too small for Python: %v, want a *jail.LimitError for MemoryBytes", err)
	}
	if err := Check(ctx, Config{Grace: -1}); err == nil || !strings.Contains(err.Error(), "Config.Grace") {
		t.Errorf("Check of a bad setting: %v, want New's error", err)
	}
	// Two tools that become one Python name: the catalog refuses them, and
	// Check says so as New does, before it starts anything.
	var tools []tool.Tool
	for _, name := range []string{"send-message", "send_message"} {
		tl, err := functiontool.New(functiontool.Config{Name: name, Description: "Send."},
			func(agent.Context, struct{}) (map[string]any, error) { return nil, nil })
		if err != nil {
			t.Fatal(err)
		}
		tools = append(tools, tl)
	}
	cfg := Config{Tools: tools, Backend: failingBackend{}}
	_, newErr := New(cfg)
	checkErr := Check(ctx, cfg)
	if newErr == nil || checkErr == nil || checkErr.Error() != newErr.Error() {
		t.Errorf("two tools with one Python name: New said %v and Check %v; want the same refusal", newErr, checkErr)
	}
}

// TestProbeFailureFailsTheRun: when the backend cannot start the sandbox
// whose report fills the block, the model call fails and the run returns
// the reason; the model is never asked.
func TestProbeFailureFailsTheRun(t *testing.T) {
	m := newScript().on("hi", say("hello"))
	f := newFixture(t, m, fixtureConfig{cfg: Config{Backend: failingBackend{}}})
	var runErr error
	for _, err := range f.runner.Run(context.Background(), "user", "s1", genai.NewContentFromText("hi", genai.RoleUser), agent.RunConfig{}) {
		if err != nil {
			runErr = err
		}
	}
	if runErr == nil || !strings.Contains(runErr.Error(), "the sandbox did not start") || !strings.Contains(runErr.Error(), "no sandbox here") {
		t.Errorf("run: %v, want the sandbox's failure to start", runErr)
	}
	if n := len(m.requests()); n != 0 {
		t.Errorf("the model was asked %d times, want none", n)
	}
}
