package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/genai"
)

// Limits that keep the walk finite and its output bounded on any input.
const (
	// MaxDepth is the deepest schema position a Node can reach. Deeper
	// positions read as the empty schema.
	MaxDepth = 64
	// maxRefChain caps the $ref and allOf expansions behind one position.
	maxRefChain = 32
	// maxExpansions caps the schema objects merged into one position.
	maxExpansions = 256
	// maxIndexNodes caps the positions visited while indexing anchors.
	maxIndexNodes = 10000
)

// ErrNotJSON reports a declaration value that cannot be turned into JSON.
var ErrNotJSON = errors.New("schema: value is not JSON")

// Document is one declaration's parameter schema, decoded into plain JSON
// values: map[string]any, []any, string, bool, nil and json.Number. The
// walker reads it without decoding into a typed struct, so no keyword is
// hidden from it.
//
// A Document is immutable and safe for concurrent use.
type Document struct {
	root    any
	idxOnce sync.Once
	idx     *anchorIndex

	// memo caches the expansion of each raw schema object, keyed by the
	// object's identity; expansion depends only on the object.
	mu   sync.Mutex
	memo map[uintptr]expansion
}

type expansion struct {
	kw         map[string]any
	never      bool
	unresolved []string
}

// Decode turns any form a schema arrives in into a Document: a
// *genai.Schema, a google/jsonschema-go *jsonschema.Schema, an MCP input
// schema (map[string]any), json.RawMessage or []byte holding JSON text, or
// any other value that encoding/json can marshal. A nil value gives the empty
// schema.
func Decode(v any) (*Document, error) {
	root, err := toJSON(v)
	if err != nil {
		return nil, err
	}
	return &Document{root: root}, nil
}

// Parameters returns the parameter schema of decl. ParametersJsonSchema wins
// when both it and Parameters are set; with neither the tool takes no
// arguments.
func Parameters(decl *genai.FunctionDeclaration) (*Document, error) {
	if decl == nil {
		return Decode(nil)
	}
	if decl.ParametersJsonSchema != nil {
		d, err := Decode(decl.ParametersJsonSchema)
		if err != nil {
			return nil, fmt.Errorf("schema: parametersJsonSchema of %q: %w", decl.Name, err)
		}
		return d, nil
	}
	if decl.Parameters != nil {
		d, err := Decode(decl.Parameters)
		if err != nil {
			return nil, fmt.Errorf("schema: parameters of %q: %w", decl.Name, err)
		}
		return d, nil
	}
	return Decode(nil)
}

func toJSON(v any) (any, error) {
	if out, ok := plainJSON(v, 0); ok {
		return out, nil
	}
	var data []byte
	switch t := v.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		data = t
	case []byte:
		data = t
	default:
		var err error
		data, err = json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrNotJSON, err)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotJSON, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: trailing data after the schema", ErrNotJSON)
	}
	return out, nil
}

// plainJSON copies a value that already consists of decoded JSON
// (map[string]any, []any, strings, booleans, numbers, nil), turning numbers
// into json.Number as encoding/json would print them. It reports false for
// anything else, which then takes the slower marshal round trip.
func plainJSON(v any, depth int) (any, bool) {
	if depth > 10000 {
		return nil, false
	}
	switch t := v.(type) {
	case nil, string, bool, json.Number:
		return t, true
	case float64:
		if math.IsInf(t, 0) || math.IsNaN(t) {
			return nil, false
		}
		b, err := json.Marshal(t)
		if err != nil {
			return nil, false
		}
		return json.Number(b), true
	case int:
		return json.Number(strconv.Itoa(t)), true
	case int64:
		return json.Number(strconv.FormatInt(t, 10)), true
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			c, ok := plainJSON(e, depth+1)
			if !ok {
				return nil, false
			}
			out[k] = c
		}
		return out, true
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			c, ok := plainJSON(e, depth+1)
			if !ok {
				return nil, false
			}
			out[i] = c
		}
		return out, true
	}
	return nil, false
}

