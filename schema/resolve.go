package schema

import (
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

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

// lookupFragment finds the target of a reference's fragment in root: a
// JSON pointer, or else the name of an $anchor or $dynamicAnchor anywhere in
// the document (a dynamic reference prefers a $dynamicAnchor).
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

// index returns the document's anchor index, building it on first use.
func (d *Document) index() *anchorIndex {
	d.idxOnce.Do(d.buildIndex)
	return d.idx
}

// buildIndex walks the document, up to maxIndexNodes positions and
// MaxDepth deep, and records the first schema that declares each $id,
// $anchor and $dynamicAnchor.
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
