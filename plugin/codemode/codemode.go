package codemode

import (
	"fmt"

	"github.com/adk-codemode/codemode/internal/both/observe"
	eng "github.com/adk-codemode/codemode/internal/host/engine"

	"google.golang.org/genai"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/plugin"

	"github.com/adk-codemode/codemode/internal/host/hooklink"
	"github.com/adk-codemode/codemode/render"
)

// PluginName is the name the plugin registers under.
const PluginName = "codemode"

// New returns the Code Mode plugin, for runner.Config's PluginConfig:
//
//	p, err := codemode.New(codemode.Config{Tools: tools})
//	...
//	defer p.Close()
//	r, err := runner.New(runner.Config{
//		Agent:          rootAgent,
//		SessionService: session.InMemoryService(),
//		PluginConfig:   runner.PluginConfig{Plugins: []*plugin.Plugin{p}},
//	})
//
// Every LLM agent the runner runs gets the execute_code tool and the
// <code-mode> block; the agents need no change. Close the plugin to stop
// every sandbox it started.
func New(cfg Config) (*plugin.Plugin, error) {
	h, err := newHooks(cfg, true)
	if err != nil {
		return nil, err
	}
	return h.plugin()
}

// plugin wires the hooks into an ADK plugin.
func (h *hookSet) plugin() (*plugin.Plugin, error) {
	return plugin.New(plugin.Config{
		Name:                PluginName,
		BeforeRunCallback:   h.beforeRun,
		AfterRunCallback:    h.afterRun,
		BeforeModelCallback: h.BeforeModel,
		OnToolErrorCallback: h.OnToolError,
		AfterAgentCallback:  h.afterRootAgent,
		CloseFunc:           h.Close,
	})
}

// MustNew is like [New] but panics on an error.
func MustNew(cfg Config) *plugin.Plugin {
	p, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return p
}

// hookSet are the Code Mode hooks themselves: the plugin wires them into
// an ADK plugin, and package callbacks as llmagent callbacks. A hookSet
// must be closed.
type hookSet struct {
	e *engine
}

func init() {
	hooklink.New = newCallbacks
	hooklink.NewInterruptible = newInterruptible
}

// newInterruptible makes the plugin for cfg, a Config, and the function
// that interrupts an invocation's block.
func newInterruptible(cfg any) (*plugin.Plugin, hooklink.Interrupt, error) {
	c, ok := cfg.(Config)
	if !ok {
		return nil, nil, fmt.Errorf("codemode: the plugin's config is a %T, not a codemode.Config", cfg)
	}
	h, err := newHooks(c, true)
	if err != nil {
		return nil, nil, err
	}
	p, err := h.plugin()
	if err != nil {
		_ = h.Close()
		return nil, nil, err
	}
	return p, h.e.interrupt, nil
}

// newCallbacks makes the hooks of package callbacks for cfg, a Config: the
// hooks for an agent run without the plugin.
func newCallbacks(cfg any) (hooklink.Hooks, error) {
	c, ok := cfg.(Config)
	if !ok {
		return hooklink.Hooks{}, fmt.Errorf("codemode: the callbacks' config is a %T, not a codemode.Config", cfg)
	}
	h, err := newAgentHooks(c)
	if err != nil {
		return hooklink.Hooks{}, err
	}
	return hooklink.Hooks{BeforeModel: h.BeforeModel, AfterAgent: h.AfterAgent, OnToolError: h.OnToolError, Close: h.Close}, nil
}

// newAgentHooks returns the hooks for cfg, to be attached to one LLM agent
// as its callbacks rather than registered as a runner plugin.
func newAgentHooks(cfg Config) (*hookSet, error) {
	return newHooks(cfg, false)
}