// Raw returns the decoded JSON value of the whole document. Callers must not
// modify it.
func (d *Document) Raw() any { return d.root }

// Root returns the effective top-level schema.
func (d *Document) Root() Node { return d.node(d.root, 0) }

// Node is one schema position after normalisation: Gemini aliases renamed,
// null values dropped, types lower-cased, $ref and $dynamicRef resolved,
// allOf merged and single-branch anyOf/oneOf folded into the parent.
//
// The zero Node is the empty schema, which accepts anything.
type Node struct {
	doc *Document
	kw  map[string]any
	// never is set for the boolean schema false.
	never bool
	depth int
	// unresolved lists references that could not be followed.
	unresolved []string
	// truncated is set when the position lies beyond MaxDepth.
	truncated bool
}

// Depth returns how many schema positions lie between the root and n.
func (n Node) Depth() int { return n.depth }

// Never reports whether n is the boolean schema false.
func (n Node) Never() bool { return n.never }

// Truncated reports whether n lies beyond MaxDepth and was read as empty.
func (n Node) Truncated() bool { return n.truncated }

// Unresolved returns the references behind n that could not be followed,
// because their target is missing or because they form a cycle.
func (n Node) Unresolved() []string { return n.unresolved }

// Empty reports whether n has no keywords at all.
func (n Node) Empty() bool { return len(n.kw) == 0 && !n.never }

// Has reports whether keyword k is present.
func (n Node) Has(k string) bool { _, ok := n.kw[k]; return ok }

// Get returns the value of keyword k.
func (n Node) Get(k string) (any, bool) { v, ok := n.kw[k]; return v, ok }

// Keys returns the keywords present, in no particular order.
func (n Node) Keys() []string {
	out := make([]string, 0, len(n.kw))
	for k := range n.kw {
		out = append(out, k)
	}
	return out
}

// String returns keyword k when it holds a string.
func (n Node) String(k string) string {
	s, _ := n.kw[k].(string)
	return s
}

// Bool reports whether keyword k is literally true.
func (n Node) Bool(k string) bool {
	b, _ := n.kw[k].(bool)
	return b
}

