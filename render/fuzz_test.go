package render

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/genai"
)

// FuzzRenderStubs feeds arbitrary JSON to the renderer as a parameter schema
// and a description. Rendering must not panic, must finish quickly (no
// loops), and every stub must be valid Python as judged by Python's own
// parser, in the seed run as well as while fuzzing.
func FuzzRenderStubs(f *testing.F) {
	seeds := []string{
		`{}`, `true`, `false`, `null`, `[]`, `"x"`, `1`,
		`{"$ref":"#"}`,
		`{"type":"object","properties":{"a":{"$ref":"#"}},"allOf":[{"$ref":"#"}]}`,
		`{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"properties":{"x":{"$ref":"#/$defs/a"}}}`,
		`{"properties":{"x\"\"\"":{"description":"\"\"\"\\x\u0000","enum":["'\"",1e999,-0.0]}}}`,
		`{"properties":{"class":{"type":["STRING","null"]},"":{},"1":{"anyOf":[{"properties":{"a":{}}},{"properties":{"b":{}}}]}}}`,
		`{"type":"OBJECT","properties":{"a":{"type":"ARRAY","items":{"type":"ARRAY","items":{"type":"ARRAY"}}}}}`,
		`{"properties":{"p":{"allOf":[{"$ref":"#/properties/p"}],"default":{"a":[1,{"b":null}]}}},"required":["p"]}`,
	}
	// Also seed with every golden declaration.
	paths, _ := filepath.Glob("testdata/*.txtar")
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		_, rest, ok := strings.Cut(string(data), "-- decls.json --\n")
		if !ok {
			continue
		}
		decls, _, _ := strings.Cut(rest, "\n-- ")
		var entries []struct {
			Description string          `json:"description"`
			Params      json.RawMessage `json:"parametersJsonSchema"`
		}
		if json.Unmarshal([]byte(decls), &entries) == nil {
			for _, e := range entries {
				if len(e.Params) > 0 {
					seeds = append(seeds, string(e.Params))
				}
			}
		}
	}
	for _, s := range seeds {
		f.Add(s, "A tool.")
	}
	py := newPyChecker(f)
	f.Fuzz(func(t *testing.T, params, desc string) {
		if !json.Valid([]byte(params)) {
			return
		}
		reg, err := NewRegistry([]Tool{{Namespace: "ns", Declaration: &genai.FunctionDeclaration{
			Name: "tool", Description: desc, ParametersJsonSchema: json.RawMessage(params),
		}}})
		if err != nil {
			// Only collisions of sanitised parameter names may fail.
			if ce := (*CollisionError)(nil); !errors.As(err, &ce) {
				t.Fatalf("NewRegistry: %v", err)
			}
			return
		}
		start := time.Now()
		files := reg.Stubs()
		_ = reg.Block(Environment{}, DefaultBudget)
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("rendering took %v", d)
		}
		for _, file := range files {
			if len(file.Content) > 4<<20 {
				t.Fatalf("%s is %d bytes", file.Path, len(file.Content))
			}
			if msg := py.check(t, file.Path, file.Content); msg != "" {
				t.Fatalf("%s is not valid Python: %s\n%s", file.Path, msg, file.Content)
			}
		}
	})
}
