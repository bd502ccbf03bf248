package schema

import (
	"encoding/json"
	"errors"
	"testing"

	"google.golang.org/genai"
)

// FuzzCompileValidator feeds hostile parameter schemas (as an MCP server
// may send them) and arguments (as the sandbox may send them): compiling
// and validating never panic, and a schema either compiles, perhaps in
// part, or says why not.
func FuzzCompileValidator(f *testing.F) {
	f.Add(`{"type":"object","properties":{"s":{"type":"string","pattern":"^(?!x)"}}}`, `{"s":"xy"}`)
	f.Add(`{"properties":{"a":{"$ref":"https://x.example/a"},"n":{"type":"integer"}}}`, `{"n":"1"}`)
	f.Add(`{"patternProperties":{"(?<=a)b":{"minimum":"x"}},"$schema":"urn:x"}`, `{"ab":1}`)
	f.Add(`{"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`, `{}`)
	f.Fuzz(func(t *testing.T, schemaJSON, argsJSON string) {
		v, err := CompileValidator(&genai.FunctionDeclaration{Name: "f", ParametersJsonSchema: []byte(schemaJSON)})
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		var args map[string]any
		if json.Unmarshal([]byte(argsJSON), &args) != nil {
			return
		}
		if err := v.Validate(args); err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Validate: %T %v", err, err)
			}
		}
	})
}