// Types returns the lower-cased "type" keyword as a list.
func (n Node) Types() []string {
	switch t := n.kw["type"].(type) {
	case string:
		return []string{t}
	case []any:
		out := make([]string, 0, len(t))
		for _, e := range t {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// Strings returns keyword k when it holds an array, keeping its strings.
func (n Node) Strings(k string) []string {
	arr, _ := n.kw[k].([]any)
	out := make([]string, 0, len(arr))
	for _, e := range arr {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// Sub returns the schema held by keyword k (items, not, if, contains, ...).
func (n Node) Sub(k string) (Node, bool) {
	v, ok := n.kw[k]
	if !ok || !isSchema(v) {
		return Node{}, false
	}
	return n.doc.node(v, n.depth+1), true
}

// SubList returns the schemas held by an array keyword (anyOf, oneOf,
// prefixItems).
func (n Node) SubList(k string) []Node {
	arr, _ := n.kw[k].([]any)
	out := make([]Node, 0, len(arr))
	for _, v := range arr {
		out = append(out, n.doc.node(v, n.depth+1))
	}
	return out
}

// SubMap returns the schemas held by an object keyword (properties,
// patternProperties, dependentSchemas), keyed like the keyword.
func (n Node) SubMap(k string) map[string]Node {
	m, _ := n.kw[k].(map[string]any)
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]Node, len(m))
	for name, v := range m {
		out[name] = n.doc.node(v, n.depth+1)
	}
	return out
}

func isSchema(v any) bool {
	switch v.(type) {
	case map[string]any, bool:
		return true
	}
	return false
}

// node builds the effective schema for the raw value v.
func (d *Document) node(v any, depth int) Node {
	if d == nil {
		return Node{}
	}
	if depth > MaxDepth {
		return Node{doc: d, depth: depth, truncated: true}
	}
	var key uintptr
	if m, ok := v.(map[string]any); ok {
		key = reflect.ValueOf(m).Pointer()
		d.mu.Lock()
		x, hit := d.memo[key]
		d.mu.Unlock()
		if hit {
			return Node{doc: d, kw: x.kw, never: x.never, depth: depth, unresolved: x.unresolved}
		}
	}
	e := expander{doc: d, seen: map[string]bool{}}
	kw, never := e.expand(v)
	if key != 0 {
		d.mu.Lock()
		if d.memo == nil {
			d.memo = map[uintptr]expansion{}
		}
		d.memo[key] = expansion{kw: kw, never: never, unresolved: e.unresolved}
		d.mu.Unlock()
	}
	return Node{doc: d, kw: kw, never: never, depth: depth, unresolved: e.unresolved}
}

// expander computes one effective schema. seen holds the references being
// expanded, which stops cycles; steps caps the total work.
type expander struct {
	doc        *Document
	seen       map[string]bool
	steps      int
	unresolved []string
}

func (e *expander) expand(v any) (map[string]any, bool) {
	switch t := v.(type) {
	case bool:
		if !t {
			return nil, true
		}
		return nil, false
	case map[string]any:
		return e.expandObject(t), false
	}
	return nil, false
}

func (e *expander) expandObject(raw map[string]any) map[string]any {
	kw := normalise(raw)
	e.steps++
	if e.steps > maxExpansions || len(e.seen) >= maxRefChain {
		delete(kw, "$ref")
		delete(kw, "$dynamicRef")
		delete(kw, "allOf")
		return kw
	}
	for _, key := range []string{"$ref", "$dynamicRef"} {
		ref, ok := kw[key].(string)
		if !ok {
			continue
		}
		delete(kw, key)
		if e.seen[ref] {
			e.unresolved = append(e.unresolved, ref)
			continue
		}
		target, found := e.doc.resolve(ref, key == "$dynamicRef")
		if !found {
			e.unresolved = append(e.unresolved, ref)
			continue
		}
		e.seen[ref] = true
		base, never := e.expand(target)
		delete(e.seen, ref)
		if never {
			kw["not"] = true
			continue
		}
		kw = merge(base, kw)
	}
	if parts, ok := kw["allOf"].([]any); ok {
		delete(kw, "allOf")
		var acc map[string]any
		for _, p := range parts {
			base, never := e.expand(p)
			if never {
				kw["not"] = true
				continue
			}
			acc = merge(acc, base)
		}
		kw = merge(acc, kw)
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		if parts, ok := kw[key].([]any); ok && len(parts) == 1 && isSchema(parts[0]) {
			delete(kw, key)
			base, never := e.expand(parts[0])
			if never {
				kw["not"] = true
				continue
			}
			kw = merge(base, kw)
		}
	}
	return kw
}

// merge returns base overlaid with top: top's keys win, except that
// properties accumulate (a property in both becomes the allOf of the two) and
// required is the union.
func merge(base, top map[string]any) map[string]any {
	if base == nil {
		return top
	}
	out := make(map[string]any, len(base)+len(top))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range top {
		switch k {
		case "properties":
			bp, _ := out[k].(map[string]any)
			tp, _ := v.(map[string]any)
			if bp == nil || tp == nil {
				out[k] = v
				continue
			}
			props := make(map[string]any, len(bp)+len(tp))
			for name, s := range bp {
				props[name] = s
			}
			for name, s := range tp {
				if prev, ok := props[name]; ok {
					props[name] = map[string]any{"allOf": []any{prev, s}}
				} else {
					props[name] = s
				}
			}
			out[k] = props
		case "required":
			br, _ := out[k].([]any)
			tr, _ := v.([]any)
			seen := map[any]bool{}
			var req []any
			for _, r := range append(append([]any(nil), br...), tr...) {
				if s, ok := r.(string); ok && !seen[s] {
					seen[s] = true
					req = append(req, s)
				}
			}
			out[k] = req
		default:
			out[k] = v
		}
	}
	return out
}

// normalise copies one schema object, renaming Gemini aliases, dropping
// nulls, lower-casing the type and rewriting the OpenAPI 3.0 boolean
// exclusiveMinimum/exclusiveMaximum to the 2020-12 numeric form.
func normalise(raw map[string]any) map[string]any {
	kw := make(map[string]any, len(raw))
	for k, v := range raw {
		if v == nil {
			continue
		}
		if a, ok := aliases[k]; ok {
			if _, dup := raw[a]; dup {
				continue
			}
			k = a
		}
		kw[k] = v
	}
	switch t := kw["type"].(type) {
	case string:
		if lt := lowerType(t); lt != "" {
			kw["type"] = lt
		} else {
			delete(kw, "type")
		}
	case []any:
		var ts []any
		for _, e := range t {
			if s, ok := e.(string); ok {
				if lt := lowerType(s); lt != "" {
					ts = append(ts, lt)
				}
			}
		}
		if len(ts) == 0 {
			delete(kw, "type")
		} else {
			kw["type"] = ts
		}
	default:
		delete(kw, "type")
	}
	for _, p := range [][2]string{{"exclusiveMinimum", "minimum"}, {"exclusiveMaximum", "maximum"}} {
		if b, ok := kw[p[0]].(bool); ok {
			delete(kw, p[0])
			if bound, has := kw[p[1]]; b && has {
				kw[p[0]] = bound
				delete(kw, p[1])
			}
		}
	}
	return kw
}

func lowerType(s string) string {
	s = strings.ToLower(s)
	if s == "type_unspecified" || s == "" {
		return ""
	}
	return s
}

// resolve finds the target of a reference within the document.
func (d *Document) resolve(ref string, dynamic bool) (any, bool) {
	base, frag, hasFrag := strings.Cut(ref, "#")
	if base != "" {
		target, ok := d.index().ids[base]
		if !ok {
			return nil, false
		}
		if !hasFrag || frag == "" {
			return target, true
		}
		return lookupFragment(target, frag, d, dynamic)
	}
	return lookupFragment(d.root, frag, d, dynamic)
}

func lookupFragment(root any, frag string, d *Document, dynamic bool) (any, bool) {
	if frag == "" {
		return root, true
	}
	if !strings.HasPrefix(frag, "/") {
		idx := d.index()
		if dynamic {
			if t, ok := idx.dynamic[frag]; ok {
				return t, true
			}
		}
		if t, ok := idx.anchors[frag]; ok {
			return t, true
		}
		if t, ok := idx.dynamic[frag]; ok {
			return t, true
		}
		return nil, false
	}
	if u, err := url.PathUnescape(frag); err == nil {
		frag = u
	}
	cur := root
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			next, ok := c[tok]
			if !ok {
				return nil, false
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// anchorIndex maps $id, $anchor and $dynamicAnchor values to their schemas.
type anchorIndex struct {
	ids     map[string]any
	anchors map[string]any
	dynamic map[string]any
}

func (d *Document) index() *anchorIndex {
	d.idxOnce.Do(d.buildIndex)
	return d.idx
}

func (d *Document) buildIndex() {
	idx := &anchorIndex{ids: map[string]any{}, anchors: map[string]any{}, dynamic: map[string]any{}}
	budget := maxIndexNodes
	var walk func(v any, depth int)
	walk = func(v any, depth int) {
		if budget <= 0 || depth > MaxDepth {
			return
		}
		budget--
		switch t := v.(type) {
		case map[string]any:
			if s, ok := t["$id"].(string); ok {
				if _, dup := idx.ids[s]; !dup {
					idx.ids[s] = t
				}
			}
			if s, ok := t["$anchor"].(string); ok {
				if _, dup := idx.anchors[s]; !dup {
					idx.anchors[s] = t
				}
			}
			if s, ok := t["$dynamicAnchor"].(string); ok {
				if _, dup := idx.dynamic[s]; !dup {
					idx.dynamic[s] = t
				}
			}
			for _, k := range sortedKeys(t) {
				walk(t[k], depth+1)
			}
		case []any:
			for _, e := range t {
				walk(e, depth+1)
			}
		}
	}
	walk(d.root, 0)
	d.idx = idx
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
