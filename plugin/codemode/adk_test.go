package codemode

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/adk-codemode/codemode/internal/testsupport/adksuite"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/artifact"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
)

// reach is what the plugin could read of ADK's internals from the
// contexts of one invocation.
type reach struct {
	agentName     string
	plugins       bool
	beforeTool    int
	artifacts     bool
	processorCtx  bool
	processorArts bool
}

type probeArgs struct {
	Note string `json:"note,omitempty"`
}

// TestReachIntoADK pins, for the ADK line this package is built against,
// every read of ADK's internals (adk.go, adkline.go) from the contexts a
// real runner hands a direct tool and a before-model callback: the
// invocation's agent, the runner's plugin manager, the agent's tool
// callbacks and the artifact service, with and without one.
func TestReachIntoADK(t *testing.T) {
	for _, withArtifacts := range []bool{false, true} {
		var got reach
		probe, err := functiontool.New(functiontool.Config{Name: "probe", Description: "Read what the plugin reads."},
			func(ctx agent.Context, _ probeArgs) (map[string]any, error) {
				if a, ok := agentOf(ctx); ok {
					got.agentName = a.Name()
					if cbs, err := agentToolCallbacks(a); err == nil {
						got.beforeTool = len(cbs.before)
					}
				}
				got.plugins = pluginManager(ctx) != nil
				got.artifacts = artifactsOf(ctx) != nil
				return map[string]any{}, nil
			})
		if err != nil {
			t.Fatal(err)
		}
		beforeModel := func(ctx agent.Context, _ *model.LLMRequest) (*model.LLMResponse, error) {
			if tc, err := processorContext(ctx); err == nil {
				got.processorCtx = true
				got.processorArts = artifactsOf(tc) != nil
			}
			return nil, nil
		}
		noop := func(agent.Context, tool.Tool, map[string]any) (map[string]any, error) { return nil, nil }
		m := adksuite.NewScript().On("probe", adksuite.CallTool("probe", map[string]any{}), adksuite.Say("done"))
		// No sandbox is needed, nor the block, whose probe would fail.
		fc := fixtureConfig{cfg: Config{Backend: failingBackend{}, DisableBlock: true}}
		fc.agent.Tools = []tool.Tool{probe}
		fc.agent.BeforeToolCallbacks = append(fc.agent.BeforeToolCallbacks, noop)
		fc.agent.BeforeModelCallbacks = append(fc.agent.BeforeModelCallbacks, beforeModel)
		if withArtifacts {
			fc.artifacts = artifact.InMemoryService()
		}
		f := newFixture(t, m, fc)
		f.turn(t.Context(), "s", "probe")
		want := reach{agentName: "assistant", plugins: true, beforeTool: 1, artifacts: withArtifacts, processorCtx: true, processorArts: withArtifacts}
		if got != want {
			t.Errorf("with artifacts %v: read %+v, want %+v", withArtifacts, got, want)
		}
	}
}

// TestChainFailsClosed checks that a call from code whose invocation
// cannot be found is refused, never run without its callbacks, and that a
// registered plugin without a reachable plugin manager refuses too.
func TestChainFailsClosed(t *testing.T) {
	for _, requirePlugins := range []bool{false, true} {
		e := &engine{requirePlugins: requirePlugins}
		_, err := e.chainFor(&execCall{parent: fakeToolContext(context.Background())}, "get_weather")
		var ce *CallbackError
		if !errors.As(err, &ce) || ce.Tool != "get_weather" {
			t.Fatalf("requirePlugins %v: chainFor without an invocation: %v, want a *CallbackError", requirePlugins, err)
		}
		if requirePlugins && !errors.Is(err, errNoPluginManager) {
			t.Errorf("registered as a plugin: %v, want errNoPluginManager", err)
		}
		if !requirePlugins && !strings.Contains(err.Error(), "agent") {
			t.Errorf("without the plugin: %v, want the agent named as unreachable", err)
		}
	}
	if _, ok := agentOf(context.Background()); ok {
		t.Error("agentOf found an agent behind a plain context")
	}
	if _, err := processorContext(fakeCallbackContext{}); !errors.Is(err, errNoInvocation) {
		t.Errorf("processorContext without an invocation: %v, want errNoInvocation", err)
	}
}
