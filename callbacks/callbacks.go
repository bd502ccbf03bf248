package callbacks

import (
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"

	"github.com/adk-codemode/codemode/internal/host/hooklink"
	"github.com/adk-codemode/codemode/plugin/codemode"
)

// Set is the set of Code Mode hooks for one LLM agent: attach BeforeModel,
// AfterAgent and OnToolError to the same agent, and Close it when the
// agent is done.
type Set struct {
	// BeforeModel is the before-model callback: it returns (nil, nil), so
	// the model call proceeds, unless the agent's tools cannot be
	// resolved (then the error skips the model call) or the plugin
	// answers the request itself, as the plugin's hook does (a paused
	// block's continuation, a turn whose budgets are spent).
	BeforeModel llmagent.BeforeModelCallback
	// AfterAgent is the after-agent callback that ends the turn: it
	// returns (nil, nil) and never replaces the agent's output.
	AfterAgent agent.AfterAgentCallback
	// OnToolError is the on-tool-error callback through which the answer
	// to a request for approval made from code reaches the paused block;
	// without it such a block is never resumed and expires. It leaves
	// every other error alone.
	OnToolError llmagent.OnToolErrorCallback

	close func() error
}

// New returns the callbacks for cfg, which is read like the plugin's.
func New(cfg codemode.Config) (*Set, error) {
	h, err := hooklink.New(cfg)
	if err != nil {
		return nil, err
	}
	return &Set{BeforeModel: h.BeforeModel, AfterAgent: h.AfterAgent, OnToolError: h.OnToolError, close: h.Close}, nil
}

// MustNew is like [New] but panics on an error.
func MustNew(cfg codemode.Config) *Set {
	c, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return c
}

// Close closes every sandbox the callbacks started and stops the idle
// reaper.
func (c *Set) Close() error { return c.close() }
