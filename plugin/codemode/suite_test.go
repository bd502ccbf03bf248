package codemode

import (
	"cmp"
	"context"
	"errors"
	"iter"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/genai"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/artifact"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/model/gemini"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/adk/v2/tool/mcptoolset"

	eng "github.com/adk-codemode/codemode/internal/host/engine"
	"github.com/adk-codemode/codemode/internal/testsupport/adksuite"
)

// TestSuite runs the behaviours both ADK lines share on this one.
func TestSuite(t *testing.T) { adksuite.Run(t, line{}) }

// line builds the suite's agents on this ADK line.
type line struct{}

// suiteAgent is a runner with the plugin, as the suite drives it.
type suiteAgent struct {
	hooks     *hookSet
	runner    *runner.Runner
	sessions  session.Service
	artifacts artifact.Service
	// run is the configuration every invocation runs with.
	run agent.RunConfig
}

func (line) Start(t testing.TB, s adksuite.Setup) adksuite.Agent {
	t.Helper()
	cfg := suiteConfig(t, s)
	if n := s.PendingResultBytes; n > 0 {
		old := eng.MaxPendingResultBytes
		eng.MaxPendingResultBytes = n
		t.Cleanup(func() { eng.MaxPendingResultBytes = old })
	}
	if d := s.OutputFilesTimeout; d > 0 {
		old := eng.OutputFilesTimeout
		eng.OutputFilesTimeout = d
		t.Cleanup(func() { eng.OutputFilesTimeout = old })
	}
	ac := llmagent.Config{Model: suiteModel{s.Model}, Instruction: s.Instruction}
	if s.Gemini != nil {
		ac.Model = suiteGemini(t, *s.Gemini)
	}
	var plugins []*plugin.Plugin
	cb := s.Callbacks
	if cb.PluginBefore != nil || cb.PluginAfter != nil {
		pc := plugin.Config{Name: "suite-callbacks"}
		if f := cb.PluginBefore; f != nil {
			pc.BeforeToolCallback = func(ctx agent.Context, tl tool.Tool, args map[string]any) (map[string]any, error) {
				return f(suiteCall{ctx}, tl.Name(), args)
			}
		}
		if f := cb.PluginAfter; f != nil {
			pc.AfterToolCallback = func(ctx agent.Context, tl tool.Tool, args, result map[string]any, err error) (map[string]any, error) {
				return f(suiteCall{ctx}, tl.Name(), args, result, err)
			}
		}
		p, err := plugin.New(pc)
		if err != nil {
			t.Fatal(err)
		}
		plugins = append(plugins, p)
	}
	if f := cb.AgentBefore; f != nil {
		ac.BeforeToolCallbacks = append(ac.BeforeToolCallbacks, func(ctx agent.Context, tl tool.Tool, args map[string]any) (map[string]any, error) {
			return f(suiteCall{ctx}, tl.Name(), args)
		})
	}
	if f := cb.AgentAfter; f != nil {
		ac.AfterToolCallbacks = append(ac.AfterToolCallbacks, func(ctx agent.Context, tl tool.Tool, args, result map[string]any, err error) (map[string]any, error) {
			return f(suiteCall{ctx}, tl.Name(), args, result, err)
		})
	}
	var sessions session.Service
	var artifacts artifact.Service
	if s.Artifacts {
		artifacts = artifact.InMemoryService()
	}
	if s.ServicesOf != nil {
		prev, ok := s.ServicesOf.(*suiteAgent)
		if !ok {
			t.Fatalf("ServicesOf is a %T, not an agent of this line", s.ServicesOf)
		}
		sessions, artifacts = prev.sessions, prev.artifacts
	}
	sa := assemble(t, cfg, s.NoPlugin, ac, plugins, sessions, artifacts)
	if s.Streaming {
		sa.run.StreamingMode = agent.StreamingModeSSE
	}
	return sa
}

