package schema

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"
)

// compileRaw compiles a parameter schema given as JSON text.
func compileRaw(t *testing.T, raw string) *Validator {
	t.Helper()
	v, err := CompileValidator(&genai.FunctionDeclaration{Name: "t", ParametersJsonSchema: []byte(raw)})
	if err != nil {
		t.Fatalf("CompileValidator(%s): %v", raw, err)
	}
	return v
}

func pointers(v *Validator) []string {
	var out []string
	for _, u := range v.Unenforced() {
		out = append(out, u.Pointer)
	}
	return out
}

// rules lists path and rule of each violation, or nil when args pass.
func rules(t *testing.T, v *Validator, args map[string]any) []string {
	t.Helper()
	err := v.Validate(args)
	if err == nil {
		return nil
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("Validate: %v, want a *ValidationError", err)
	}
	var out []string
	for _, viol := range ve.Violations {
		out = append(out, viol.Path+" "+viol.Rule)
	}
	return out
}

func TestECMAPatternsAreEnforced(t *testing.T) {
	tests := []struct {
		name, pattern string
		good, bad     string
	}{
		{"negative lookahead", `^(?!x)`, "abc", "xyz"},
		{"positive lookahead", `^(?=.*\d)[a-z\d]+$`, "ab1", "abc"},
		{"lookbehind", `(?<!@)example\.com$`, "a.example.com", "a@example.com"},
		{"backreference", `^(a|b)\1$`, "aa", "ab"},
		{"control escape", `^\cJ$`, "\n", "J"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, _ := json.Marshal(map[string]any{"type": "object", "properties": map[string]any{"s": map[string]any{"type": "string", "pattern": tt.pattern}}})
			v := compileRaw(t, string(raw))
			if u := v.Unenforced(); len(u) != 0 {
				t.Errorf("Unenforced() = %v, want every keyword enforced", u)
			}
			if got := rules(t, v, map[string]any{"s": tt.good}); got != nil {
				t.Errorf("%q rejected: %v", tt.good, got)
			}
			if got := rules(t, v, map[string]any{"s": tt.bad}); !cmp.Equal(got, []string{"/s pattern"}) {
				t.Errorf("%q: violations %v, want the pattern to fail", tt.bad, got)
			}
		})
	}
}

func TestECMAPatternMatchingIsBounded(t *testing.T) {
	// Exponential backtracking in a backtracking engine; the lookahead
	// keeps RE2 from taking the pattern. The match gives up and the value
	// is rejected, never let through.
	v := compileRaw(t, `{"type":"object","properties":{"s":{"type":"string","pattern":"^(?=a)(a|aa)+$"}}}`)
	if got := rules(t, v, map[string]any{"s": "aaaa"}); got != nil {
		t.Fatalf("a short match was rejected: %v", got)
	}
	hostile := strings.Repeat("a", 5000) + "!"
	if got := rules(t, v, map[string]any{"s": hostile}); !cmp.Equal(got, []string{"/s pattern"}) {
		t.Errorf("violations %v, want the pattern to fail", got)
	}
}

func TestUncompilableKeywordsAloneAreLeftOut(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		want   []string
	}{
		{"external ref", `{"properties":{"a":{"$ref":"https://schemas.example/a.json"}}}`, []string{"/properties/a/$ref"}},
		{"external ref with fragment", `{"properties":{"a":{"$ref":"other.json#/defs/x"}}}`, []string{"/properties/a/$ref"}},
		{"missing pointer", `{"properties":{"a":{"$ref":"#/$defs/missing"}}}`, []string{"/properties/a/$ref"}},
		{"missing anchor", `{"properties":{"a":{"items":{"$ref":"#nowhere"}}}}`, []string{"/properties/a/items/$ref"}},
		{"unknown meta-schema", `{"$schema":"https://schemas.example/meta","properties":{"a":{"type":"string"}}}`, []string{"/$schema"}},
		{"pattern no engine takes", `{"properties":{"a":{"type":"string","pattern":"(unclosed"}}}`, []string{"/properties/a/pattern"}},
		{"pattern property no engine takes", `{"patternProperties":{"[z-a]":{"type":"string"}},"properties":{"a":{}}}`, []string{"/patternProperties/[z-a]"}},
		{"wrong keyword value", `{"properties":{"a":{"type":"string","minLength":"three"}}}`, []string{"/properties/a/minLength"}},
		{"unknown type name", `{"properties":{"a":{"anyOf":[{"type":"strng"},{"type":"string"}]}}}`, []string{"/properties/a/anyOf/0/type"}},
		{"two at once", `{"properties":{"a":{"$ref":"https://x.example/a"},"b":{"$ref":"https://x.example/a"}}}`, []string{"/properties/a/$ref", "/properties/b/$ref"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The sibling n is an integer of at least 1 in every case.
			var m map[string]any
			if err := json.Unmarshal([]byte(tt.schema), &m); err != nil {
				t.Fatal(err)
			}
			m["type"] = "object"
			props, _ := m["properties"].(map[string]any)
			props["n"] = map[string]any{"type": "integer", "minimum": 1}
			raw, _ := json.Marshal(m)
			v := compileRaw(t, string(raw))
			if diff := cmp.Diff(tt.want, pointers(v)); diff != "" {
				t.Errorf("Unenforced pointers (-want +got):\n%s", diff)
			}
			for _, u := range v.Unenforced() {
				if u.Reason == "" {
					t.Errorf("%s: no reason given", u.Pointer)
				}
			}
			if got := rules(t, v, map[string]any{"n": "two"}); !cmp.Equal(got, []string{"/n type"}) {
				t.Errorf("sibling integer: violations %v, want /n type", got)
			}
			if got := rules(t, v, map[string]any{"n": 0}); !cmp.Equal(got, []string{"/n minimum"}) {
				t.Errorf("sibling minimum: violations %v, want /n minimum", got)
			}
			if got := rules(t, v, map[string]any{"n": 3}); got != nil {
				t.Errorf("valid arguments rejected: %v", got)
			}
		})
	}
}

func TestLocalRefsStayEnforced(t *testing.T) {
	v := compileRaw(t, `{"$id":"https://tools.example/root","type":"object",
		"properties":{"a":{"$ref":"defs.json"},"b":{"$ref":"#/$defs/b"}},
		"$defs":{"a":{"$id":"defs.json","type":"string"},"b":{"type":"integer"}}}`)
	if u := v.Unenforced(); len(u) != 0 {
		t.Errorf("Unenforced() = %v, want references within the declaration enforced", u)
	}
	if got := rules(t, v, map[string]any{"a": 1, "b": "x"}); !cmp.Equal(got, []string{"/a type", "/b type"}) {
		t.Errorf("violations %v", got)
	}
}
