package schema

import (
	"iter"
	"sort"
)

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

// keywords returns the effective keywords of n; nil for the empty schema.
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

// childKey names a cache entry of child expansions: a keyword, read as one
// schema (Sub), a list (SubList) or a map (SubMap, SubSorted).
type childKey struct {
	keyword string
	kind    childKind
}

// childKind says how a keyword holds its subschemas: one, a list, or a map.
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

// isSchema reports whether v can be a schema: an object or a boolean.
func isSchema(v any) bool {
	switch v.(type) {
	case map[string]any, bool:
		return true
	}
	return false
}
