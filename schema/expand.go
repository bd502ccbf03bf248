package schema

import (
	"reflect"
	"strings"
	"sync"
)

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

// Shared expansions of values that are not schema objects.
var (
	emptyExpansion = &expansion{}
	neverExpansion = &expansion{never: true}
)

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

// expand returns the effective keywords of the raw schema v, and whether v
// is the schema false, which nothing matches.
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

// expandObject returns the effective keywords of one schema object: its own
// keywords normalised, merged over the targets of its references, its allOf
// parts and its single anyOf or oneOf branch.
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

// lowerType lower-cases a type name, and returns "" for Gemini's
// TYPE_UNSPECIFIED, which names no type.
func lowerType(s string) string {
	s = strings.ToLower(s)
	if s == "type_unspecified" || s == "" {
		return ""
	}
	return s
}

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