// assemble builds the plugin's hooks for cfg and a runner of one agent
// made of ac (named assistant, with a default instruction unless ac has
// one), with the plugin registered first and then plugins, or with only
// the agent's hooks attached to the agent when noPlugin is set. Nil
// services are a new in-memory session service and no artifact service.
func assemble(t testing.TB, cfg Config, noPlugin bool, ac llmagent.Config, plugins []*plugin.Plugin, sessions session.Service, artifacts artifact.Service) *suiteAgent {
	t.Helper()
	h, err := newHooks(cfg, !noPlugin)
	if err != nil {
		t.Fatalf("newHooks: %v", err)
	}
	t.Cleanup(func() { _ = h.Close() })
	ac.Name = "assistant"
	if ac.Instruction == "" {
		ac.Instruction = "You are a helpful assistant."
	}
	if noPlugin {
		ac.BeforeModelCallbacks = append(ac.BeforeModelCallbacks, h.BeforeModel)
		ac.OnToolErrorCallbacks = append(ac.OnToolErrorCallbacks, h.OnToolError)
	} else {
		p, err := h.plugin()
		if err != nil {
			t.Fatal(err)
		}
		plugins = append([]*plugin.Plugin{p}, plugins...)
	}
	a, err := llmagent.New(ac)
	if err != nil {
		t.Fatal(err)
	}
	if sessions == nil {
		sessions = session.InMemoryService()
	}
	sa := &suiteAgent{hooks: h, sessions: sessions, artifacts: artifacts}
	sa.runner, err = runner.New(runner.Config{
		AppName:           "test",
		Agent:             a,
		SessionService:    sessions,
		PluginConfig:      runner.PluginConfig{Plugins: plugins},
		ArtifactService:   artifacts,
		AutoCreateSession: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	return sa
}

// Refuses builds the plugin's hooks for s, as Start does, and closes
// them: the error is newHooks', the constructor's refusal of s.
func (line) Refuses(t testing.TB, s adksuite.Setup) error {
	t.Helper()
	h, err := newHooks(suiteConfig(t, s), !s.NoPlugin)
	if err != nil {
		return err
	}
	return h.Close()
}

// Check runs the package's Check for the Config s makes.
func (line) Check(ctx context.Context, t testing.TB, s adksuite.Setup) error {
	t.Helper()
	return Check(ctx, suiteConfig(t, s))
}

// suiteConfig is the plugin's Config for s: its settings, tools and
// toolsets.
func suiteConfig(t testing.TB, s adksuite.Setup) Config {
	t.Helper()
	var cfg Config
	if err := s.Config.CopyTo(&cfg); err != nil {
		t.Fatal(err)
	}
	if f := s.Config.OnArtifactsSaved; f != nil {
		cfg.OnArtifactsSaved = func(ctx agent.Context, delta map[string]int64) { f(ctx.AgentName(), delta) }
	}
	cfg.Tools = suiteTools(t, s.Tools)
	cfg.Toolsets, cfg.Namespaces = suiteToolsets(t, s)
	return cfg
}

// suiteToolsets builds the toolsets of s and the namespaces s gives
// them. A namespace for a toolset s does not list gets a toolset built of
// its own, which the plugin refuses.
func suiteToolsets(t testing.TB, s adksuite.Setup) ([]tool.Toolset, []Namespace) {
	t.Helper()
	var sets []tool.Toolset
	for i := range s.Toolsets {
		sets = append(sets, suiteToolset(t, &s.Toolsets[i]))
	}
	var nss []Namespace
	for _, n := range s.Namespaces {
		var set tool.Toolset
		for i := range s.Toolsets {
			if n.Toolset == &s.Toolsets[i] {
				set = sets[i]
			}
		}
		if set == nil {
			set = suiteToolset(t, n.Toolset)
		}
		nss = append(nss, Namespace{Toolset: set, Name: n.Name})
	}
	return sets, nss
}

// suiteToolset builds one toolset of a Setup: ADK's MCP toolset of its
// command, one that resolves its tools anew each time, or a static one;
// then one whose listing can fail, and one that keeps only the tools it
// names. Each is a pointer, so that a namespace finds it as the plugin
// compares toolsets: by identity.
func suiteToolset(t testing.TB, ts *adksuite.Toolset) tool.Toolset {
	t.Helper()
	var set tool.Toolset
	switch {
	case ts.Command != nil:
		mt, err := mcptoolset.New(mcptoolset.Config{Transport: &mcp.CommandTransport{Command: ts.Command}})
		if err != nil {
			t.Fatal(err)
		}
		set = mt
	case ts.Resolve != nil:
		set = &resolvingToolset{t: t, name: ts.Name, resolve: ts.Resolve}
	default:
		set = &staticToolset{name: ts.Name, tools: suiteTools(t, ts.Tools)}
	}
	if ts.ListErr != nil {
		set = &failingToolset{Toolset: set, err: ts.ListErr}
	}
	if ts.Filter != nil {
		set = tool.FilterToolset(set, tool.StringPredicate(ts.Filter))
	}
	return set
}

// failingToolset fails to list its tools while err returns an error.
type failingToolset struct {
	tool.Toolset
	err func() error
}

func (s *failingToolset) Tools(ctx agent.ReadonlyContext) ([]tool.Tool, error) {
	if err := s.err(); err != nil {
		return nil, err
	}
	return s.Toolset.Tools(ctx)
}

// declaredTool is a tool of a given function declaration, as an OpenAPI
// toolset makes them: ADK's flow and the plugin run it through its
// Declaration and Run.
type declaredTool struct {
	decl *genai.FunctionDeclaration
	long bool
	run  func(adksuite.Call, map[string]any) (map[string]any, error)
}

func (d *declaredTool) Name() string                            { return d.decl.Name }
func (d *declaredTool) Description() string                     { return d.decl.Description }
func (d *declaredTool) IsLongRunning() bool                     { return d.long }
func (d *declaredTool) Declaration() *genai.FunctionDeclaration { return d.decl }

func (d *declaredTool) Run(ctx agent.Context, args any) (map[string]any, error) {
	m, _ := args.(map[string]any)
	return d.run(suiteCall{ctx}, m)
}

// resolvingToolset builds the function tools of a suite's toolset each
// time ADK or the plugin asks for them. A tool that does not build fails
// the test.
type resolvingToolset struct {
	t       testing.TB
	name    string
	resolve func() []adksuite.Tool
}

func (s resolvingToolset) Name() string { return s.name }

func (s resolvingToolset) Tools(agent.ReadonlyContext) ([]tool.Tool, error) {
	return suiteTools(s.t, s.resolve()), nil
}

// suiteTools builds the suite's tools as function tools.
func suiteTools(t testing.TB, tools []adksuite.Tool) []tool.Tool {
	t.Helper()
	var out []tool.Tool
	for _, st := range tools {
		if st.Declaration != nil {
			out = append(out, &declaredTool{decl: st.Declaration, long: st.LongRunning, run: st.Run})
			continue
		}
		fc := functiontool.Config{
			Name: st.Name, Description: st.Description, InputSchema: cmp.Or(st.Params, adksuite.NoParams()),
			RequireConfirmation: st.Confirm, IsLongRunning: st.LongRunning,
		}
		if st.ConfirmIf != nil {
			fc.RequireConfirmationProvider = st.ConfirmIf
		}
		fc.OutputSchema = st.Output
		if runAny := st.RunAny; runAny != nil {
			ft, err := functiontool.New(fc, func(ctx agent.Context, args map[string]any) (any, error) {
				return runAny(suiteCall{ctx}, args)
			})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, ft)
			continue
		}
		run := st.Run
		ft, err := functiontool.New(fc, func(ctx agent.Context, args map[string]any) (map[string]any, error) {
			return run(suiteCall{ctx}, args)
		})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ft)
	}
	return out
}

