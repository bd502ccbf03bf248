package codemode

import (
	"context"
	"fmt"
	"reflect"
	"slices"

	"google.golang.org/genai"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/tool"
)

// DirectOnlyError reports a tool that does its work only as a direct tool
// of the agent, such as loadartifactstool: Code Mode refuses it, and it
// belongs in the agent's own Tools.
type DirectOnlyError struct {
	Tool   string
	Reason string
}

func (e *DirectOnlyError) Error() string {
	return fmt.Sprintf("codemode: tool %q cannot be called from code: %s; give it to the agent's own Tools instead of to Code Mode", e.Tool, e.Reason)
}

// hook is the request processor of one tool behind execute_code.
type hook struct {
	name string // the tool's ADK name, under which it packs itself
	proc requestProcessor
}

// toolHooks lists the request processors of tools, in their order,
// leaving out Code Mode's own tools and those that only pack their
// declaration (packOnly), which the stub replaces.
func toolHooks(all []namespacedTool) []hook {
	var out []hook
	for _, nt := range all {
		if _, builtin := nt.t.(*artifactTool); builtin || packOnly(nt.t) {
			continue
		}
		if rp, ok := nt.t.(requestProcessor); ok {
			out = append(out, hook{name: nt.t.Name(), proc: rp})
		}
	}
	return out
}

// runHooks runs the request processors of the tools behind execute_code
// and then those of Code Mode's toolsets on req, as ADK's flow runs those
// of direct tools and toolsets before each model request: whatever they
// add to the instruction or the contents stays, while the declaration a
// tool packs for itself is taken out again, since code calls it through
// its stub. A tool the agent also has directly (by name: req.Tools holds
// it) is skipped, and so is a toolset the agent also has directly (the
// same value in the agent's Toolsets): the flow has run their processors
// already, and a second run would add the same text twice. A processor's
// error fails the request, as in the flow.
func runHooks(ctx agent.Context, s *surface, toolsets []requestProcessorOf, req *model.LLMRequest) error {
	if len(s.hooks) == 0 && len(toolsets) == 0 {
		return nil
	}
	tc, err := processorContext(ctx)
	if err != nil {
		return fmt.Errorf("codemode: cannot run the request hooks of the tools behind %s: %w", ToolName, err)
	}
	for _, h := range s.hooks {
		if _, direct := req.Tools[h.name]; direct {
			continue
		}
		packed := 0
		if req.Config != nil {
			packed = len(req.Config.Tools)
		}
		if err := h.proc.ProcessRequest(tc, req); err != nil {
			return fmt.Errorf("codemode: request hook of tool %q: %w", h.name, err)
		}
		unpack(req, h.name, packed)
	}
	direct := directToolsets(ctx)
	for _, ts := range toolsets {
		if slices.ContainsFunc(direct, func(d tool.Toolset) bool { return sameToolset(d, ts.set) }) {
			continue
		}
		if slices.Contains(s.Unavailable, ts.name) {
			continue // left out of this request: see resolve
		}
		if err := ts.proc.ProcessRequest(tc, req); err != nil {
			return fmt.Errorf("codemode: request hook of toolset %q: %w", ts.name, err)
		}
	}
	return nil
}

// requestProcessorOf is a toolset with a request processor.
type requestProcessorOf struct {
	name string
	set  tool.Toolset
	proc requestProcessor
}

// directToolsets returns the toolsets of the agent whose invocation made
// ctx, those the flow runs the processors of itself. When the agent's
// configuration cannot be read it returns none, so each processor of Code
// Mode's toolsets runs: at worst twice, never not at all.
func directToolsets(ctx context.Context) []tool.Toolset {
	a, ok := agentOf(ctx)
	if !ok {
		return nil
	}
	cfg, err := agentConfig(a, "toolsets")
	if err != nil {
		return nil
	}
	return cfg.Toolsets
}

// sameToolset reports whether a and b are the same toolset: equal values
// of one comparable type, such as the same pointer. Values of a type that
// cannot be compared are never the same.
func sameToolset(a, b tool.Toolset) bool {
	if a == nil || b == nil {
		return false
	}
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	return ta == tb && ta.Comparable() && a == b
}

// unpack takes out of req the tool name that a processor packed: its
// entry in req.Tools and its function declaration. A genai.Tool that the
// processor appended after the first tools entries is dropped when it is
// left with no declaration and nothing else.
func unpack(req *model.LLMRequest, name string, tools int) {
	delete(req.Tools, name)
	if req.Config == nil {
		return
	}
	kept := req.Config.Tools[:0]
	for i, gt := range req.Config.Tools {
		if gt != nil && gt.FunctionDeclarations != nil {
			gt.FunctionDeclarations = slices.DeleteFunc(gt.FunctionDeclarations, func(d *genai.FunctionDeclaration) bool { return d != nil && d.Name == name })
			if i >= tools && len(gt.FunctionDeclarations) == 0 && reflect.DeepEqual(*gt, genai.Tool{FunctionDeclarations: gt.FunctionDeclarations}) {
				continue
			}
		}
		kept = append(kept, gt)
	}
	req.Config.Tools = kept
}
