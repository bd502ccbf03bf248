package codemode

import (
	"fmt"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/tool"

	"github.com/adk-codemode/codemode/render"
	"github.com/adk-codemode/codemode/schema"
)

// surface is the tool surface of one invocation: the registry that renders
// the block and the stubs, and the runnable tools behind it.
type surface struct {
	reg   *render.Registry
	tools map[string]*surfaceTool // by dotted path
	files map[string][]byte       // the generated tools package
}

type surfaceTool struct {
	name      string // raw ADK name
	tool      runnableTool
	validator *schema.Validator // nil when the schema cannot be compiled
}

// lookup resolves a name sent by the sandbox: a dotted path, else a raw
// name unique across namespaces.
func (s *surface) lookup(name string) (*surfaceTool, bool) {
	e, ok := s.reg.Lookup(name)
	if !ok {
		return nil, false
	}
	st, ok := s.tools[e.Path]
	return st, ok
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
		if _, ok := t.(runnableTool); !ok {
			return nil, &NotRunnableError{Tool: t.Name()}
		}
		out = append(out, namespacedTool{t: t})
	}
	return out, nil
}

// resolve builds the surface of the bare tools plus the toolsets' tools as
// they are for this invocation.
func resolve(ctx agent.ReadonlyContext, bare []namespacedTool, toolsets []tool.Toolset) (*surface, error) {
	all := append([]namespacedTool(nil), bare...)
	for _, ts := range toolsets {
		tools, err := ts.Tools(ctx)
		if err != nil {
			return nil, fmt.Errorf("codemode: toolset %q: %w", ts.Name(), err)
		}
		for _, t := range tools {
			all = append(all, namespacedTool{ns: ts.Name(), t: t})
		}
	}
	return buildSurface(all)
}

func buildSurface(all []namespacedTool) (*surface, error) {
	rtools := make([]render.Tool, 0, len(all))
	byKey := map[[2]string]runnableTool{}
	for _, nt := range all {
		rt, ok := nt.t.(runnableTool)
		if !ok {
			return nil, &NotRunnableError{Tool: nt.t.Name()}
		}
		decl := rt.Declaration()
		if decl == nil {
			return nil, &NotRunnableError{Tool: nt.t.Name()}
		}
		rtools = append(rtools, render.Tool{Namespace: nt.ns, Declaration: decl})
		byKey[[2]string{nt.ns, decl.Name}] = rt
	}
	reg, err := render.NewRegistry(rtools)
	if err != nil {
		return nil, fmt.Errorf("codemode: %w", err)
	}
	s := &surface{reg: reg, tools: map[string]*surfaceTool{}, files: map[string][]byte{}}
	for _, e := range reg.Entries() {
		st := &surfaceTool{name: e.Name, tool: byKey[[2]string{e.Namespace, e.Name}]}
		if v, err := schema.CompileValidator(e.Declaration); err == nil {
			st.validator = v
		}
		s.tools[e.Path] = st
	}
	for _, f := range reg.Stubs() {
		s.files[f.Path] = []byte(f.Content)
	}
	return s, nil
}
