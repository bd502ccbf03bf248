package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"

	"google.golang.org/genai"

	"github.com/adk-codemode/codemode/render"
	"github.com/adk-codemode/codemode/schema"
)

// Surface is the tool surface of one invocation: the registry that renders
// the <code-mode> block and the stubs, the generated tools package, and
// the adapter's tools (of type T) behind them.
type Surface[T any] struct {
	Reg   *render.Registry
	Tools map[string]*SurfaceTool[T] // by dotted path
	Files map[string][]byte          // the generated tools package
	// Unavailable are the namespaces of the toolsets left out because
	// they failed to list their tools.
	Unavailable []string
}

// SurfaceTool is one tool of a Surface.
type SurfaceTool[T any] struct {
	Name      string // raw name, for the host's log and callbacks
	Code      string // the name code calls it by, for what code and model read (see codeName)
	Tool      T
	Builtin   bool              // one of Code Mode's own artifact tools
	Validator *schema.Validator // nil when the schema cannot be compiled even in part (logged)

	// ResultKey: the tool returns its result as {ResultKey: result}; the
	// code gets the result itself.
	ResultKey string
	// SaveResult: the result is saved as a tool-result artifact.
	SaveResult bool
	// popName and popDesc: artifact_name and artifact_description were
	// added to the declaration by Code Mode and are taken out of the
	// arguments before the tool sees them.
	popName, popDesc bool
}

// SurfaceEntry is a tool as an adapter hands it to [BuildSurface].
type SurfaceEntry[T any] struct {
	Namespace   string // "" for the top level
	Declaration *genai.FunctionDeclaration
	ResultKey   string // see SurfaceTool.ResultKey
	Builtin     bool   // one of Code Mode's own artifact tools, whose results are never saved
	Tool        T
}

// Parameters added to each tool whose result is saved as an artifact,
// and what they do, which the block says once (render.SharedParameter).
const (
	ParamArtifactName        = "artifact_name"
	ParamArtifactDescription = "artifact_description"
	aboutArtifactName        = "Save this call's result as an artifact of this name (.json is added) instead of with the block's other results."
	aboutArtifactDescription = "A description kept with the saved result."
)

// sharedParams are the added parameters as the block describes them.
var sharedParams = []render.SharedParameter{
	{Name: ParamArtifactName, Description: aboutArtifactName},
	{Name: ParamArtifactDescription, Description: aboutArtifactDescription},
}

// BuildSurface builds the surface of tools, in their order. With
// resultArtifacts, each tool but the builtins saves its results as
// artifacts and gets the parameters that name them.
func BuildSurface[T any](tools []SurfaceEntry[T], resultArtifacts bool) (*Surface[T], error) {
	rtools := make([]render.Tool, 0, len(tools))
	byKey := map[[2]string]SurfaceEntry[T]{}
	pops := map[[2]string][2]bool{}
	for _, t := range tools {
		decl := t.Declaration
		if resultArtifacts && !t.Builtin {
			var addName, addDesc bool
			decl, addName, addDesc = WithNamingParams(decl)
			pops[[2]string{t.Namespace, decl.Name}] = [2]bool{addName, addDesc}
		}
		rtools = append(rtools, render.Tool{Namespace: t.Namespace, Declaration: decl})
		byKey[[2]string{t.Namespace, decl.Name}] = t
	}
	var shared []render.SharedParameter
	if resultArtifacts {
		shared = sharedParams
	}
	reg, err := render.NewRegistry(rtools, shared...)
	if err != nil {
		return nil, fmt.Errorf("codemode: %w", err)
	}
	s := &Surface[T]{Reg: reg, Tools: map[string]*SurfaceTool[T]{}, Files: map[string][]byte{}}
	for _, e := range reg.Entries() {
		key := [2]string{e.Namespace, e.Name}
		t := byKey[key]
		st := &SurfaceTool[T]{Name: e.Name, Code: codeName(e), Tool: t.Tool, Builtin: t.Builtin, ResultKey: t.ResultKey}
		if !t.Builtin && resultArtifacts {
			st.SaveResult = true
			st.popName, st.popDesc = pops[key][0], pops[key][1]
		}
		v, err := schema.CompileValidator(e.Declaration)
		st.Validator = v
		ReportValidation(e.Path, v, err)
		s.Tools[e.Path] = st
	}
	for _, f := range reg.Stubs() {
		s.Files[f.Path] = []byte(f.Content)
	}
	return s, nil
}

