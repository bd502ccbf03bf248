package schema

import (
	"errors"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// maxDropRounds caps how often compilation is retried after leaving out the
// keywords that broke it.
const maxDropRounds = 16

// Unenforced is a keyword of a parameter schema that argument validation
// leaves out because it cannot be compiled; every other keyword is still
// enforced.
type Unenforced struct {
	// Pointer is the JSON pointer of the keyword within the parameter
	// schema in its standard form (see [Document.JSONSchema]), such as
	// "/properties/q/pattern".
	Pointer string
	// Reason says why it cannot be compiled.
	Reason string
}

// site is one keyword of one schema object of the standard form.
type site struct {
	obj     map[string]any
	keyword string // a key of obj
	pointer string
	reason  string
}

// dropPatterns removes the pattern and patternProperties entries no engine
// compiles, before the compiler sees them.
func dropPatterns(root any, out *[]Unenforced) {
	walkSchema(root, "", declURL, func(obj map[string]any, ptr, _ string) {
		if p, ok := obj["pattern"].(string); ok {
			if _, err := compileRegexp(p); err != nil {
				delete(obj, "pattern")
				*out = append(*out, Unenforced{Pointer: ptr + "/pattern", Reason: "pattern does not compile: " + err.Error()})
			}
		}
		if pp, ok := obj["patternProperties"].(map[string]any); ok {
			for _, p := range sortedKeys(pp) {
				if _, err := compileRegexp(p); err != nil {
					delete(pp, p)
					*out = append(*out, Unenforced{Pointer: ptr + "/patternProperties/" + escapeToken(p), Reason: "pattern does not compile: " + err.Error()})
				}
			}
		}
	})
}

// dropBroken removes the keywords err blames and reports them. It returns
// false when err names nothing it can remove.
func dropBroken(root any, err error, out *[]Unenforced) bool {
	var sites []site
	var sve *jsonschema.SchemaValidationError
	if errors.As(err, &sve) {
		var ve *jsonschema.ValidationError
		if !errors.As(sve.Err, &ve) {
			return false
		}
		var leaves []*jsonschema.ValidationError
		leafErrors(ve, &leaves)
		seen := map[string]bool{}
		for _, l := range leaves {
			s, ok := keywordAt(root, l.InstanceLocation)
			if !ok || seen[s.pointer] {
				continue
			}
			seen[s.pointer] = true
			s.reason = "not valid JSON Schema 2020-12: " + l.ErrorKind.LocalizedString(printer)
			sites = append(sites, s)
		}
		for _, s := range sites {
			drop(s, out)
		}
		return len(sites) > 0
	}
	target := refTarget(err)
	if target == "" {
		return false
	}
	reason := err.Error()
	walkSchema(root, "", declURL, func(obj map[string]any, ptr, base string) {
		for _, k := range []string{"$ref", "$dynamicRef", "$schema"} {
			r, ok := obj[k].(string)
			if !ok {
				continue
			}
			resolved := resolveURL(base, r)
			if k == "$schema" {
				resolved = r
			}
			if sameResource(resolved, target) {
				sites = append(sites, site{obj: obj, keyword: k, pointer: ptr + "/" + escapeToken(k), reason: reason})
			}
		}
	})
	for _, s := range sites {
		drop(s, out)
	}
	return len(sites) > 0
}

func drop(s site, out *[]Unenforced) {
	delete(s.obj, s.keyword)
	*out = append(*out, Unenforced{Pointer: s.pointer, Reason: s.reason})
}

// refTarget is the URL an error about an unreachable reference names.
func refTarget(err error) string {
	var (
		lue *jsonschema.LoadURLError
		jpe *jsonschema.JSONPointerNotFoundError
		ane *jsonschema.AnchorNotFoundError
		ime *jsonschema.InvalidMetaSchemaURLError
		ude *jsonschema.UnsupportedDraftError
	)
	switch {
	case errors.As(err, &lue):
		return lue.URL
	case errors.As(err, &jpe):
		return jpe.URL
	case errors.As(err, &ane):
		return ane.Reference
	case errors.As(err, &ime):
		return ime.URL
	case errors.As(err, &ude):
		return ude.URL
	}
	return ""
}

// sameResource reports whether a reference resolved to ref reaches target:
// the same URL, or a fragment of the document target names when target has
// no fragment of its own.
func sameResource(ref, target string) bool {
	ref, target = strings.TrimSuffix(ref, "#"), strings.TrimSuffix(target, "#")
	if ref == target {
		return true
	}
	if !strings.Contains(target, "#") {
		doc, _, _ := strings.Cut(ref, "#")
		return doc == target
	}
	return false
}

func resolveURL(base, ref string) string {
	b, err := url.Parse(base)
	if err != nil {
		return ref
	}
	r, err := url.Parse(ref)
	if err != nil {
		return ref
	}
	out := b.ResolveReference(r)
	if !r.IsAbs() && b.Opaque != "" {
		// As the validator resolves it: a relative reference against an
		// opaque base such as a URN keeps the base document.
		out.Opaque, out.Path, out.RawPath = b.Opaque, "", ""
	}
	return out.String()
}

func leafErrors(e *jsonschema.ValidationError, out *[]*jsonschema.ValidationError) {
	if len(e.Causes) == 0 {
		*out = append(*out, e)
		return
	}
	for _, c := range e.Causes {
		leafErrors(c, out)
	}
}

// keywordAt finds the keyword of the standard form that holds the value at
// the JSON pointer loc.
func keywordAt(root any, loc []string) (site, bool) {
	obj, ok := root.(map[string]any)
	if !ok {
		return site{}, false
	}
	ptr := ""
	for i := 0; i < len(loc); i++ {
		k := loc[i]
		v, ok := obj[k]
		if !ok {
			return site{}, false
		}
		next := ""
		switch {
		case contains(singleSchemaKeys, k):
		case contains(listSchemaKeys, k) || contains(mapSchemaKeys, k):
			if i+1 >= len(loc) {
				return site{obj: obj, keyword: k, pointer: ptr + "/" + escapeToken(k)}, true
			}
			next = loc[i+1]
			switch c := v.(type) {
			case []any:
				n, err := strconv.Atoi(next)
				if err != nil || n < 0 || n >= len(c) {
					return site{}, false
				}
				v = c[n]
			case map[string]any:
				v = c[next]
			}
		default:
			return site{obj: obj, keyword: k, pointer: ptr + "/" + escapeToken(k)}, true
		}
		child, ok := v.(map[string]any)
		ptr += "/" + escapeToken(k)
		if next != "" {
			ptr += "/" + escapeToken(next)
			i++
		}
		if !ok {
			return site{}, false
		}
		if i == len(loc)-1 {
			return site{}, false
		}
		obj = child
	}
	return site{}, false
}

// walkSchema calls fn on every schema object of the standard form, with its
// JSON pointer and base URL.
func walkSchema(v any, ptr, base string, fn func(obj map[string]any, ptr, base string)) {
	obj, ok := v.(map[string]any)
	if !ok {
		return
	}
	if id, ok := obj["$id"].(string); ok {
		base = resolveURL(base, id)
	}
	fn(obj, ptr, base)
	for _, k := range singleSchemaKeys {
		if c, ok := obj[k]; ok {
			walkSchema(c, ptr+"/"+escapeToken(k), base, fn)
		}
	}
	for _, k := range listSchemaKeys {
		if c, ok := obj[k].([]any); ok {
			for i, e := range c {
				walkSchema(e, ptr+"/"+k+"/"+strconv.Itoa(i), base, fn)
			}
		}
	}
	for _, k := range mapSchemaKeys {
		if c, ok := obj[k].(map[string]any); ok {
			for _, name := range sortedKeys(c) {
				walkSchema(c[name], ptr+"/"+escapeToken(k)+"/"+escapeToken(name), base, fn)
			}
		}
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

func escapeToken(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
}
