package render

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"google.golang.org/genai"

	"github.com/adk-codemode/codemode/schema"
)

// Tool is one tool of the agent, as the renderer receives it.
type Tool struct {
	// Namespace places the tool in a toolset namespace, tools.<namespace>;
	// "" puts it at the top level of the tools package.
	Namespace string
	// Declaration is the tool's function declaration. Parameters (Gemini
	// style) and ParametersJsonSchema (JSON Schema) are both read, and so
	// are Response and ResponseJsonSchema, the schema of the tool's result.
	Declaration *genai.FunctionDeclaration
	// ResultKey, when not "", says that code receives the tool's result
	// wrapped in a dict under this key, {ResultKey: result}, as ADK's
	// mcptoolset returns every result under "output". The stub's return
	// annotation and Returns section say so.
	ResultKey string
}

// Entry is one resolved tool of a Registry.
type Entry struct {
	// Path is the dotted path of the tool within the tools package, such as
	// "slack.send_message", or "get_weather" at the top level. Generated stubs
	// pass it to codemode_runtime.call.
	Path string
	// Namespace is the namespace as given in Tool; Package is its Python
	// identifier ("" at the top level).
	Namespace string
	Package   string
	// Name is the tool's raw name, the one the host dispatches; Attr is its
	// Python identifier.
	Name string
	Attr string
	// Declaration is the tool's declaration as given.
	Declaration *genai.FunctionDeclaration
	// ResultKey is as given in Tool.
	ResultKey string
}

// Errors reported by NewRegistry.
var (
	// ErrInvalidTool reports a tool without a declaration or a name.
	ErrInvalidTool = errors.New("render: invalid tool")
)

// DuplicateToolError reports two tools with the same raw name in one
// namespace.
type DuplicateToolError struct {
	Namespace string
	Name      string
}

func (e *DuplicateToolError) Error() string {
	return fmt.Sprintf("render: tool %q is declared twice in %s", e.Name, where(e.Namespace))
}

// CollisionError reports two different names that become the same Python
// identifier: two tools, two namespaces, a namespace and a top-level tool, or
// two parameters of one tool.
type CollisionError struct {
	// Kind is "tool", "namespace" or "parameter".
	Kind string
	// Scope names where the collision happens: the namespace for tools, the
	// tool for parameters.
	Scope string
	// A and B are the colliding raw names; Identifier is what both became.
	A, B       string
	Identifier string
}

func (e *CollisionError) Error() string {
	switch e.Kind {
	case "parameter":
		return fmt.Sprintf("render: parameters %q and %q of tool %q both become the Python name %q", e.A, e.B, e.Scope, e.Identifier)
	case "namespace":
		if e.B == "" {
			return fmt.Sprintf("render: namespace %q and a top-level tool both become the Python name %q", e.A, e.Identifier)
		}
		return fmt.Sprintf("render: namespaces %q and %q both become the Python name %q", e.A, e.B, e.Identifier)
	}
	return fmt.Sprintf("render: tools %q and %q in %s both become the Python name %q", e.A, e.B, where(e.Scope), e.Identifier)
}

func where(ns string) string {
	if ns == "" {
		return "the top level"
	}
	return fmt.Sprintf("namespace %q", ns)
}

// Registry is the resolved tool surface: every tool with its Python name and
// dotted path, ready to render. It maps a dotted path, or a raw name, back
// to its declaration for the host's dispatcher.
//
// A Registry is immutable and safe for concurrent use. It caches what it
// renders, so rendering an unchanged surface again costs almost nothing.
type Registry struct {
	entries []Entry
	docs    []*schema.Document
	resps   []*schema.Document // nil when the tool declares no result schema
	params  [][]param
	byPath  map[string]int
	byName  map[string]int // -1 when the raw name is shared across namespaces

	once     sync.Once
	rendered []renderedTool

	plainOnce sync.Once
	plain     []string // each tool's one-line summary as plain text

	stubsOnce sync.Once
	stubs     []File

	catalogOnce [3]sync.Once
	catalogs    [3]catalogText

	mu     sync.Mutex
	blocks map[blockKey]string

	shared []SharedParameter
}

