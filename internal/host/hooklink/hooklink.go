// Package hooklink carries Code Mode's hooks from package plugin/codemode,
// which makes them, to package callbacks, their one public form for agents
// run without a runner plugin. plugin/codemode sets [New] when it is
// initialized, and callbacks, which imports it, calls it; neither exports
// the constructor, so a program has one way to wire the hooks by hand.
// It carries, the same way, the plugin with a way to interrupt a block
// to package mcpserver ([NewInterruptible]).
package hooklink

import (
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"
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

// Interrupt stops the block that the invocation runs, if any, with cause,
// as its timeout would: the code is interrupted and keeps its variables,
// and the execute_code call returns the block's output. It reports
// whether a block was running.
type Interrupt func(invocationID string, cause error) bool

// NewInterruptible makes the Code Mode plugin for cfg, a codemode.Config,
// with its Interrupt; it is set by package plugin/codemode's
// initialization.
var NewInterruptible func(cfg any) (*plugin.Plugin, Interrupt, error)
