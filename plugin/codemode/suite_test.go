package codemode

import (
	"context"
	"errors"
	"iter"
	"maps"
	"slices"
	"testing"

	"google.golang.org/genai"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/artifact"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"

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
}

func (line) Start(t testing.TB, s adksuite.Setup) adksuite.Agent {
	t.Helper()
	var cfg Config
	if err := s.Config.CopyTo(&cfg); err != nil {
		t.Fatal(err)
	}
	if f := s.Config.OnArtifactsSaved; f != nil {
		cfg.OnArtifactsSaved = func(_ agent.Context, delta map[string]int64) { f(delta) }
	}
	cfg.Tools = suiteTools(t, s.Tools)
	for _, ts := range s.Toolsets {
		cfg.Toolsets = append(cfg.Toolsets, staticToolset{name: ts.Name, tools: suiteTools(t, ts.Tools)})
	}
	h, err := newHooks(cfg, !s.NoPlugin)
	if err != nil {
		t.Fatalf("newHooks: %v", err)
	}
	t.Cleanup(func() { _ = h.Close() })
	ac := llmagent.Config{Name: "assistant", Model: suiteModel{s.Model}, Instruction: "You are a helpful assistant."}
	var plugins []*plugin.Plugin
	if s.NoPlugin {
		ac.BeforeModelCallbacks = append(ac.BeforeModelCallbacks, h.BeforeModel)
		ac.OnToolErrorCallbacks = append(ac.OnToolErrorCallbacks, h.OnToolError)
	} else {
		p, err := h.plugin()
		if err != nil {
			t.Fatal(err)
		}
		plugins = append(plugins, p)
	}
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
	a, err := llmagent.New(ac)
	if err != nil {
		t.Fatal(err)
	}
	sa := &suiteAgent{hooks: h, sessions: session.InMemoryService()}
	if s.Artifacts {
		sa.artifacts = artifact.InMemoryService()
	}
	sa.runner, err = runner.New(runner.Config{
		AppName:           "test",
		Agent:             a,
		SessionService:    sa.sessions,
		PluginConfig:      runner.PluginConfig{Plugins: plugins},
		ArtifactService:   sa.artifacts,
		AutoCreateSession: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	return sa
}

// suiteTools builds the suite's tools as function tools.
func suiteTools(t testing.TB, tools []adksuite.Tool) []tool.Tool {
	t.Helper()
	var out []tool.Tool
	for _, st := range tools {
		fc := functiontool.Config{
			Name: st.Name, Description: st.Description, InputSchema: st.Params,
			RequireConfirmation: st.Confirm, IsLongRunning: st.LongRunning,
		}
		if st.ConfirmIf != nil {
			fc.RequireConfirmationProvider = st.ConfirmIf
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

// suiteCall is a tool's or callback's context as the suite sees it.
type suiteCall struct{ agent.Context }

func (c suiteCall) SetState(key string, v any) error { return c.State().Set(key, v) }
func (c suiteCall) TransferTo(name string)           { c.Actions().TransferToAgent = name }

// suiteModel answers model requests from the suite's model.
type suiteModel struct{ m adksuite.Model }

func (suiteModel) Name() string { return "scripted" }

func (s suiteModel) GenerateContent(ctx context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		c, err := s.m.Reply(ctx, adksuite.Request{
			Contents: req.Contents, Config: req.Config,
			Runnable: slices.Sorted(maps.Keys(req.Tools)),
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
	for ev, err := range a.runner.Run(ctx, "user", sid, msg, agent.RunConfig{}) {
		if err != nil {
			return evs, err
		}
		evs = append(evs, adksuite.Event{
			Author: ev.Author, Content: ev.Content,
			StateDelta: ev.Actions.StateDelta, ArtifactDelta: ev.Actions.ArtifactDelta,
			LongRunningToolIDs: ev.LongRunningToolIDs,
			ErrorCode:          ev.ErrorCode, ErrorMessage: ev.ErrorMessage,
		})
	}
	return evs, nil
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

func (a *suiteAgent) OpenTurns() int { return a.hooks.turnCount() }
func (a *suiteAgent) Close() error   { return a.hooks.Close() }
