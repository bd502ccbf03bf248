package codemode

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
)

// countingToolset offers one tool whose greeting changes per invocation, to
// show toolsets are resolved again for each one.
type countingToolset struct{ n int }

func (s *countingToolset) Name() string { return "Greeter" }

func (s *countingToolset) Tools(agent.ReadonlyContext) ([]tool.Tool, error) {
	s.n++
	greeting := strings.Repeat("hi", s.n)
	t, err := functiontool.New(functiontool.Config{Name: "greet", Description: "Greet someone."},
		func(_ agent.Context, a struct {
			Name string `json:"name"`
		}) (map[string]any, error) {
			return map[string]any{"text": greeting + " " + a.Name}, nil
		})
	if err != nil {
		return nil, err
	}
	return []tool.Tool{t}, nil
}

func TestToolsetsResolvedPerInvocation(t *testing.T) {
	code := `from tools.greeter import greet
print(greet(name="Ada")["text"])`
	m := newScript().
		on("one", run(code), run(code), say("ok")).
		on("two", run(code), say("ok"))
	ts := &countingToolset{}
	f := newFixture(t, m, fixtureConfig{cfg: Config{Toolsets: []tool.Toolset{ts}}})
	var got []any
	for _, msg := range []string{"one", "two"} {
		for _, o := range outputs(f.turn(t.Context(), "s1", msg)) {
			got = append(got, o["stdout"])
		}
	}
	if diff := cmp.Diff([]any{"hi Ada\n", "hi Ada\n", "hihi Ada\n"}, got); diff != "" {
		t.Errorf("stdout (-want +got):\n%s", diff)
	}
}

func TestToolTimeout(t *testing.T) {
	slow, err := functiontool.New(functiontool.Config{Name: "slow", Description: "Never finishes on its own."},
		func(ctx agent.Context, _ struct{}) (map[string]any, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
	if err != nil {
		t.Fatal(err)
	}
	m := newScript().on("go", run(`from tools import slow
try:
    slow()
except TimeoutError as e:
    print("TimeoutError:", e)`), say("ok"))
	f := newFixture(t, m, fixtureConfig{cfg: Config{Tools: []tool.Tool{slow}, ToolTimeout: 200 * time.Millisecond}})
	out := outputs(f.turn(t.Context(), "s1", "go"))
	if diff := cmp.Diff("TimeoutError: tool slow exceeded its timeout of 0.2s\n", out[0]["stdout"]); diff != "" {
		t.Errorf("stdout (-want +got):\n%s\nstderr: %s", diff, out[0]["stderr"])
	}
}

func TestNonZeroExit(t *testing.T) {
	m := newScript().on("go", run(`print("before")
raise SystemExit(3)`), say("ok"))
	f := newFixture(t, m, fixtureConfig{})
	out := outputs(f.turn(t.Context(), "s1", "go"))
	if got := out[0]["stderr"].(string); !strings.HasSuffix(got, "Process exited with code 3.") {
		t.Errorf("stderr %q lacks the exit code line", got)
	}
}