// A SharedParameter is a parameter with one meaning in every tool that
// declares it, such as the artifact_name the ADK plugin adds to each tool.
// The block describes it once, in its how-to-use text; each tool keeps it
// in its signature and leaves it out of its docstring's Args. A parameter
// counts as shared where its name and its schema's description are the
// SharedParameter's: a tool's own parameter of that name keeps its Args.
type SharedParameter struct {
	Name        string // the parameter's name in the declarations
	Description string // one or two sentences, shown once
}

// ErrInvalidSharedParameter reports a SharedParameter without a name or a
// description, or named twice.
var ErrInvalidSharedParameter = errors.New("render: invalid shared parameter")

// NewRegistry resolves tools into a Registry. It fails on a tool without a
// declaration or name, on a parameter or result schema that is not JSON, on duplicate
// raw names within a namespace, and on any two names that become the same
// Python identifier.
func NewRegistry(tools []Tool, shared ...SharedParameter) (*Registry, error) {
	seen := map[string]bool{}
	for _, sp := range shared {
		if strings.TrimSpace(sp.Name) == "" || strings.TrimSpace(sp.Description) == "" || seen[sp.Name] {
			return nil, fmt.Errorf("%w: %q: give each a name of its own and a description", ErrInvalidSharedParameter, sp.Name)
		}
		seen[sp.Name] = true
	}
	r := &Registry{
		shared:  slices.Clone(shared),
		byPath:  make(map[string]int, len(tools)),
		byName:  make(map[string]int, len(tools)),
		entries: make([]Entry, 0, len(tools)),
		docs:    make([]*schema.Document, 0, len(tools)),
		resps:   make([]*schema.Document, 0, len(tools)),
		params:  make([][]param, 0, len(tools)),
	}
	schemas := readSchemas(tools)
	type nsInfo struct{ raw string }
	namespaces := map[string]nsInfo{}
	attrs := make(map[[2]string]string, len(tools)) // (package, attr) -> raw name
	raws := make(map[[2]string]bool, len(tools))    // (namespace, raw name)
	for i, t := range tools {
		if t.Declaration == nil {
			return nil, fmt.Errorf("%w: tool %d has no declaration", ErrInvalidTool, i)
		}
		name := t.Declaration.Name
		if name == "" {
			return nil, fmt.Errorf("%w: tool %d has no name", ErrInvalidTool, i)
		}
		pkg := ""
		if t.Namespace != "" {
			pkg = identifier(lower(t.Namespace), "toolset")
			if prev, ok := namespaces[pkg]; ok && prev.raw != t.Namespace {
				return nil, &CollisionError{Kind: "namespace", A: prev.raw, B: t.Namespace, Identifier: pkg}
			}
			namespaces[pkg] = nsInfo{raw: t.Namespace}
		}
		if raws[[2]string{t.Namespace, name}] {
			return nil, &DuplicateToolError{Namespace: t.Namespace, Name: name}
		}
		raws[[2]string{t.Namespace, name}] = true
		attr := toolName(lower(name))
		if prev, ok := attrs[[2]string{pkg, attr}]; ok {
			return nil, &CollisionError{Kind: "tool", Scope: t.Namespace, A: prev, B: name, Identifier: attr}
		}
		attrs[[2]string{pkg, attr}] = name
		doc, params, err := schemas[i].doc, schemas[i].params, schemas[i].err
		if err != nil {
			return nil, err
		}
		path := attr
		if pkg != "" {
			path = pkg + "." + attr
		}
		r.entries = append(r.entries, Entry{Path: path, Namespace: t.Namespace, Package: pkg, Name: name, Attr: attr, Declaration: t.Declaration, ResultKey: t.ResultKey})
		r.docs = append(r.docs, doc)
		r.resps = append(r.resps, schemas[i].resp)
		r.params = append(r.params, params)
	}
	for pkg, ns := range namespaces {
		if raw, ok := attrs[[2]string{"", pkg}]; ok {
			_ = raw
			return nil, &CollisionError{Kind: "namespace", A: ns.raw, Identifier: pkg}
		}
	}
	order := make([]int, len(r.entries))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		ea, eb := r.entries[order[a]], r.entries[order[b]]
		if (ea.Package == "") != (eb.Package == "") {
			return ea.Package != ""
		}
		if ea.Package != eb.Package {
			return ea.Package < eb.Package
		}
		return ea.Attr < eb.Attr
	})
	entries := make([]Entry, len(order))
	docs := make([]*schema.Document, len(order))
	resps := make([]*schema.Document, len(order))
	params := make([][]param, len(order))
	for i, j := range order {
		entries[i], docs[i], resps[i], params[i] = r.entries[j], r.docs[j], r.resps[j], r.params[j]
	}
	r.entries, r.docs, r.resps, r.params = entries, docs, resps, params
	for i, e := range r.entries {
		r.byPath[e.Path] = i
		if _, seen := r.byName[e.Name]; seen {
			r.byName[e.Name] = -1
		} else {
			r.byName[e.Name] = i
		}
	}
	return r, nil
}

