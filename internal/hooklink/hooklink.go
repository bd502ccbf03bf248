// Package hooklink carries Code Mode's hooks from package plugin/codemode,
// which makes them, to package callbacks, their one public form for agents
// run without a runner plugin. plugin/codemode sets [New] when it is
// initialized, and callbacks, which imports it, calls it; neither exports
// the constructor, so a program has one way to wire the hooks by hand.
package hooklink

import (
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
)

// Hooks are Code Mode's hooks for one LLM agent, as its callbacks.
type Hooks struct {
	BeforeModel llmagent.BeforeModelCallback
	AfterAgent  agent.AfterAgentCallback
	OnToolError llmagent.OnToolErrorCallback
	// Close closes every sandbox the hooks started.
	Close func() error
}

// New makes the hooks for cfg, a codemode.Config; it is set by package
// plugin/codemode's initialization.
var New func(cfg any) (Hooks, error)
