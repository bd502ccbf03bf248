package openapi

import (
	"encoding/json"
	"math"
	"math/big"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"

	yaml "github.com/pb33f/go-yaml"
	"github.com/pb33f/libopenapi/index"
)

// The schemas of a document become plain JSON values (map[string]any,
// []any, string, bool, json.Number, nil), read from the parsed YAML nodes
// so that no keyword is lost to a typed model. Every $ref is resolved
// through the document's index (within the document or into a relative
// file) and rewritten to "#/$defs/<name>"; each tool's parameter schema
// carries the $defs it reaches. A cycle stays a cycle of $refs, which the
// schema package renders to its nesting cap.

// defsPrefix is where rewritten references point.
const defsPrefix = "#/$defs/"

// def is one referenced schema, converted once per document and shared by
// every tool that reaches it.
type def struct {
	name  string
	value any
	deps  []*def // the defs value refers to directly
}

// converter turns schema nodes into JSON values for one document.
type converter struct {
	is30  bool             // OpenAPI 3.0: siblings of $ref are ignored
	root  *index.SpecIndex // the root document's index
	defs  map[string]*def  // by reference
	named map[string]*def  // by name
	names map[string]bool
	// values caches converted data nodes (not schemas), so that YAML
	// aliases are converted once.
	values map[*yaml.Node]any
}

func newConverter(is30 bool, root *index.SpecIndex) *converter {
	return &converter{is30: is30, root: root, defs: map[string]*def{}, named: map[string]*def{}, names: map[string]bool{}, values: map[*yaml.Node]any{}}
}

// dataKeywords hold instance data, never schemas, so a "$ref" inside them
// is data too.
var dataKeywords = map[string]bool{
	"enum": true, "const": true, "default": true, "example": true, "examples": true,
}

// schema converts the schema at node (read through idx, reported at ptr)
// and returns it with the defs it refers to directly.
func (c *converter) schema(node *yaml.Node, idx *index.SpecIndex, ptr string) (any, []*def, error) {
	var deps []*def
	v, err := c.walk(node, idx, ptr, &deps, false, 0)
	return v, deps, err
}

// maxSchemaDepth bounds the nesting of one schema's nodes.
const maxSchemaDepth = 256

// schemaMaps are the keywords whose value maps names to schemas.
var schemaMaps = map[string]bool{
	"properties": true, "patternProperties": true, "$defs": true, "definitions": true, "dependentSchemas": true,
}

// unwrap returns the node that n stands for: a document's content or an
// alias's target; nil for an empty document.
func unwrap(n *yaml.Node) *yaml.Node {
	for n != nil && (n.Kind == yaml.DocumentNode || n.Kind == yaml.AliasNode) {
		if n.Kind == yaml.DocumentNode {
			if len(n.Content) == 0 {
				return nil
			}
			n = n.Content[0]
		} else {
			n = n.Alias
		}
	}
	return n
}

// walk converts a schema, or with names set a map of names to schemas.
func (c *converter) walk(n *yaml.Node, idx *index.SpecIndex, ptr string, deps *[]*def, names bool, depth int) (any, error) {
	if depth > maxSchemaDepth {
		return nil, docErrorf(ptr, "the schema nests deeper than %d levels", maxSchemaDepth)
	}
	n = unwrap(n)
	if n == nil {
		return nil, nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		if ref, ok := refOf(n); ok && !names {
			return c.refSchema(n, ref, idx, ptr, deps, depth)
		}
		out := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			vn := n.Content[i+1]
			var v any
			var err error
			switch {
			case names:
				v, err = c.walk(vn, idx, child(ptr, k), deps, false, depth+1)
			case dataKeywords[k] || strings.HasPrefix(k, "x-"):
				v, err = c.data(vn, child(ptr, k), 0)
			case k == "discriminator":
				v, err = c.discriminator(vn, idx, child(ptr, k), deps)
			default:
				v, err = c.walk(vn, idx, child(ptr, k), deps, schemaMaps[k], depth+1)
			}
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	case yaml.SequenceNode:
		out := make([]any, len(n.Content))
		for i, e := range n.Content {
			v, err := c.walk(e, idx, child(ptr, strconv.Itoa(i)), deps, false, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	}
	return scalar(n, ptr)
}

// refOf returns the target of a {"$ref": "..."} mapping.
func refOf(n *yaml.Node) (string, bool) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "$ref" && n.Content[i+1].Kind == yaml.ScalarNode {
			return n.Content[i+1].Value, true
		}
	}
	return "", false
}

