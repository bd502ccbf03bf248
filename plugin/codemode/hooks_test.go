package codemode

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/adk-codemode/codemode/internal/testsupport/adksuite"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/genai"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/adk/v2/tool/loadartifactstool"
	"google.golang.org/adk/v2/tool/mcptoolset"
	"google.golang.org/adk/v2/tool/skilltoolset"
	"google.golang.org/adk/v2/tool/skilltoolset/skill"
)

// TestSkillListReachesTheRequest puts skilltoolset behind execute_code: its
// request processor adds the skills to the instruction the model receives,
// ahead of the <code-mode> block, while its tools stay callable from code
// only.
func TestSkillListReachesTheRequest(t *testing.T) {
	src := skill.NewFileSystemSource(fstest.MapFS{
		"pdf-report/SKILL.md":    {Data: []byte("---\nname: pdf-report\ndescription: Build a PDF report from a table.\n---\nSteps.\n")},
		"weekly-digest/SKILL.md": {Data: []byte("---\nname: weekly-digest\ndescription: Summarise the week's issues.\n---\nSteps.\n")},
	})
	ts, err := skilltoolset.New(t.Context(), skilltoolset.Config{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	m := adksuite.NewScript().On("hi", adksuite.Say("hello"))
	f := newFixture(t, m, fixtureConfig{cfg: Config{Toolsets: []tool.Toolset{ts}}})
	f.turn(t.Context(), "s1", "hi")
	reqs := m.Requests()
	if len(reqs) != 1 {
		t.Fatalf("got %d model requests, want 1", len(reqs))
	}
	text := adksuite.SystemText(reqs[0])
	for _, want := range []string{"pdf-report", "Build a PDF report from a table.", "weekly-digest", "<code-mode>"} {
		if !strings.Contains(text, want) {
			t.Errorf("system instruction lacks %q:\n%s", want, text)
		}
	}
	if strings.Index(text, "weekly-digest") > strings.Index(text, "<code-mode>") {
		t.Errorf("the skill list comes after the <code-mode> block; the flow runs processors first:\n%s", text)
	}
	if diff := cmp.Diff([]string{ToolName}, adksuite.Declared(reqs[0])); diff != "" {
		t.Errorf("declared tools (-want +got):\n%s", diff)
	}
	for _, name := range reqs[0].Runnable {
		if name != ToolName {
			t.Errorf("request tools hold %q; only %s belongs there", name, ToolName)
		}
	}
}

// TestSharedToolsetHookRunsOnce gives one skilltoolset both to the agent
// and to Code Mode: the flow runs its processor, so the plugin does not, and
// its skill list reaches the instruction once. Another skilltoolset, given
// to Code Mode only, still has its list added by the plugin.
func TestSharedToolsetHookRunsOnce(t *testing.T) {
	newSkills := func(name, desc string) tool.Toolset {
		src := skill.NewFileSystemSource(fstest.MapFS{
			name + "/SKILL.md": {Data: []byte("---\nname: " + name + "\ndescription: " + desc + "\n---\nSteps.\n")},
		})
		ts, err := skilltoolset.New(t.Context(), skilltoolset.Config{Name: name, Source: src})
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	shared := newSkills("pdf-report", "Build a PDF report from a table.")
	own := newSkills("weekly-digest", "Summarise the issues of the week.")
	m := adksuite.NewScript().On("hi", adksuite.Say("hello"))
	f := newFixture(t, m, fixtureConfig{
		cfg:   Config{Toolsets: []tool.Toolset{shared, own}},
		agent: llmagent.Config{Toolsets: []tool.Toolset{shared}},
	})
	f.turn(t.Context(), "s1", "hi")
	reqs := m.Requests()
	if len(reqs) != 1 {
		t.Fatalf("got %d model requests, want 1", len(reqs))
	}
	text := adksuite.SystemText(reqs[0])
	for _, want := range []string{"Build a PDF report from a table.", "Summarise the issues of the week."} {
		if n := strings.Count(text, want); n != 1 {
			t.Errorf("%q appears %d times in the system instruction, want once:\n%s", want, n, text)
		}
	}
}

// TestSameToolset pins how toolsets are matched: by identity, and never by
// comparing values whose type cannot be compared.
func TestSameToolset(t *testing.T) {
	a := &staticToolset{name: "a"}
	b := &staticToolset{name: "a"}
	byValue := staticToolset{name: "a"} // holds a slice: not comparable
	for _, tc := range []struct {
		x, y tool.Toolset
		want bool
	}{
		{a, a, true},
		{a, b, false},
		{byValue, byValue, false},
		{a, byValue, false},
		{nil, a, false},
	} {
		if got := sameToolset(tc.x, tc.y); got != tc.want {
			t.Errorf("sameToolset(%#v, %#v) = %v, want %v", tc.x, tc.y, got, tc.want)
		}
	}
}

// hookedTool is a function tool whose request processor also adds a line
// to the instruction, as loadmemorytool does.
type hookedTool struct {
	tool.Tool
	line string
}

func (h *hookedTool) Declaration() *genai.FunctionDeclaration {
	return h.Tool.(runnableTool).Declaration()
}

func (h *hookedTool) Run(ctx agent.Context, args any) (map[string]any, error) {
	return h.Tool.(runnableTool).Run(ctx, args)
}

func (h *hookedTool) ProcessRequest(ctx agent.Context, req *model.LLMRequest) error {
	if err := h.Tool.(requestProcessor).ProcessRequest(ctx, req); err != nil {
		return err
	}
	appendInstruction(req, h.line)
	return nil
}

// TestToolHookRunsWithoutItsDeclaration checks a tool's own processor: its
// instruction reaches the request, the declaration it packs does not, and
// a tool the agent also has directly is left to the flow.
func TestToolHookRunsWithoutItsDeclaration(t *testing.T) {
	tools := weatherTools(t)
	hooked := &hookedTool{Tool: tools[0], line: "Weather is in Celsius."}
	direct := &hookedTool{Tool: tools[1], line: "Conversions are exact."}
	m := adksuite.NewScript().On("hi", adksuite.Say("hello"))
	f := newFixture(t, m, fixtureConfig{
		cfg:   Config{Tools: []tool.Tool{hooked, direct}},
		agent: llmagent.Config{Tools: []tool.Tool{direct}},
	})
	f.turn(t.Context(), "s1", "hi")
	req := m.Requests()[0]
	text := adksuite.SystemText(req)
	if !strings.Contains(text, "Weather is in Celsius.") {
		t.Errorf("the tool's hook did not reach the instruction:\n%s", text)
	}
	if n := strings.Count(text, "Conversions are exact."); n != 1 {
		t.Errorf("the direct tool's hook ran %d times, want once (by the flow):\n%s", n, text)
	}
	if diff := cmp.Diff([]string{"convert_temperature", ToolName}, adksuite.Declared(req)); diff != "" {
		t.Errorf("declared tools (-want +got):\n%s", diff)
	}
}

// TestDirectOnlyToolsRefused checks that loadartifactstool, whose work is
// attaching artifacts after the model's own call to it, is refused at New
// and when a toolset offers it.
func TestDirectOnlyToolsRefused(t *testing.T) {
	_, err := New(Config{Tools: []tool.Tool{loadartifactstool.New()}, Backend: adksuite.Backend(t)})
	var de *DirectOnlyError
	if !errors.As(err, &de) || de.Tool != "load_artifacts" {
		t.Fatalf("New with loadartifactstool: %v, want a DirectOnlyError for load_artifacts", err)
	}
	for _, want := range []string{"load_artifacts", "cannot be called from code", "agent's own Tools"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	_, err = resolve(fakeToolContext(t.Context()), nil, []namedToolset{{ns: "files", set: staticToolset{name: "files", tools: []tool.Tool{loadartifactstool.New()}}}}, surfaceOptions{}, false)
	if !errors.As(err, &de) {
		t.Errorf("a toolset offering loadartifactstool: %v, want a DirectOnlyError", err)
	}
}

type staticToolset struct {
	name  string
	tools []tool.Tool
}

func (s staticToolset) Name() string                                     { return s.name }
func (s staticToolset) Tools(agent.ReadonlyContext) ([]tool.Tool, error) { return s.tools, nil }

// TestPackOnlyToolsOnlyPack pins the ADK behaviour the plugin relies on to
// skip the processors of functiontool and mcptoolset tools: they only pack
// their declaration.
func TestPackOnlyToolsOnlyPack(t *testing.T) {
	clientT, serverT := mcp.NewInMemoryTransports()
	server := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "v1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "get_weather", Description: "Weather for a city."},
		func(_ context.Context, _ *mcp.CallToolRequest, in weatherIn) (*mcp.CallToolResult, weatherOut, error) {
			return nil, weatherOut{TempC: 21.5}, nil
		})
	ss, err := server.Connect(t.Context(), serverT, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	ts, err := mcptoolset.New(mcptoolset.Config{Transport: clientT})
	if err != nil {
		t.Fatal(err)
	}
	ctx := fakeToolContext(t.Context())
	mcpTools, err := ts.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fn, err := functiontool.New(functiontool.Config{Name: "local_weather", Description: "Weather here."},
		func(agent.Context, weatherIn) (weatherOut, error) { return weatherOut{}, nil })
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range append([]tool.Tool{fn}, mcpTools...) {
		if !packOnly(tl) {
			t.Errorf("%s (%T) is not recognised as pack-only", tl.Name(), tl)
		}
		req := &model.LLMRequest{Contents: []*genai.Content{genai.NewContentFromText("hi", genai.RoleUser)}}
		if err := tl.(requestProcessor).ProcessRequest(ctx, req); err != nil {
			t.Fatal(err)
		}
		if _, ok := req.Tools[tl.Name()]; !ok || len(req.Tools) != 1 {
			t.Errorf("%s: request tools %v, want only itself", tl.Name(), req.Tools)
		}
		if req.Config.SystemInstruction != nil || len(req.Contents) != 1 || len(req.Config.Tools) != 1 {
			t.Errorf("%s: its processor did more than pack it: %+v", tl.Name(), req.Config)
		}
		unpack(req, tl.Name(), 0)
		if len(req.Tools) != 0 || len(req.Config.Tools) != 0 {
			t.Errorf("%s: unpack left %v and %v", tl.Name(), req.Tools, req.Config.Tools)
		}
	}
	if packOnly(&hookedTool{Tool: fn}) {
		t.Error("a tool of another package is taken as pack-only")
	}
}

// TestHooksFailClosed checks that without an ADK invocation behind the
// callback context the hooks are not skipped but fail the request.
func TestHooksFailClosed(t *testing.T) {
	tools := weatherTools(t)
	s, err := buildSurface([]namespacedTool{{t: &hookedTool{Tool: tools[0], line: "x"}}}, surfaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = runHooks(fakeCallbackContext{}, s, nil, &model.LLMRequest{})
	if err == nil || !strings.Contains(err.Error(), "request hooks") {
		t.Errorf("runHooks without an invocation: %v, want an error", err)
	}
}

// fakeCallbackContext is a callback context that no ADK invocation stands
// behind.
type fakeCallbackContext struct{ agent.Context }
