package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"math"
	"net/url"
	"reflect"
	"slices"
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
	memo map[uintptr]*expansion
}

// expansion is the effective schema of one raw schema value. It is shared by
// every Node standing on that value and never changes once built, except
// for its cache of child expansions, which mu guards.
type expansion struct {
	kw         map[string]any
	never      bool
	unresolved []string

	mu       sync.Mutex
	children []*children
}

// childKey names a cache entry of child expansions: a keyword, read as one
// schema (Sub), a list (SubList) or a map (SubMap, SubSorted).
type childKey struct {
	keyword string
	kind    childKind
}

type childKind uint8

const (
	oneChild childKind = iota
	listChildren
	mapChildren
)

// children caches the expansions of the schemas held by one keyword: the
// value of a schema keyword (one element), of an array keyword (in order),
// or of an object keyword (sorted by name, with names parallel).
type children struct {
	key   childKey
	names []string
	subs  []*expansion
}

// Shared expansions of values that are not schema objects.
var (
	emptyExpansion = &expansion{}
	neverExpansion = &expansion{never: true}
)

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

// Response returns the document of decl's declared result schema:
// ResponseJsonSchema (JSON Schema, as ADK's functiontool and mcptoolset set
// it) wins over Response (genai.Schema). ok is false when decl declares
// neither.
func Response(decl *genai.FunctionDeclaration) (doc *Document, ok bool, err error) {
	if decl == nil {
		return nil, false, nil
	}
	var v any
	switch {
	case decl.ResponseJsonSchema != nil:
		v = decl.ResponseJsonSchema
	case decl.Response != nil:
		v = decl.Response
	default:
		return nil, false, nil
	}
	d, err := Decode(v)
	if err != nil {
		return nil, false, fmt.Errorf("schema: response schema of %q: %w", decl.Name, err)
	}
	return d, true, nil
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
			return nil, fmt.Errorf("%w: %w", ErrNotJSON, err)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotJSON, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: trailing data after the schema", ErrNotJSON)
	}
	return out, nil
}

// plainJSON converts a value that already consists of decoded JSON
// (map[string]any, []any, strings, booleans, numbers, nil), turning numbers
// into json.Number as encoding/json would print them. Objects and arrays
// that hold nothing to convert are kept as they are, not copied; the
// Document only reads them. It reports false for anything else, which then
// takes the slower marshal round trip.
func plainJSON(v any, depth int) (any, bool) {
	out, _, ok := convertJSON(v, depth)
	return out, ok
}

// smallNumbers holds the json.Number of each small integer, boxed once:
// schemas are full of small bounds and defaults.
var smallNumbers = func() (out [1024]any) {
	for i := range out {
		out[i] = json.Number(strconv.Itoa(i))
	}
	return out
}()

// isAlias reports whether k is one of the Gemini aliases. Every alias holds
// an underscore, which no 2020-12 keyword does, so most keywords are
// answered without a lookup.
func isAlias(k string) bool {
	if aliasesHaveUnderscores && strings.IndexByte(k, '_') < 0 {
		return false
	}
	_, ok := aliases[k]
	return ok
}

// aliasesHaveUnderscores says that every alias holds an underscore.
var aliasesHaveUnderscores = func() bool {
	for k := range aliases {
		if !strings.Contains(k, "_") {
			return false
		}
	}
	return true
}()

// convertJSON is plainJSON that also reports whether the result differs
// from v, so that an unchanged object or array is shared.
func convertJSON(v any, depth int) (out any, changed, ok bool) {
	if depth > 10000 {
		return nil, false, false
	}
	switch t := v.(type) {
	case nil, string, bool, json.Number:
		return t, false, true
	case float64:
		if math.IsInf(t, 0) || math.IsNaN(t) {
			return nil, false, false
		}
		if t >= 0 && t < float64(len(smallNumbers)) && t == math.Trunc(t) && !math.Signbit(t) {
			return smallNumbers[int(t)], true, true // as encoding/json prints it
		}
		b, err := json.Marshal(t)
		if err != nil {
			return nil, false, false
		}
		return json.Number(b), true, true
	case int:
		if t >= 0 && t < len(smallNumbers) {
			return smallNumbers[t], true, true
		}
		return json.Number(strconv.Itoa(t)), true, true
	case int64:
		return json.Number(strconv.FormatInt(t, 10)), true, true
	case map[string]any:
		// The converted members, kept until the end: the object is copied
		// only when one of them differs.
		type member struct {
			key string
			val any
		}
		var buf [16]member
		members := buf[:0]
		changed := false
		for k, e := range t {
			c, ch, ok := convertJSON(e, depth+1)
			if !ok {
				return nil, false, false
			}
			changed = changed || ch
			members = append(members, member{k, c})
		}
		if !changed {
			return t, false, true
		}
		copied := make(map[string]any, len(t))
		for _, m := range members {
			copied[m.key] = m.val
		}
		return copied, true, true
	case []any:
		var copied []any
		for i, e := range t {
			c, ch, ok := convertJSON(e, depth+1)
			if !ok {
				return nil, false, false
			}
			if ch && copied == nil {
				copied = make([]any, len(t))
				copy(copied, t)
			}
			if copied != nil {
				copied[i] = c
			}
		}
		if copied == nil {
			return t, false, true
		}
		return copied, true, true
	}
	return nil, false, false
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
	// x is the effective schema, shared by every Node standing on the same
	// raw value; nil for the zero Node and for truncated positions.
	x     *expansion
	depth int
	// truncated is set when the position lies beyond MaxDepth.
	truncated bool
}

