package schema_test

import (
	"fmt"

	"google.golang.org/genai"

	"github.com/adk-codemode/codemode/schema"
)

// A schema with an ECMA-262 lookahead and a reference outside the
// declaration: the pattern is enforced, the reference alone is left out,
// and the integer beside them is still checked.
func ExampleValidator_Unenforced() {
	v, err := schema.CompileValidator(&genai.FunctionDeclaration{Name: "list_repos", ParametersJsonSchema: map[string]any{
		"type": "object",
		"properties": map[string]any{
			"owner":    map[string]any{"type": "string", "pattern": "^(?!-)"},
			"filter":   map[string]any{"$ref": "https://schemas.example/filter.json"},
			"per_page": map[string]any{"type": "integer"},
		},
	}})
	if err != nil {
		panic(err)
	}
	for _, u := range v.Unenforced() {
		fmt.Println("left out:", u.Pointer)
	}
	fmt.Println(v.Validate(map[string]any{"owner": "-x", "per_page": "ten"}))
	// Output:
	// left out: /properties/filter/$ref
	// invalid arguments for tool "list_repos":
	// - arguments/owner: pattern: '-x' does not match pattern '^(?!-)'
	// - arguments/per_page: type: got string, want integer
}
