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
//		OnToolErrorCallbacks: []llmagent.OnToolErrorCallback{cb.OnToolError},
//	})
//
// BeforeModel does on each model call what the plugin's before-model hook
// does: it appends the <code-mode> block to the system instruction and adds
// the execute_code tool to the request. AfterAgent closes the invocation's
// sandbox when the agent it is attached to finishes. OnToolError carries a
// person's answer to a tool call from code that asked for approval back to
// the paused block. Attach all three to the same agent. Without AfterAgent, the idle reaper closes the sandbox after
// Config.IdleTimeout.
//
// Tool calls made from code go through the runner's plugins (when there is
// a runner) and the agent's own tool callbacks, as with the plugin; see the
// codemode package.
package callbacks
