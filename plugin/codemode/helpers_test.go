package codemode

import (
	"context"
	"testing"

	"google.golang.org/genai"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/artifact"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"

	"github.com/adk-codemode/codemode/internal/testsupport/adksuite"
)

// This file holds what this line's own tests share: the behaviours both
// lines show are in adksuite; the tests here need ADK's types or the
// plugin's internals, and build their runner with the suite's assemble.

// fixture is a runner with the plugin and a scripted model.
type fixture struct {
	*suiteAgent
	t     testing.TB
	model *adksuite.Script
}

type fixtureConfig struct {
	cfg       Config
	agent     llmagent.Config // Name and Model are filled in, and Instruction unless set
	plugins   []*plugin.Plugin
	noPlugin  bool             // attach only the before-model hook to the agent, without the plugin
	artifacts artifact.Service // the runner's artifact service; nil for none
	sessions  session.Service  // the runner's session service; nil for a new in-memory one
	model     model.LLM        // the agent's model, in place of the scripted one
}

func newFixture(t testing.TB, m *adksuite.Script, fc fixtureConfig) *fixture {
	t.Helper()
	if fc.cfg.Backend == nil {
		fc.cfg.Backend = adksuite.Backend(t)
	}
	fc.agent.Model = suiteModel{m}
	if fc.model != nil {
		fc.agent.Model = fc.model
	}
	sa := assemble(t, fc.cfg, fc.noPlugin, fc.agent, fc.plugins, fc.sessions, fc.artifacts)
	return &fixture{suiteAgent: sa, t: t, model: m}
}

// turn runs one user message in session sid and returns its events.
func (f *fixture) turn(ctx context.Context, sid, msg string) []*session.Event {
	f.t.Helper()
	var evs []*session.Event
	for ev, err := range f.runner.Run(ctx, "user", sid, genai.NewContentFromText(msg, genai.RoleUser), agent.RunConfig{}) {
		if err != nil {
			f.t.Fatalf("run %q: %v", msg, err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// outputs returns the execute_code results among events, in order.
func outputs(evs []*session.Event) []map[string]any {
	var out []adksuite.Event
	for _, ev := range evs {
		out = append(out, suiteEvent(ev))
	}
	return adksuite.Outputs(out)
}

// weatherTools are the suite's deterministic tools, as function tools.
func weatherTools(t testing.TB) []tool.Tool { return suiteTools(t, adksuite.WeatherTools()) }
