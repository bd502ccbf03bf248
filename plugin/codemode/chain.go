package codemode

import (
	"errors"
	"fmt"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool"
)

// chain is the callbacks a tool call passes through, in the order ADK's
// flow gives a direct call: the runner's plugins first, then the agent's.
// At each stage the first callback that answers (a non-nil result or
// error) decides, and the rest of that stage is skipped.
type chain struct {
	plugins toolCallbacks // nil when the runner has no plugin manager
	agent   agentCallbacks
}

// chainFor finds the callbacks of the agent and runner that made exec's
// invocation. It fails closed: a call whose callbacks cannot be found is
// refused with a [*CallbackError].
func (e *engine) chainFor(exec *execCall, toolName string) (chain, error) {
	var c chain
	if pm := pluginManager(exec.parent); pm != nil {
		c.plugins = pm
	} else if e.requirePlugins {
		return c, &CallbackError{Tool: toolName, Err: errNoPluginManager}
	}
	a, ok := agentOf(exec.parent)
	if !ok {
		return c, &CallbackError{Tool: toolName, Err: errors.New("the invocation's agent is not reachable from the tool context")}
	}
	cbs, err := agentToolCallbacks(a)
	if err != nil {
		return c, &CallbackError{Tool: toolName, Err: err}
	}
	c.agent = cbs
	return c, nil
}

// run runs the tool through the chain: the before-tool callbacks (an
// answer skips the tool), the tool, on an error the on-error callbacks (an
// answer replaces the error), then the after-tool callbacks (an answer
// replaces the outcome). via names the last stage whose callback answered
// ("before_tool", "on_tool_error", "after_tool"), or is "".
func (c chain) run(tc agent.Context, st *surfaceTool, args map[string]any) (_ map[string]any, via string, _ error) {
	result, err := c.before(tc, st.Tool, args)
	if answered(result, err) {
		via = "before_tool"
	} else {
		result, err = runTool(tc, st, args)
	}
	if err != nil {
		if alt, altErr := c.onError(tc, st.Tool, args, err); answered(alt, altErr) {
			result, via, err = alt, "on_tool_error", altErr
		}
	}
	if alt, altErr := c.after(tc, st.Tool, args, result, err); answered(alt, altErr) {
		result, via, err = alt, "after_tool", altErr
	}
	return result, via, err
}

// answered says whether a callback decided: a non-nil result or error.
func answered(result map[string]any, err error) bool { return result != nil || err != nil }

func (c chain) before(tc agent.Context, t tool.Tool, args map[string]any) (map[string]any, error) {
	if c.plugins != nil {
		if r, err := c.plugins.RunBeforeToolCallback(tc, t, args); answered(r, err) {
			return r, err
		}
	}
	for _, cb := range c.agent.before {
		if r, err := cb(tc, t, args); answered(r, err) {
			return r, err
		}
	}
	return nil, nil
}

func (c chain) onError(tc agent.Context, t tool.Tool, args map[string]any, cause error) (map[string]any, error) {
	if c.plugins != nil {
		if r, err := c.plugins.RunOnToolErrorCallback(tc, t, args, cause); answered(r, err) {
			return r, err
		}
	}
	for _, cb := range c.agent.onError {
		if r, err := cb(tc, t, args, cause); answered(r, err) {
			return r, err
		}
	}
	return nil, nil
}

func (c chain) after(tc agent.Context, t tool.Tool, args, result map[string]any, cause error) (map[string]any, error) {
	if c.plugins != nil {
		if r, err := c.plugins.RunAfterToolCallback(tc, t, args, result, cause); answered(r, err) {
			return r, err
		}
	}
	for _, cb := range c.agent.after {
		if r, err := cb(tc, t, args, result, cause); answered(r, err) {
			return r, err
		}
	}
	return nil, nil
}

// runTool runs the tool, turning a panic into an error.
func runTool(tc agent.Context, st *surfaceTool, args map[string]any) (result map[string]any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("tool %s panicked: %v", st.Code, r)
		}
	}()
	return st.Tool.Run(tc, args)
}