// suiteGemini builds ADK's Gemini model on the Gemini API's backend,
// its client pointed at the server g names.
func suiteGemini(t testing.TB, g adksuite.GeminiModel) model.LLM {
	t.Helper()
	llm, err := gemini.NewModel(t.Context(), g.Name, &genai.ClientConfig{
		APIKey:      g.APIKey,
		Backend:     genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: g.BaseURL},
	})
	if err != nil {
		t.Fatal(err)
	}
	return llm
}

// suiteCall is a tool's or callback's context as the suite sees it.
type suiteCall struct{ agent.Context }

func (c suiteCall) SetState(key string, v any) error { return c.State().Set(key, v) }
func (c suiteCall) TransferTo(name string)           { c.Actions().TransferToAgent = name }
func (c suiteCall) Escalate()                        { c.Actions().Escalate = true }

// Confirmation is the person's answer the call carries, if any.
func (c suiteCall) Confirmation() *adksuite.Confirmation {
	tc := c.ToolConfirmation()
	if tc == nil {
		return nil
	}
	return &adksuite.Confirmation{Hint: tc.Hint, Confirmed: tc.Confirmed, Payload: tc.Payload}
}

// suiteModel answers model requests from the suite's model.
type suiteModel struct{ m adksuite.Model }

func (suiteModel) Name() string { return "scripted" }

