package render

import (
	"fmt"
	"testing"

	"google.golang.org/genai"
)

// realisticTools builds n deterministic tools that look like real ones:
// nested objects, enums, unions, $ref/$defs, arrays and constraints, spread
// over 20 namespaces.
func realisticTools(n int) []Tool {
	tools := make([]Tool, 0, n)
	for i := range n {
		params := map[string]any{
			"type":     "object",
			"required": []any{"id", "mode"},
			"properties": map[string]any{
				"id":    map[string]any{"type": "string", "description": "Identifier of the record to act on.", "pattern": "^[a-z0-9-]+$", "maxLength": 64},
				"mode":  map[string]any{"enum": []any{"fast", "safe", "dry-run"}, "description": "How to run."},
				"limit": map[string]any{"type": "integer", "minimum": 1, "maximum": 500, "default": 50},
				"filter": map[string]any{
					"type": "object", "description": "Which records to include.",
					"properties": map[string]any{
						"tags":    map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "maxItems": 10},
						"created": map[string]any{"type": "string", "format": "date-time"},
						"owner":   map[string]any{"$ref": "#/$defs/person"},
					},
				},
				"target": map[string]any{"oneOf": []any{
					map[string]any{"type": "object", "properties": map[string]any{"type": map[string]any{"const": "user"}, "email": map[string]any{"type": "string", "format": "email"}}, "required": []any{"email"}},
					map[string]any{"type": "object", "properties": map[string]any{"type": map[string]any{"const": "team"}, "team_id": map[string]any{"type": "integer"}}, "required": []any{"team_id"}},
				}},
				"options": map[string]any{"type": []any{"object", "null"}, "additionalProperties": map[string]any{"type": "boolean"}},
			},
			"$defs": map[string]any{"person": map[string]any{"type": "object", "properties": map[string]any{
				"name": map[string]any{"type": "string"}, "manager": map[string]any{"$ref": "#/$defs/person"},
			}}},
		}
		tools = append(tools, Tool{
			Namespace: fmt.Sprintf("service%02d", i%20),
			Declaration: &genai.FunctionDeclaration{
				Name:                 fmt.Sprintf("operation_%04d", i),
				Description:          fmt.Sprintf("Run operation %d against the service and return the affected records, with paging information and a summary of what changed.", i),
				ParametersJsonSchema: params,
			},
		})
	}
	return tools
}

var benchEnv = Environment{PythonVersion: "3.12.4", Packages: map[string]map[string]string{"yaml": {"PyYAML": "6.0.2"}, "numpy": {"numpy": "2.1.0"}}}

// BenchmarkRenderCatalog1000 resolves 1,000 tools and renders every tier:
// the full, signatures and names catalogs, the block at budgets that give
// each tier and mixes of them across the 20 namespaces, and the stubs.
func BenchmarkRenderCatalog1000(b *testing.B) {
	tools := realisticTools(1000)
	b.ReportAllocs()
	for b.Loop() {
		reg, err := NewRegistry(tools)
		if err != nil {
			b.Fatal(err)
		}
		_ = reg.Catalog(Full)
		_ = reg.Catalog(Signatures)
		_ = reg.Catalog(Names)
		_ = reg.Block(benchEnv, 1<<30)  // full tier
		_ = reg.Block(benchEnv, 500000) // full and signatures
		_ = reg.Block(benchEnv, 400000) // signatures
		_ = reg.Block(benchEnv, 100000) // signatures and names
		_ = reg.Block(benchEnv, 30000)  // names
		_ = reg.Block(benchEnv, 1000)   // pointer tier
		_ = reg.Stubs()
	}
}

// BenchmarkRenderCatalog1000Cached re-renders the block of an unchanged
// registry, which is served from its cache.
func BenchmarkRenderCatalog1000Cached(b *testing.B) {
	reg, err := NewRegistry(realisticTools(1000))
	if err != nil {
		b.Fatal(err)
	}
	_ = reg.Block(benchEnv, DefaultBudget)
	b.ReportAllocs()
	for b.Loop() {
		_ = reg.Block(benchEnv, DefaultBudget)
	}
}

func TestRealisticToolsRender(t *testing.T) {
	reg, err := NewRegistry(realisticTools(40))
	if err != nil {
		t.Fatal(err)
	}
	py := newPyChecker(t)
	for _, f := range reg.Stubs()[:5] {
		if msg := py.check(t, f.Path, f.Content); msg != "" {
			t.Errorf("%s: %s", f.Path, msg)
		}
	}
}

// BenchmarkDiscoveryIndex1000 builds the files behind search and describe
// for 1,000 tools whose catalog is rendered already, the part of Stubs
// that discovery adds.
func BenchmarkDiscoveryIndex1000(b *testing.B) {
	reg, err := NewRegistry(realisticTools(1000))
	if err != nil {
		b.Fatal(err)
	}
	_ = reg.Catalog(Full)
	b.ReportAllocs()
	for b.Loop() {
		_ = reg.discoveryFiles()
	}
}

// BenchmarkRenderTiers1000 is BenchmarkRenderCatalog1000 without the stub
// files: what rendering the catalog into every tier costs.
func BenchmarkRenderTiers1000(b *testing.B) {
	tools := realisticTools(1000)
	b.ReportAllocs()
	for b.Loop() {
		reg, err := NewRegistry(tools)
		if err != nil {
			b.Fatal(err)
		}
		_ = reg.Catalog(Full)
		_ = reg.Catalog(Signatures)
		_ = reg.Catalog(Names)
		_ = reg.Block(benchEnv, 1<<30)  // full tier
		_ = reg.Block(benchEnv, 500000) // full and signatures
		_ = reg.Block(benchEnv, 400000) // signatures
		_ = reg.Block(benchEnv, 100000) // signatures and names
		_ = reg.Block(benchEnv, 30000)  // names
		_ = reg.Block(benchEnv, 1000)   // pointer tier
	}
}
