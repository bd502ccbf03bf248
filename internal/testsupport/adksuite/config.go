package adksuite

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/adk-codemode/codemode/backend/jail"
	"github.com/adk-codemode/codemode/egress"
	"github.com/adk-codemode/codemode/transport"
)

// configTests are the plugin's checks of its configuration: the mistakes
// it refuses before any sandbox starts, and Check, which starts one.
var configTests = []test{
	{"NewRefusesMistakes", testNewRefusesMistakes},
	{"Check", testCheck},
	{"ProbeFailureFailsTheRun", testProbeFailureFailsTheRun},
}

// failingBackend never starts a sandbox.
type failingBackend struct{}

func (failingBackend) Name() string { return "failing" }
func (failingBackend) Open(context.Context, transport.SessionConfig) (transport.Session, error) {
	return nil, errors.New("no sandbox here")
}

// testNewRefusesMistakes: each setting that cannot be meant fails the
// plugin's constructor with the field's name, before any sandbox starts;
// what the docs allow passes.
func testNewRefusesMistakes(t *testing.T, l Line) {
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
		err := l.Refuses(t, Setup{Config: c.cfg})
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: New: %v, want no error", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: New: %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

// testCheck: Check starts a sandbox of the configured backend and returns
// the real reason it does not work, where the constructor, which starts
// nothing, cannot know it.
func testCheck(t *testing.T, l Line) {
	ctx := t.Context()
	check := func(cfg Config, tools ...Tool) error { return l.Check(ctx, t, Setup{Config: cfg, Tools: tools}) }
	if err := check(Config{Backend: Backend(t)}); err != nil {
		t.Fatalf("Check of a working backend: %v", err)
	}
	if err := check(Config{Backend: failingBackend{}}); err == nil || !strings.Contains(err.Error(), "no sandbox here") {
		t.Errorf("Check of a backend that cannot open a session: %v, want its reason", err)
	}
	if err := check(Config{Backend: &jail.Backend{Config: jail.Config{Python: "/bin/true"}}}); err == nil || !strings.Contains(err.Error(), "does not run as Python 3") {
		t.Errorf("Check of an interpreter that is not Python: %v, want it to say so", err)
	}
	small := &jail.Backend{Config: jail.Config{MemoryBytes: 4 << 20}, Cold: true}
	var le *jail.LimitError
	if err := check(Config{Backend: small}); !errors.As(err, &le) || le.Field != "MemoryBytes" {
		t.Errorf("Check of a jail whose memory limit is too small for Python: %v, want a *jail.LimitError for MemoryBytes", err)
	}
	if err := check(Config{Grace: -1}); err == nil || !strings.Contains(err.Error(), "Config.Grace") {
		t.Errorf("Check of a bad setting: %v, want New's error", err)
	}
	// Two tools that become one Python name: the catalog refuses them, and
	// Check says so as New does, before it starts anything.
	var tools []Tool
	for _, name := range []string{"send-message", "send_message"} {
		tools = append(tools, Tool{Name: name, Description: "Send.", Run: func(Call, map[string]any) (map[string]any, error) { return nil, nil }})
	}
	cfg := Config{Backend: failingBackend{}}
	newErr := l.Refuses(t, Setup{Config: cfg, Tools: tools})
	checkErr := check(cfg, tools...)
	if newErr == nil || checkErr == nil || checkErr.Error() != newErr.Error() {
		t.Errorf("two tools with one Python name: New said %v and Check %v; want the same refusal", newErr, checkErr)
	}
}

// testProbeFailureFailsTheRun: when the backend cannot start the sandbox
// whose report fills the block, the model call fails and the run returns
// the reason; the model is never asked.
func testProbeFailureFailsTheRun(t *testing.T, l Line) {
	m := NewScript().On("hi", Say("hello"))
	f := start(t, l, Setup{Model: m, Config: Config{Backend: failingBackend{}}})
	_, err := f.Send(t.Context(), "s1", genai.NewContentFromText("hi", genai.RoleUser))
	if err == nil || !strings.Contains(err.Error(), "the sandbox did not start") || !strings.Contains(err.Error(), "no sandbox here") {
		t.Errorf("run: %v, want the sandbox's failure to start", err)
	}
	if n := len(m.Requests()); n != 0 {
		t.Errorf("the model was asked %d times, want none", n)
	}
}
