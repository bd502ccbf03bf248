package codemode

import (
	"reflect"
	"slices"

	"google.golang.org/genai"

	"github.com/adk-codemode/codemode/schema"
)

// resultKeyer is a tool that says how it wraps its result: its Run
// returns {ResultKey(): result} (or, when ResultKey is "", the result as
// it is). The OpenAPI toolset's tools say so; so may a tool of the
// user's own.
type resultKeyer interface {
	ResultKey() string
}

// resultKey is the key under which a tool wraps its result, as ADK's own
// tools do: mcptoolset returns every result as {"output": result}, and
// functiontool returns an output that is not a JSON object as
// {"result": output}; a tool may say its own with a ResultKey method. The
// code receives what is under the key: the result itself, as the stub's
// return annotation says.
func resultKey(t runnableTool, decl *genai.FunctionDeclaration) string {
	if k, ok := t.(resultKeyer); ok {
		return k.ResultKey()
	}
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
