package codemode

import (
	"fmt"
	"log/slog"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool"

	eng "github.com/adk-codemode/codemode/internal/host/engine"
)

// surface is the tool surface of one invocation (the engine's), with the
// request processors of its tools.
type surface struct {
	*eng.Surface[runnableTool]
	hooks []hook // request processors of the tools, in order
}

// surfaceTool is a tool of a surface.
type surfaceTool = eng.SurfaceTool[runnableTool]

// surfaceOptions are the parts of Config that shape the surface.
type surfaceOptions struct {
	artifactTools   bool
	resultArtifacts bool
}

// surfaceOptions are cfg's, for an invocation with an artifact service
// (art) or without one, which gets neither artifact tools nor the
// parameters that name a saved result.
func (cfg Config) surfaceOptions(art bool) surfaceOptions {
	return surfaceOptions{artifactTools: art && !cfg.DisableArtifactTools, resultArtifacts: art && !cfg.DisableToolResultArtifacts}
}

// NotRunnableError reports a tool that code cannot call: it has no function
// declaration or cannot be run by the host (a model built-in such as Google
// Search, for example).
type NotRunnableError struct {
	Tool string
}

func (e *NotRunnableError) Error() string {
	return fmt.Sprintf("codemode: tool %q cannot be called from code: it is not a function tool", e.Tool)
}

type namespacedTool struct {
	ns string
	t  tool.Tool
}

// staticTools checks the configured bare tools once, at construction.
func staticTools(tools []tool.Tool) ([]namespacedTool, error) {
	out := make([]namespacedTool, 0, len(tools))
	for _, t := range tools {
		if t == nil {
			return nil, fmt.Errorf("codemode: nil tool in Config.Tools")
		}
		if why, ok := directOnlyReason(t); ok {
			return nil, &DirectOnlyError{Tool: t.Name(), Reason: why}
		}
		if _, ok := t.(runnableTool); !ok {
			return nil, &NotRunnableError{Tool: t.Name()}
		}
		out = append(out, namespacedTool{t: t})
	}
	return out, nil
}

// resolve builds the surface of the bare tools plus the toolsets' tools as
// they are for this invocation. A toolset that fails to list its tools is
// left out, logged, and named in the surface's unavailable, so that one
// broken toolset does not take the others with it; with strict its error
// fails the resolution instead.
func resolve(ctx agent.ReadonlyContext, bare []namespacedTool, toolsets []namedToolset, opt surfaceOptions, strict bool) (*surface, error) {
	all := append([]namespacedTool(nil), bare...)
	var unavailable []string
	for _, ts := range toolsets {
		tools, err := ts.set.Tools(ctx)
		if err != nil {
			err = fmt.Errorf("codemode: toolset %q: %w", ts.ns, err)
			if strict {
				return nil, err
			}
			slog.Error("codemode: a toolset failed to list its tools; they are left out of this model request, and it is tried again on the next",
				"namespace", ts.ns, "err", err)
			unavailable = append(unavailable, ts.ns)
			continue
		}
		for _, t := range tools {
			all = append(all, namespacedTool{ns: ts.ns, t: t})
		}
	}
	s, err := buildSurface(all, opt)
	if err != nil {
		return nil, err
	}
	s.Unavailable = unavailable
	return s, nil
}

// buildSurface builds the surface of the given tools, with the artifact
// tools at the top level ahead of them and the naming parameters added
// as opt says.
func buildSurface(all []namespacedTool, opt surfaceOptions) (*surface, error) {
	if opt.artifactTools {
		var builtins []namespacedTool
		for _, t := range artifactTools() {
			builtins = append(builtins, namespacedTool{t: t})
		}
		all = append(builtins, all...)
	}
	entries := make([]eng.SurfaceEntry[runnableTool], 0, len(all))
	for _, nt := range all {
		if why, ok := directOnlyReason(nt.t); ok {
			return nil, &DirectOnlyError{Tool: nt.t.Name(), Reason: why}
		}
		rt, ok := nt.t.(runnableTool)
		if !ok {
			return nil, &NotRunnableError{Tool: nt.t.Name()}
		}
		decl := rt.Declaration()
		if decl == nil {
			return nil, &NotRunnableError{Tool: nt.t.Name()}
		}
		_, builtin := rt.(*artifactTool)
		entries = append(entries, eng.SurfaceEntry[runnableTool]{Namespace: nt.ns, Declaration: decl, ResultKey: resultKey(rt, decl), Builtin: builtin, Tool: rt})
	}
	s, err := eng.BuildSurface(entries, opt.resultArtifacts)
	if err != nil {
		return nil, err
	}
	return &surface{Surface: s, hooks: toolHooks(all)}, nil
}
