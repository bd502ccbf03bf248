package codemode

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"google.golang.org/genai"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool"

	eng "github.com/adk-codemode/codemode/internal/host/engine"
	"github.com/adk-codemode/codemode/render"
	"github.com/adk-codemode/codemode/schema"
)

// surface is the tool surface of one invocation: the registry that renders
// the block and the stubs, and the runnable tools behind it.
type surface struct {
	reg   *render.Registry
	tools map[string]*surfaceTool // by dotted path
	files map[string][]byte       // the generated tools package
	hooks []hook                  // request processors of the tools, in order
	// unavailable are the namespaces of the toolsets left out because
	// they failed to list their tools (see resolve).
	unavailable []string
}

type surfaceTool struct {
	name      string // raw ADK name, for the host's log and callbacks
	code      string // the name code calls it by, for what code and model read (see codeName)
	tool      runnableTool
	validator *schema.Validator // nil when the schema cannot be compiled even in part (logged)

	// resultKey: the tool returns its result as {resultKey: result}
	// (see resultKey); the code gets the result itself.
	resultKey string
	// saveResult: the result is saved as a tool-result artifact.
	saveResult bool
	// popName and popDesc: artifact_name and artifact_description were
	// added to the declaration by Code Mode and are taken out of the
	// arguments before the tool sees them.
	popName, popDesc bool
}

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

// Parameters added to each tool whose result is saved as an artifact,
// and what they do, which the block says once (render.SharedParameter).
const (
	paramArtifactName        = "artifact_name"
	paramArtifactDescription = "artifact_description"
	aboutArtifactName        = "Save this call's result as an artifact of this name (.json is added) instead of with the block's other results."
	aboutArtifactDescription = "A description kept with the saved result."
)

// sharedParams are the added parameters as the block describes them.
var sharedParams = []render.SharedParameter{
	{Name: paramArtifactName, Description: aboutArtifactName},
	{Name: paramArtifactDescription, Description: aboutArtifactDescription},
}

// withNamingParams returns decl with the optional string parameters
// artifact_name and artifact_description added, unless it declares them
// already, and which of the two it added. A declaration whose parameters
// are not a JSON object schema is returned unchanged.
func withNamingParams(decl *genai.FunctionDeclaration) (*genai.FunctionDeclaration, bool, bool) {
	var src any
	switch {
	case decl.ParametersJsonSchema != nil:
		src = decl.ParametersJsonSchema
	case decl.Parameters != nil:
		src = decl.Parameters
	}
	root := map[string]any{"type": "object"}
	if src != nil {
		b, err := json.Marshal(src)
		if err != nil {
			return decl, false, false
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil || m == nil {
			return decl, false, false
		}
		root = m
	}
	props, _ := root["properties"].(map[string]any)
	if props == nil {
		if root["properties"] != nil {
			return decl, false, false
		}
		props = map[string]any{}
	}
	var addName, addDesc bool
	if _, ok := props[paramArtifactName]; !ok {
		props[paramArtifactName] = map[string]any{"type": "string", "description": aboutArtifactName}
		addName = true
	}
	if _, ok := props[paramArtifactDescription]; !ok {
		props[paramArtifactDescription] = map[string]any{"type": "string", "description": aboutArtifactDescription}
		addDesc = true
	}
	if !addName && !addDesc {
		return decl, false, false
	}
	root["properties"] = props
	if root["type"] == nil {
		root["type"] = "object"
	}
	d := *decl
	d.Parameters = nil
	d.ParametersJsonSchema = root
	return &d, addName, addDesc
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

// codeName is how texts that code and model read name a tool: as code
// calls it, not by its raw name (get_sum, not get-sum). A top-level tool is
// named as it is imported; a namespaced one by its dotted path in the tools
// package (tools.files.list_), since two namespaces may share a tool name.
func codeName(e render.Entry) string {
	if e.Package == "" {
		return e.Attr
	}
	return "tools." + e.Path
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
	s.unavailable = unavailable
	return s, nil
}

// unavailableNote is the line that tells the model which namespaces are
// missing from the tools package for now. The reason stays in the log: it
// may name hosts and paths the model has no use for.
func (s *surface) unavailableNote() string {
	if len(s.unavailable) == 0 {
		return ""
	}
	names := make([]string, len(s.unavailable))
	for i, ns := range s.unavailable {
		names[i] = "tools." + ns
	}
	return fmt.Sprintf("Unavailable for now: %s (the toolset failed to list its tools). Its tools are not in the tools package; the other tools work.",
		strings.Join(names, ", "))
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
	rtools := make([]render.Tool, 0, len(all))
	byKey := map[[2]string]runnableTool{}
	pops := map[[2]string][2]bool{}
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
		if _, builtin := rt.(*artifactTool); opt.resultArtifacts && !builtin {
			var addName, addDesc bool
			decl, addName, addDesc = withNamingParams(decl)
			pops[[2]string{nt.ns, decl.Name}] = [2]bool{addName, addDesc}
		}
		rtools = append(rtools, render.Tool{Namespace: nt.ns, Declaration: decl})
		byKey[[2]string{nt.ns, decl.Name}] = rt
	}
	var shared []render.SharedParameter
	if opt.resultArtifacts {
		shared = sharedParams
	}
	reg, err := render.NewRegistry(rtools, shared...)
	if err != nil {
		return nil, fmt.Errorf("codemode: %w", err)
	}
	s := &surface{reg: reg, tools: map[string]*surfaceTool{}, files: map[string][]byte{}, hooks: toolHooks(all)}
	for _, e := range reg.Entries() {
		key := [2]string{e.Namespace, e.Name}
		st := &surfaceTool{name: e.Name, code: codeName(e), tool: byKey[key]}
		st.resultKey = resultKey(st.tool, e.Declaration)
		if _, builtin := st.tool.(*artifactTool); !builtin && opt.resultArtifacts {
			st.saveResult = true
			st.popName, st.popDesc = pops[key][0], pops[key][1]
		}
		v, err := schema.CompileValidator(e.Declaration)
		st.validator = v
		eng.ReportValidation(e.Path, v, err)
		s.tools[e.Path] = st
	}
	for _, f := range reg.Stubs() {
		s.files[f.Path] = []byte(f.Content)
	}
	return s, nil
}

// directTools are the surface's tools that Config.Direct names, by the
// name the agent declares them with, in the order Direct gives.
func (s *surface) directTools(names []string) []*surfaceTool {
	if len(names) == 0 {
		return nil
	}
	byName := map[string]*surfaceTool{}
	for _, st := range s.tools {
		if _, builtin := st.tool.(*artifactTool); !builtin {
			byName[st.name] = st
		}
	}
	var out []*surfaceTool
	for _, n := range names {
		if st, ok := byName[n]; ok {
			out = append(out, st)
		}
	}
	return out
}

// direct are the names of the directTools, as the model calls them.
func (s *surface) direct(names []string) []string {
	var out []string
	for _, st := range s.directTools(names) {
		out = append(out, st.name)
	}
	return out
}