// newHooks returns the hooks for cfg; with requirePlugins, a tool call
// from code that finds no runner plugins is refused (see chainFor).
func newHooks(cfg Config, requirePlugins bool) (*hookSet, error) {
	v, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	var own interface{ Close() error }
	if cfg.Backend == nil {
		jb, err := defaultBackend(cfg)
		if err != nil {
			return nil, err
		}
		cfg.Backend, own = jb, jb
	}
	e := &engine{
		cfg:            cfg,
		bare:           v.bare,
		toolsets:       v.toolsets,
		static:         v.static,
		requirePlugins: requirePlugins,
		ownBackend:     own,
		obs: observe.New(observe.Config{
			TracerProvider: cfg.TracerProvider, MeterProvider: cfg.MeterProvider,
			AuditLog: cfg.AuditLog, RecordCode: cfg.TraceCode,
		}),
		turns:  eng.NewTurns[*surface, *execCall](cfg.IdleTimeout),
		roots:  map[string]string{},
		parked: eng.NewParked(cfg.ApprovalTimeout, (*turn).Shutdown),
	}
	for _, ts := range v.toolsets {
		if rp, ok := ts.set.(requestProcessor); ok {
			e.toolsetHooks = append(e.toolsetHooks, requestProcessorOf{name: ts.ns, set: ts.set, proc: rp})
		}
	}
	// The tools package always has search and describe; tools._discovery
	// has them whatever the tools are named, while a static surface knows
	// whether the shorter import works.
	discovery := "tools._discovery"
	if e.static[1] != nil {
		discovery = e.static[1].Reg.Discovery()
	}
	for _, art := range []bool{true, false} {
		e.tool[index(art)] = &execTool{e: e, decl: &genai.FunctionDeclaration{
			Name: ToolName,
			Description: render.Description(render.DescriptionConfig{
				BlockAppended:   !cfg.DisableBlock,
				DiscoveryModule: discovery,
				ArtifactTools:   art && !cfg.DisableArtifactTools,
				Timeout:         cfg.Timeout,
				ToolTimeout:     cfg.ToolTimeout,
				BlocksPerTurn:   cfg.Budgets.blocksPerTurn(),
				Durable:         cfg.Durable,
			}),
			ParametersJsonSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"code": map[string]any{"type": "string", "description": "The Python code to execute."},
				},
				"required": []any{"code"},
			},
		}}
	}
	return &hookSet{e: e}, nil
}

// BeforeModel prepares every model request: it resolves the tools (the
// toolsets once per invocation), appends the <code-mode> block to the
// system instruction unless Config.DisableBlock is set, and adds
// execute_code to the request, both its declaration and the tool the flow
// runs when the model calls it. It returns (nil, nil) so the model call
// always proceeds, unless the tools cannot be resolved: then it returns the
// error and the model call is skipped. It answers a request itself in two
// other cases: in an invocation that resumed code which then paused at a
// second request for approval, with the execute_code call that makes that
// request (see [Config.ApprovalTimeout]); and when the turn's budgets
// allow no more model calls ([Budgets.BlocksPerTurn],
// [Budgets.ModelCallsPerTurn]), with a text that says so, which ends the
// invocation.
func (h *hookSet) BeforeModel(ctx agent.Context, req *model.LLMRequest) (*model.LLMResponse, error) {
	if err := h.e.prepare(ctx, req); err != nil {
		return nil, err
	}
	if r := h.e.continuation(ctx.InvocationID()); r != nil {
		return r, nil
	}
	return h.e.budgetAnswer(ctx.InvocationID()), nil
}

// AfterAgent ends the turn when the agent it is attached to finishes: the
// sandbox of the invocation is closed and its variables are gone. It
// returns (nil, nil) and never replaces the agent's output.
func (h *hookSet) AfterAgent(ctx agent.Context) (*genai.Content, error) {
	h.e.release(ctx.InvocationID())
	return nil, nil
}

// Close closes every sandbox and stops the idle reaper, and the template
// process of the default backend (see [Config.Backend]). Later
// execute_code calls fail. It is safe to call more than once.
func (h *hookSet) Close() error {
	return h.e.close()
}

// beforeRun records the agent the runner starts the invocation with, so
// that the turn ends when that agent, and not a sub-agent, finishes.
func (h *hookSet) beforeRun(ic agent.InvocationContext) (*genai.Content, error) {
	h.e.setRoot(ic.InvocationID(), ic.Agent().Name())
	return nil, nil
}

// afterRun ends the turn when the runner finishes the invocation, in case
// the root agent's after-agent hook did not run (a run cut short).
func (h *hookSet) afterRun(ic agent.InvocationContext) {
	h.e.release(ic.InvocationID())
	h.e.clearRoot(ic.InvocationID())
}

// afterRootAgent ends the turn when the invocation's root agent finishes.
func (h *hookSet) afterRootAgent(ctx agent.Context) (*genai.Content, error) {
	if root, ok := h.e.root(ctx.InvocationID()); !ok || root == ctx.AgentName() {
		h.e.release(ctx.InvocationID())
	}
	return nil, nil
}