func (c *converter) refSchema(n *yaml.Node, ref string, idx *index.SpecIndex, ptr string, deps *[]*def, depth int) (any, error) {
	d, err := c.resolve(ref, idx, child(ptr, "$ref"))
	if err != nil {
		return nil, err
	}
	*deps = append(*deps, d)
	out := map[string]any{"$ref": defsPrefix + d.name}
	if c.is30 {
		// OpenAPI 3.0: "This object cannot be extended with additional
		// properties and any properties added SHALL be ignored."
		return out, nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i].Value
		if k == "$ref" {
			continue
		}
		var v any
		if dataKeywords[k] || strings.HasPrefix(k, "x-") {
			v, err = c.data(n.Content[i+1], child(ptr, k), 0)
		} else {
			v, err = c.walk(n.Content[i+1], idx, child(ptr, k), deps, schemaMaps[k], depth+1)
		}
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

// resolve returns the def for ref, converting its target the first time.
func (c *converter) resolve(ref string, idx *index.SpecIndex, ptr string) (*def, error) {
	if idx == nil {
		return nil, docErrorf(ptr, "$ref %q cannot be resolved: the document has no index", ref)
	}
	r, ridx := c.search(ref, idx)
	if r == nil || r.Node == nil {
		return nil, &DocumentError{Pointer: ptr, Problem: unresolved(ref, true)}
	}
	if ridx == nil {
		ridx = idx
	}
	key := r.FullDefinition
	if key == "" {
		key = ref
	}
	if d, ok := c.defs[key]; ok {
		return d, nil
	}
	d := &def{name: c.defName(key)}
	c.defs[key] = d
	c.named[d.name] = d
	v, deps, err := c.schema(r.Node, ridx, ptr)
	if err != nil {
		delete(c.defs, key)
		delete(c.named, d.name)
		return nil, err
	}
	d.value, d.deps = v, deps
	return d, nil
}

// defName picks a unique $defs key for the reference key: its last pointer
// segment, suffixed on a clash.
func (c *converter) defName(key string) string {
	base := key
	if i := strings.LastIndexAny(base, "/#"); i >= 0 && i+1 < len(base) {
		base = base[i+1:]
	}
	base = strings.NewReplacer("~1", "_", "~0", "_").Replace(base)
	base = strings.Map(func(r rune) rune {
		if r == '/' || r == '#' || r == '~' || r == '%' {
			return '_'
		}
		return r
	}, base)
	if base == "" {
		base = "schema"
	}
	name := base
	for i := 2; c.names[name]; i++ {
		name = base + "_" + strconv.Itoa(i)
	}
	c.names[name] = true
	return name
}

// discriminator converts an OpenAPI discriminator, rewriting the mapping
// values that are references.
func (c *converter) discriminator(n *yaml.Node, idx *index.SpecIndex, ptr string, deps *[]*def) (any, error) {
	v, err := c.data(n, ptr, 0)
	if err != nil {
		return nil, err
	}
	m, _ := v.(map[string]any)
	mapping, _ := m["mapping"].(map[string]any)
	if len(mapping) == 0 {
		return v, nil
	}
	out := make(map[string]any, len(m))
	for k, e := range m {
		out[k] = e
	}
	rewritten := make(map[string]any, len(mapping))
	for k, e := range mapping {
		s, _ := e.(string)
		if !strings.Contains(s, "#") && !strings.Contains(s, "/") {
			rewritten[k] = e // a bare schema name
			continue
		}
		d, err := c.resolve(s, idx, child(ptr, "mapping", k))
		if err != nil {
			return nil, err
		}
		*deps = append(*deps, d)
		rewritten[k] = defsPrefix + d.name
	}
	out["mapping"] = rewritten
	return out, nil
}

// data converts instance data: no reference is followed.
func (c *converter) data(n *yaml.Node, ptr string, depth int) (any, error) {
	if depth > maxSchemaDepth {
		return nil, docErrorf(ptr, "the value nests deeper than %d levels", maxSchemaDepth)
	}
	n = unwrap(n)
	if n == nil {
		return nil, nil
	}
	if v, ok := c.values[n]; ok {
		return v, nil
	}
	var out any
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			v, err := c.data(n.Content[i+1], child(ptr, k), depth+1)
			if err != nil {
				return nil, err
			}
			m[k] = v
		}
		out = m
	case yaml.SequenceNode:
		s := make([]any, len(n.Content))
		for i, e := range n.Content {
			v, err := c.data(e, child(ptr, strconv.Itoa(i)), depth+1)
			if err != nil {
				return nil, err
			}
			s[i] = v
		}
		out = s
	default:
		v, err := scalar(n, ptr)
		if err != nil {
			return nil, err
		}
		out = v
	}
	if n.Kind != yaml.ScalarNode {
		c.values[n] = out
	}
	return out, nil
}

