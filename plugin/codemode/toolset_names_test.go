package codemode

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/genai"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
)

// echoToolset offers one tool, echo, that answers with its label; it is
// named like every ADK MCP toolset. With fail set, listing its tools
// fails, as an MCP toolset's does once its server is gone.
type echoToolset struct {
	label string
	fail  atomic.Bool
}

func (s *echoToolset) Name() string { return mcpDefaultName }

func (s *echoToolset) Tools(agent.ReadonlyContext) ([]tool.Tool, error) {
	if s.fail.Load() {
		return nil, errors.New("failed to list MCP tools: connection closed")
	}
	t, err := functiontool.New(functiontool.Config{Name: "echo", Description: "Echo a word."},
		func(_ agent.Context, a struct {
			Word string `json:"word"`
		}) (map[string]any, error) {
			return map[string]any{"said": s.label + ":" + a.Word}, nil
		})
	if err != nil {
		return nil, err
	}
	return []tool.Tool{t}, nil
}

// TestToolsetNamespaces: two toolsets with ADK's one default MCP name
// collide at New, naming both; Config.Namespaces gives each its own, and
// the code calls both.
func TestToolsetNamespaces(t *testing.T) {
	a, b := &echoToolset{label: "a"}, &echoToolset{label: "b"}
	_, err := New(Config{Toolsets: []tool.Toolset{a, b}, Backend: testBackend(t)})
	if err == nil || !strings.Contains(err.Error(), "Config.Toolsets[0] and Config.Toolsets[1]") || !strings.Contains(err.Error(), "ADK names every MCP toolset so") {
		t.Errorf("New with two toolsets named %q: %v, want an error naming both and the default name", mcpDefaultName, err)
	}
	_, err = New(Config{Toolsets: []tool.Toolset{a}, Namespaces: []Namespace{{Toolset: b, Name: "b"}}, Backend: testBackend(t)})
	if err == nil || !strings.Contains(err.Error(), "Config.Namespaces[0]") {
		t.Errorf("New with a namespace for a toolset it does not have: %v, want an error naming the entry", err)
	}
	code := `from tools.first import echo as one
from tools.second import echo as two
print(one(word="x")["said"], two(word="y")["said"])`
	m := newScript().on("go", run(code), say("ok"))
	f := newFixture(t, m, fixtureConfig{cfg: Config{
		Toolsets:   []tool.Toolset{a, b},
		Namespaces: []Namespace{{Toolset: a, Name: "first"}, {Toolset: b, Name: "second"}},
	}})
	out := outputs(f.turn(t.Context(), "s1", "go"))
	if len(out) != 1 || out[0]["stdout"] != "a:x b:y\n" {
		t.Errorf("outputs %v, want both toolsets' echo called under their namespaces", out)
	}
}

// TestToolNamesCollideAtNew: a tool named like a built-in artifact tool,
// and two tools with one name, fail New with both named, rather than at
// the first model call as a name declared twice.
func TestToolNamesCollideAtNew(t *testing.T) {
	mk := func(name string) tool.Tool {
		tl, err := functiontool.New(functiontool.Config{Name: name, Description: "A tool."},
			func(agent.Context, struct{}) (map[string]any, error) { return nil, nil })
		if err != nil {
			t.Fatal(err)
		}
		return tl
	}
	_, err := New(Config{Tools: []tool.Tool{mk("report"), mk("save_artifact")}, Backend: testBackend(t)})
	if err == nil || !strings.Contains(err.Error(), `Config.Tools[1] is named "save_artifact", as Code Mode's built-in artifact tool is`) {
		t.Errorf("New with a tool named save_artifact: %v, want the collision with the built-in tool", err)
	}
	p, err := New(Config{Tools: []tool.Tool{mk("save_artifact")}, DisableArtifactTools: true, Backend: testBackend(t)})
	if err != nil {
		t.Errorf("New with a tool named save_artifact and the built-in tools off: %v", err)
	} else {
		_ = p.Close()
	}
	_, err = New(Config{Tools: []tool.Tool{mk("report"), mk("other"), mk("report")}, Backend: testBackend(t)})
	if err == nil || !strings.Contains(err.Error(), `Config.Tools[0] and Config.Tools[2] are both named "report"`) {
		t.Errorf("New with two tools named report: %v, want both named", err)
	}
}

// TestFailingToolsetLeftOut: a toolset that cannot list its tools is left
// out of the model request, with a note, and the other tools work; the
// next model request tries it again; with StrictToolsets it fails the run.
func TestFailingToolsetLeftOut(t *testing.T) {
	good, broken := &echoToolset{label: "good"}, &echoToolset{label: "broken"}
	broken.fail.Store(true)
	cfg := Config{
		Toolsets:   []tool.Toolset{good, broken},
		Namespaces: []Namespace{{Toolset: good, Name: "good"}, {Toolset: broken, Name: "everything"}},
	}
	code := `from tools.good import echo
print(echo(word="hi")["said"])`
	m := newScript().on("one", run(code), say("ok")).on("two", say("ok"))
	f := newFixture(t, m, fixtureConfig{cfg: cfg})
	out := outputs(f.turn(t.Context(), "s1", "one"))
	if len(out) != 1 || out[0]["stdout"] != "good:hi\n" {
		t.Errorf("outputs %v: the toolset that works did not", out)
	}
	first := systemText(m.requests()[0])
	if !strings.Contains(first, "Unavailable for now: tools.everything") || strings.Contains(first, "tools.everything.echo") || strings.Contains(first, "connection closed") {
		t.Errorf("the first request's instruction names the missing toolset wrongly, lists its tools or leaks its error:\n%s", first)
	}
	broken.fail.Store(false)
	f.turn(t.Context(), "s1", "two")
	reqs := m.requests()
	if last := systemText(reqs[len(reqs)-1]); strings.Contains(last, "Unavailable") || !strings.Contains(last, "everything") {
		t.Errorf("after the toolset recovered, the next request's instruction still leaves it out:\n%s", last)
	}

	broken.fail.Store(true)
	cfg.StrictToolsets = true
	strict := newFixture(t, newScript().on("hi", say("hello")), fixtureConfig{cfg: cfg})
	var runErr error
	for _, err := range strict.runner.Run(context.Background(), "user", "s1", genai.NewContentFromText("hi", genai.RoleUser), agent.RunConfig{}) {
		if err != nil {
			runErr = err
		}
	}
	if runErr == nil || !strings.Contains(runErr.Error(), `toolset "everything"`) {
		t.Errorf("with StrictToolsets the run gave %v, want the toolset's error", runErr)
	}
}