func (s suiteModel) GenerateContent(ctx context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		c, err := s.m.Reply(ctx, adksuite.Request{
			Contents: req.Contents, Config: req.Config,
			Runnable: slices.Sorted(maps.Keys(req.Tools)),
			CodeTool: reflect.TypeOf(req.Tools[ToolName]) == reflect.TypeFor[*execTool](),
		})
		if err != nil {
			yield(nil, err)
			return
		}
		yield(&model.LLMResponse{Content: c, TurnComplete: true}, nil)
	}
}

func (a *suiteAgent) Send(ctx context.Context, sid string, msg *genai.Content) ([]adksuite.Event, error) {
	var evs []adksuite.Event
	for ev, err := range a.runner.Run(ctx, "user", sid, msg, a.run) {
		if err != nil {
			return evs, err
		}
		evs = append(evs, suiteEvent(ev))
	}
	return evs, nil
}

// suiteEvent is what the suite reads of an event.
func suiteEvent(ev *session.Event) adksuite.Event {
	return adksuite.Event{
		Author: ev.Author, InvocationID: ev.InvocationID, Content: ev.Content,
		StateDelta: ev.Actions.StateDelta, ArtifactDelta: ev.Actions.ArtifactDelta,
		LongRunningToolIDs: ev.LongRunningToolIDs,
		ErrorCode:          ev.ErrorCode, ErrorMessage: ev.ErrorMessage,
		Partial: ev.Partial,
	}
}

func (a *suiteAgent) State(ctx context.Context, sid, key string) (any, bool, error) {
	resp, err := a.sessions.Get(ctx, &session.GetRequest{AppName: "test", UserID: "user", SessionID: sid})
	if err != nil {
		return nil, false, err
	}
	v, err := resp.Session.State().Get(key)
	if errors.Is(err, session.ErrStateKeyNotExist) {
		return nil, false, nil
	}
	return v, err == nil, err
}

func (a *suiteAgent) Artifact(ctx context.Context, sid, name string, version int64) (*genai.Part, error) {
	if a.artifacts == nil {
		return nil, errors.New("no artifact service")
	}
	resp, err := a.artifacts.Load(ctx, &artifact.LoadRequest{AppName: "test", UserID: "user", SessionID: sid, FileName: name, Version: version})
	if err != nil {
		return nil, err
	}
	return resp.Part, nil
}

func (a *suiteAgent) ArtifactNames(ctx context.Context, sid string) ([]string, error) {
	if a.artifacts == nil {
		return nil, errors.New("no artifact service")
	}
	resp, err := a.artifacts.List(ctx, &artifact.ListRequest{AppName: "test", UserID: "user", SessionID: sid})
	if err != nil {
		return nil, err
	}
	return resp.FileNames, nil
}

func (a *suiteAgent) ArtifactVersions(ctx context.Context, sid, name string) ([]int64, error) {
	if a.artifacts == nil {
		return nil, errors.New("no artifact service")
	}
	resp, err := a.artifacts.Versions(ctx, &artifact.VersionsRequest{AppName: "test", UserID: "user", SessionID: sid, FileName: name})
	if err != nil {
		return nil, err
	}
	return resp.Versions, nil
}

// ToolResults reads p with this line's IsToolResultArtifact and
// ReadToolResults.
func (a *suiteAgent) ToolResults(p *genai.Part) ([]adksuite.ToolResult, bool, error) {
	if !IsToolResultArtifact(p) {
		return nil, false, nil
	}
	rs, err := ReadToolResults(p)
	out := make([]adksuite.ToolResult, len(rs))
	for i, r := range rs {
		out[i] = adksuite.ToolResult(r)
	}
	return out, true, err
}

func (a *suiteAgent) OpenTurns() int { return len(a.hooks.e.turns.All()) }

func (a *suiteAgent) RunCode(ctx context.Context, code string) (map[string]any, error) {
	return a.hooks.e.tool[1].Run(fakeToolContext(ctx), map[string]any{"code": code})
}

func (a *suiteAgent) ReleaseTurns() {
	for id := range a.hooks.e.turns.All() {
		a.hooks.e.release(id)
	}
}

func (a *suiteAgent) InFlight() []string {
	var ids []string
	for id, tn := range a.hooks.e.turns.All() {
		if tn.CurrentBlock() != nil {
			ids = append(ids, id)
		}
	}
	return ids
}

func (a *suiteAgent) Interrupt(invocation string, cause error) bool {
	return a.hooks.e.interrupt(invocation, cause)
}
func (a *suiteAgent) Close() error { return a.hooks.Close() }