// NodeID identifies the effective schema behind a Node within its
// Document: Nodes with equal IDs have the same keywords, whatever their
// depth. It lets callers memoise what they derive from a schema position.
// The zero NodeID belongs to the zero Node and to truncated positions.
type NodeID struct{ x *expansion }

// ID returns the identity of n's effective schema.
func (n Node) ID() NodeID { return NodeID{n.x} }

func (n Node) keywords() map[string]any {
	if n.x == nil {
		return nil
	}
	return n.x.kw
}

// Depth returns how many schema positions lie between the root and n.
func (n Node) Depth() int { return n.depth }

// Never reports whether n is the boolean schema false.
func (n Node) Never() bool { return n.x != nil && n.x.never }

// Truncated reports whether n lies beyond MaxDepth and was read as empty.
func (n Node) Truncated() bool { return n.truncated }

// Unresolved returns the references behind n that could not be followed,
// because their target is missing or because they form a cycle.
func (n Node) Unresolved() []string {
	if n.x == nil {
		return nil
	}
	return n.x.unresolved
}

// Empty reports whether n has no keywords at all.
func (n Node) Empty() bool { return len(n.keywords()) == 0 && !n.Never() }

// Has reports whether keyword k is present.
func (n Node) Has(k string) bool { _, ok := n.keywords()[k]; return ok }

// Get returns the value of keyword k.
func (n Node) Get(k string) (any, bool) { v, ok := n.keywords()[k]; return v, ok }

// All iterates over the keywords present and their values, in no
// particular order. Callers must not modify the values.
func (n Node) All() iter.Seq2[string, any] {
	return func(yield func(string, any) bool) {
		for k, v := range n.keywords() {
			if !yield(k, v) {
				return
			}
		}
	}
}

// Keys returns the keywords present, in no particular order.
func (n Node) Keys() []string {
	kw := n.keywords()
	out := make([]string, 0, len(kw))
	for k := range kw {
		out = append(out, k)
	}
	return out
}

// String returns keyword k when it holds a string.
func (n Node) String(k string) string {
	s, _ := n.keywords()[k].(string)
	return s
}

// Bool reports whether keyword k is literally true.
func (n Node) Bool(k string) bool {
	b, _ := n.keywords()[k].(bool)
	return b
}

