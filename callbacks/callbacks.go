// Package callbacks gives Code Mode as plain llmagent callbacks, for
// agents run without a runner plugin (or by a runner you do not control).
//
//	cb, err := callbacks.New(codemode.Config{Tools: tools})
//	if err != nil { ... }
//	defer cb.Close()
//	a, err := llmagent.New(llmagent.Config{
//		Name:                 "assistant",
//		Model:                m,
//		BeforeModelCallbacks: []llmagent.BeforeModelCallback{cb.BeforeModel},
//		AfterAgentCallbacks:  []agent.AfterAgentCallback{cb.AfterAgent},
//	})
//
// BeforeModel does on each model call what the plugin's before-model hook
// does: it appends the <code-mode> block to the system instruction and adds
// the execute_code tool to the request. AfterAgent closes the invocation's
// sandbox when the agent it is attached to finishes; attach both to the
// same agent. Without AfterAgent, the idle reaper closes the sandbox after
// Config.IdleTimeout.
//
// Tool calls made from code go through the runner's plugins (when there is
// a runner) and the agent's own tool callbacks, as with the plugin; see the
// codemode package.
package callbacks

import (
	"google.golang.org/adk/agent"
	"google.golang.org/adk/agent/llmagent"

	"github.com/adk-codemode/codemode/plugin/codemode"
)

// Callbacks are the Code Mode hooks for one LLM agent.
type Callbacks struct {
	// BeforeModel is the before-model callback: it returns (nil, nil), so
	// the model call always proceeds, unless the agent's tools cannot be
	// resolved; then the error skips the model call.
	BeforeModel llmagent.BeforeModelCallback
	// AfterAgent is the after-agent callback that ends the turn: it
	// returns (nil, nil) and never replaces the agent's output.
	AfterAgent agent.AfterAgentCallback

	hooks *codemode.Hooks
}

// New returns the callbacks for cfg, which is read like the plugin's.
func New(cfg codemode.Config) (*Callbacks, error) {
	h, err := codemode.NewHooks(cfg)
	if err != nil {
		return nil, err
	}
	return &Callbacks{BeforeModel: h.BeforeModel, AfterAgent: h.AfterAgent, hooks: h}, nil
}

// MustNew is like [New] but panics on an error.
func MustNew(cfg codemode.Config) *Callbacks {
	c, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return c
}

// Close closes every sandbox the callbacks started and stops the idle
// reaper.
func (c *Callbacks) Close() error { return c.hooks.Close() }