// toolSchema is a tool's decoded parameter schema and its parameters, or
// the error reading them.
type toolSchema struct {
	doc    *schema.Document
	resp   *schema.Document
	params []param
	err    error
}

// readSchemas decodes the parameter schemas of tools and lists their
// parameters, spread over the CPUs; tools without a declaration or name
// are left for NewRegistry to report.
func readSchemas(tools []Tool) []toolSchema {
	out := make([]toolSchema, len(tools))
	parallel(len(tools), func(i int) {
		decl := tools[i].Declaration
		if decl == nil || decl.Name == "" {
			return
		}
		doc, err := schema.Parameters(decl)
		if err != nil {
			out[i].err = err
			return
		}
		out[i].doc = doc
		if resp, ok, err := schema.Response(decl); err != nil {
			out[i].err = err
			return
		} else if ok {
			out[i].resp = resp
		}
		out[i].params, out[i].err = parameters(decl.Name, doc.Root())
	})
	return out
}

// parallel calls f(0), ..., f(n-1) on as many goroutines as there are CPUs
// and returns when all calls have.
func parallel(n int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				f(i)
			}
		})
	}
	wg.Wait()
}

func lower(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r >= 'A' && r <= 'Z' }) {
		return s
	}
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// Entries returns the registry's tools: namespaces in sorted order, then the
// top-level tools, each group sorted by Python name.
func (r *Registry) Entries() []Entry { return append([]Entry(nil), r.entries...) }

// Lookup resolves a name sent by a stub: first as a dotted path, then as a
// raw tool name. A raw name shared by tools in different namespaces does not
// resolve.
func (r *Registry) Lookup(name string) (Entry, bool) {
	if i, ok := r.byPath[name]; ok {
		return r.entries[i], true
	}
	if i, ok := r.byName[name]; ok && i >= 0 {
		return r.entries[i], true
	}
	return Entry{}, false
}

// Namespaces returns the Python names of the namespaces, sorted.
func (r *Registry) Namespaces() []string {
	var out []string
	for _, e := range r.entries {
		if e.Package != "" && (len(out) == 0 || out[len(out)-1] != e.Package) {
			out = append(out, e.Package)
		}
	}
	return out
}

// param is one parameter of a tool's signature.
type param struct {
	raw      string
	ident    string
	required bool
	node     schema.Node
}

// parameters lists the top-level parameters of a tool: the root properties,
// plus the properties of root-level union branches (required only when every
// branch requires them). Required parameters come first, then the rest,
// each group ordered by raw name.
func parameters(tool string, root schema.Node) ([]param, error) {
	props := root.SubMap("properties")
	required := map[string]bool{}
	for _, r := range root.Strings("required") {
		required[r] = true
	}
	if branches := unionBranches(root); len(branches) > 1 {
		all := map[string]int{}
		for _, b := range branches {
			for name, p := range b.SubMap("properties") {
				if props == nil {
					props = map[string]schema.Node{}
				}
				if _, ok := props[name]; !ok {
					props[name] = p
				}
			}
			for _, r := range b.Strings("required") {
				all[r]++
			}
		}
		for r, c := range all {
			if c == len(branches) {
				required[r] = true
			}
		}
	}
	var out []param
	for name, n := range props {
		out = append(out, param{raw: name, ident: identifier(name, "arg"), required: required[name], node: n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].required != out[j].required {
			return out[i].required
		}
		return out[i].raw < out[j].raw
	})
	seen := map[string]string{}
	for _, p := range out {
		if prev, ok := seen[p.ident]; ok {
			a, b := prev, p.raw
			if a > b {
				a, b = b, a
			}
			return nil, &CollisionError{Kind: "parameter", Scope: tool, A: a, B: b, Identifier: p.ident}
		}
		seen[p.ident] = p.raw
	}
	return out, nil
}
