package codemode

import (
	"reflect"
	"slices"

	"google.golang.org/genai"

	"github.com/adk-codemode/codemode/schema"
)

// resultKey is the key under which code receives a tool's result when the
// tool wraps it, as ADK's own tools do: mcptoolset returns every result as
// {"output": result}, and functiontool returns an output that is not a
// JSON object as {"result": output}. The stubs document the wrapper.
func resultKey(t runnableTool, decl *genai.FunctionDeclaration) string {
	typ := reflect.TypeOf(t)
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	switch typ.PkgPath() {
	case "google.golang.org/adk/v2/tool/mcptoolset":
		return "output"
	case "google.golang.org/adk/v2/tool/functiontool":
		doc, ok, err := schema.Response(decl)
		if err != nil || !ok {
			return ""
		}
		if types := doc.Root().Types(); !slices.Equal(types, []string{"object"}) {
			return "result"
		}
	}
	return ""
}