// Types returns the lower-cased "type" keyword as a list.
func (n Node) Types() []string {
	switch t := n.keywords()["type"].(type) {
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
	arr, _ := n.keywords()[k].([]any)
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
	v, ok := n.keywords()[k]
	if !ok || !isSchema(v) {
		return Node{}, false
	}
	return n.child(n.children(k, oneChild).subs[0]), true
}

// SubList returns the schemas held by an array keyword (anyOf, oneOf,
// prefixItems).
func (n Node) SubList(k string) []Node {
	if _, ok := n.keywords()[k].([]any); !ok {
		return []Node{}
	}
	c := n.children(k, listChildren)
	out := make([]Node, len(c.subs))
	for i, x := range c.subs {
		out[i] = n.child(x)
	}
	return out
}

// SubMap returns the schemas held by an object keyword (properties,
// patternProperties, dependentSchemas), keyed like the keyword.
func (n Node) SubMap(k string) map[string]Node {
	m, _ := n.keywords()[k].(map[string]any)
	if len(m) == 0 {
		return nil
	}
	c := n.children(k, mapChildren)
	out := make(map[string]Node, len(c.names))
	for i, name := range c.names {
		out[name] = n.child(c.subs[i])
	}
	return out
}

// Named is a schema held under a name by an object keyword.
type Named struct {
	Name string
	Node Node
}

// SubSorted returns the schemas held by an object keyword (properties,
// patternProperties, dependentSchemas), sorted by name; nil when there are
// none.
func (n Node) SubSorted(k string) []Named {
	m, _ := n.keywords()[k].(map[string]any)
	if len(m) == 0 {
		return nil
	}
	c := n.children(k, mapChildren)
	out := make([]Named, len(c.names))
	for i, name := range c.names {
		out[i] = Named{Name: name, Node: n.child(c.subs[i])}
	}
	return out
}

// child returns the Node one level below n standing on x.
func (n Node) child(x *expansion) Node {
	depth := n.depth + 1
	if depth > MaxDepth {
		return Node{doc: n.doc, depth: depth, truncated: true}
	}
	return Node{doc: n.doc, x: x, depth: depth}
}

// children returns the expansions of the schemas held by keyword k, read
// as kind (the keyword must hold a value of that kind), computing them on
// first use. Expansion depends only on the raw value, so the result is
// shared by every Node standing on n's schema.
func (n Node) children(k string, kind childKind) *children {
	x, key := n.x, childKey{k, kind}
	// A schema object has a few keywords holding subschemas: a list is
	// cheaper than a map here.
	find := func() *children {
		for _, c := range x.children {
			if c.key == key {
				return c
			}
		}
		return nil
	}
	x.mu.Lock()
	c := find()
	x.mu.Unlock()
	if c != nil {
		return c
	}
	c = &children{key: key}
	v := x.kw[k]
	switch kind {
	case mapChildren:
		m := v.(map[string]any)
		c.names = make([]string, 0, len(m))
		for name := range m {
			c.names = append(c.names, name)
		}
		sort.Strings(c.names)
		c.subs = make([]*expansion, len(c.names))
		for i, name := range c.names {
			c.subs[i] = n.doc.expansionOf(m[name])
		}
	case listChildren:
		arr := v.([]any)
		c.subs = make([]*expansion, len(arr))
		for i, e := range arr {
			c.subs[i] = n.doc.expansionOf(e)
		}
	default:
		c.subs = []*expansion{n.doc.expansionOf(v)}
	}
	x.mu.Lock()
	if prev := find(); prev != nil {
		c = prev
	} else {
		x.children = append(x.children, c)
	}
	x.mu.Unlock()
	return c
}

// node builds the effective schema for the raw value v.
func (d *Document) node(v any, depth int) Node {
	if d == nil {
		return Node{}
	}
	if depth > MaxDepth {
		return Node{doc: d, depth: depth, truncated: true}
	}
	return Node{doc: d, x: d.expansionOf(v), depth: depth}
}

// expansionOf returns the effective schema of the raw value v, memoised by
// the identity of v when it is a schema object.
func (d *Document) expansionOf(v any) *expansion {
	m, ok := v.(map[string]any)
	if !ok {
		if b, isBool := v.(bool); isBool && !b {
			return neverExpansion
		}
		return emptyExpansion
	}
	key := reflect.ValueOf(m).Pointer()
	d.mu.Lock()
	x, hit := d.memo[key]
	d.mu.Unlock()
	if hit {
		return x
	}
	e := expander{doc: d}
	kw, never := e.expand(v)
	x = &expansion{kw: kw, never: never, unresolved: e.unresolved}
	d.mu.Lock()
	if prev, ok := d.memo[key]; ok {
		x = prev
	} else {
		if d.memo == nil {
			d.memo = map[uintptr]*expansion{}
		}
		d.memo[key] = x
	}
	d.mu.Unlock()
	return x
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
	// Most objects need no change: share them instead of copying. Such a
	// kw is never modified below (isNormal rules out every key that would
	// be), and the expansion's keywords are read-only.
	kw := raw
	if !isNormal(raw) {
		kw = normalise(raw)
	}
	e.steps++
	if e.steps > maxExpansions || len(e.seen) >= maxRefChain {
		for _, k := range [...]string{"$ref", "$dynamicRef", "allOf"} {
			delete(kw, k)
		}
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
		if e.seen == nil {
			e.seen = map[string]bool{}
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

// isNormal reports whether normalise would copy raw unchanged and
// expandObject would leave it as it is: no nulls, aliases, references,
// allOf or single-branch unions, a lower-case type and numeric exclusive
// bounds.
func isNormal(raw map[string]any) bool {
	for k, v := range raw {
		if v == nil {
			return false
		}
		if isAlias(k) {
			return false
		}
		switch k {
		case "$ref", "$dynamicRef", "allOf":
			return false
		case "exclusiveMinimum", "exclusiveMaximum":
			if _, isBool := v.(bool); isBool {
				return false
			}
		case "anyOf", "oneOf":
			if parts, ok := v.([]any); ok && len(parts) == 1 && isSchema(parts[0]) {
				return false
			}
		case "type":
			switch t := v.(type) {
			case string:
				if t == "" || lowerType(t) != t {
					return false
				}
			case []any:
				if len(t) == 0 {
					return false
				}
				for _, e := range t {
					if s, ok := e.(string); !ok || s == "" || lowerType(s) != s {
						return false
					}
				}
			default:
				return false
			}
		}
	}
	return true
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
			for _, k := range slices.Sorted(maps.Keys(t)) {
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

func isSchema(v any) bool {
	switch v.(type) {
	case map[string]any, bool:
		return true
	}
	return false
}