// WithNamingParams returns decl with the optional string parameters
// artifact_name and artifact_description added, unless it declares them
// already, and which of the two it added. A declaration whose parameters
// are not a JSON object schema is returned unchanged.
func WithNamingParams(decl *genai.FunctionDeclaration) (*genai.FunctionDeclaration, bool, bool) {
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
	if _, ok := props[ParamArtifactName]; !ok {
		props[ParamArtifactName] = map[string]any{"type": "string", "description": aboutArtifactName}
		addName = true
	}
	if _, ok := props[ParamArtifactDescription]; !ok {
		props[ParamArtifactDescription] = map[string]any{"type": "string", "description": aboutArtifactDescription}
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

// Lookup resolves a name sent by the sandbox: a dotted path, else a raw
// name unique across namespaces.
func (s *Surface[T]) Lookup(name string) (*SurfaceTool[T], bool) {
	e, ok := s.Reg.Lookup(name)
	if !ok {
		return nil, false
	}
	st, ok := s.Tools[e.Path]
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

// UnavailableNote is the line that tells the model which namespaces are
// missing from the tools package for now. The reason stays in the log: it
// may name hosts and paths the model has no use for.
func (s *Surface[T]) UnavailableNote() string {
	if len(s.Unavailable) == 0 {
		return ""
	}
	names := make([]string, len(s.Unavailable))
	for i, ns := range s.Unavailable {
		names[i] = "tools." + ns
	}
	return fmt.Sprintf("Unavailable for now: %s (the toolset failed to list its tools). Its tools are not in the tools package; the other tools work.",
		strings.Join(names, ", "))
}

// DirectTools are the surface's tools that names (Config.Direct) name, by
// their raw names, in the order names gives; the builtins are never
// direct.
func (s *Surface[T]) DirectTools(names []string) []*SurfaceTool[T] {
	if len(names) == 0 {
		return nil
	}
	byName := map[string]*SurfaceTool[T]{}
	for _, st := range s.Tools {
		if !st.Builtin {
			byName[st.Name] = st
		}
	}
	var out []*SurfaceTool[T]
	for _, n := range names {
		if st, ok := byName[n]; ok {
			out = append(out, st)
		}
	}
	return out
}

// Direct are the raw names of the DirectTools, as the model calls them.
func (s *Surface[T]) Direct(names []string) []string {
	var out []string
	for _, st := range s.DirectTools(names) {
		out = append(out, st.Name)
	}
	return out
}

// ResultNaming holds the artifact_name and artifact_description arguments
// of one tool call.
type ResultNaming struct {
	Name, Description string
}

// PrepareArgs validates a call's arguments and takes out the ones that
// name its saved result.
func (st *SurfaceTool[T]) PrepareArgs(args map[string]any) (map[string]any, ResultNaming, error) {
	var naming ResultNaming
	if args == nil {
		args = map[string]any{}
	}
	if st.Validator != nil {
		if err := st.Validator.Validate(args); err != nil {
			var ve *schema.ValidationError
			if errors.As(err, &ve) {
				ve.Tool = st.Code
			}
			return nil, naming, err
		}
	}
	if !st.popName && !st.popDesc {
		return args, naming, nil
	}
	args = maps.Clone(args)
	if st.popName {
		naming.Name, _ = args[ParamArtifactName].(string)
		delete(args, ParamArtifactName)
	}
	if st.popDesc {
		naming.Description, _ = args[ParamArtifactDescription].(string)
		delete(args, ParamArtifactDescription)
	}
	return args, naming, nil
}