// scalar converts a YAML scalar to its JSON value.
func scalar(n *yaml.Node, ptr string) (any, error) {
	switch n.ShortTag() {
	case "!!null":
		return nil, nil
	case "!!bool":
		b, err := strconv.ParseBool(n.Value)
		if err != nil {
			return n.Value, nil
		}
		return b, nil
	case "!!int":
		s := strings.ReplaceAll(n.Value, "_", "")
		if i, ok := new(big.Int).SetString(s, 0); ok {
			return json.Number(i.String()), nil
		}
		return n.Value, nil
	case "!!float":
		if json.Valid([]byte(n.Value)) {
			return json.Number(n.Value), nil
		}
		f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
		if err != nil {
			return n.Value, nil
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, docErrorf(ptr, "the number %s has no JSON form", n.Value)
		}
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
	}
	return n.Value, nil
}

// closure returns the $defs reached from deps.
func closure(deps []*def) map[string]any {
	if len(deps) == 0 {
		return nil
	}
	out := map[string]any{}
	stack := append([]*def(nil), deps...)
	for len(stack) > 0 {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if _, ok := out[d.name]; ok {
			continue
		}
		out[d.name] = d.value
		stack = append(stack, d.deps...)
	}
	return out
}

// compactJSON renders v as compact JSON, or "" if it cannot.
func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// search looks ref up from the index of the file it occurs in, then, made
// absolute against that file's location, from the root index too (the
// library finds a relative reference of a fetched file only that way).
func (c *converter) search(ref string, idx *index.SpecIndex) (*index.Reference, *index.SpecIndex) {
	if r, ridx := idx.SearchIndexForReference(ref); r != nil {
		return r, ridx
	}
	abs := absolute(ref, idx.GetSpecAbsolutePath())
	if abs == ref {
		return nil, nil
	}
	for _, x := range []*index.SpecIndex{idx, c.root} {
		if x == nil {
			continue
		}
		if r, ridx := x.SearchIndexForReference(abs); r != nil {
			return r, ridx
		}
	}
	return nil, nil
}

// absolute resolves the file part of ref against base, a URL or a path.
func absolute(ref, base string) string {
	file, frag, _ := strings.Cut(ref, "#")
	if file == "" || base == "" {
		return ref
	}
	if bu, err := url.Parse(base); err == nil && (bu.Scheme == "http" || bu.Scheme == "https") {
		fu, err := url.Parse(file)
		if err != nil {
			return ref
		}
		return bu.ResolveReference(fu).String() + "#" + frag
	}
	if filepath.IsAbs(file) {
		return ref
	}
	return filepath.Join(filepath.Dir(base), file) + "#" + frag
}
