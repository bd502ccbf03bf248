package codemode

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
)

// TestPanickingToolFromCode: a Go tool that panics (functiontool recovers
// it, with the host's stack) raises a ToolError in Python that names the
// panic and carries no stack or host path.
func TestPanickingToolFromCode(t *testing.T) {
	boom, err := functiontool.New(functiontool.Config{Name: "boom", Description: "Always panics."},
		func(_ agent.Context, _ struct{}) (map[string]any, error) { panic("kaboom") })
	if err != nil {
		t.Fatal(err)
	}
	m := newScript().on("go", run(`from tools import boom
try:
    boom()
except Exception as e:
    print(type(e).__name__, str(e))`), say("ok"))
	f := newFixture(t, m, fixtureConfig{cfg: Config{Tools: []tool.Tool{boom}}})
	out := outputs(f.turn(t.Context(), "s1", "go"))
	if len(out) != 1 {
		t.Fatalf("got %d results, want 1", len(out))
	}
	stdout, _ := out[0]["stdout"].(string)
	if !strings.Contains(stdout, "kaboom") {
		t.Errorf("stdout %q: want the panic's value", stdout)
	}
	for _, leak := range []string{"goroutine", ".go:", "stack:", "runtime/debug"} {
		if strings.Contains(stdout, leak) {
			t.Errorf("stdout %q carries %q from the host", stdout, leak)
		}
	}
}

// TestGraceSetting: code that masks its interrupt is reset after
// Config.Grace, 1s when unset, and the result says so.
func TestGraceSetting(t *testing.T) {
	masked := "import signal, time\nsignal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())\ntime.sleep(30)"
	for _, tc := range []struct {
		grace time.Duration
		want  string
	}{{0, "within 1s"}, {400 * time.Millisecond, "within 400ms"}} {
		m := newScript().on("go", run(masked), say("ok"))
		f := newFixture(t, m, fixtureConfig{cfg: Config{Timeout: 500 * time.Millisecond, Grace: tc.grace}})
		out := outputs(f.turn(t.Context(), "s1", "go"))
		if len(out) != 1 {
			t.Fatalf("got %d results, want 1", len(out))
		}
		if stderr, _ := out[0]["stderr"].(string); !strings.Contains(stderr, "did not stop "+tc.want) {
			t.Errorf("Grace %v: stderr %q, want a reset after %s", tc.grace, stderr, tc.want)
		}
	}
}
