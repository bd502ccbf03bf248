package fidelity_test

import (
	"fmt"
	"os"

	"google.golang.org/genai"

	"github.com/adk-codemode/codemode/fidelity"
)

func Example() {
	decl := &genai.FunctionDeclaration{
		Name: "get_weather",
		ParametersJsonSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"city":  map[string]any{"type": "string", "$comment": "ISO names only"},
				"units": map[string]any{"enum": []any{"C", "F"}, "additionalItems": false},
			},
			"required": []any{"city"},
		},
	}
	r, err := fidelity.Check([]*genai.FunctionDeclaration{decl})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := r.WriteText(os.Stdout); err != nil {
		fmt.Println(err)
	}
	fmt.Println("lossless:", r.Lossless())
	// Output:
	// get_weather: 5 carried, 0 consumed, 1 dropped, 1 lost
	//   carried  parameters# properties: parameters at the top level, nested fields below
	//   carried  parameters# required: required parameters have no default; nested fields say (required)
	//   carried  parameters# type: the Python type
	//   dropped  parameters#/properties/city $comment: notes for schema authors; the specification says not to show them to users
	//   carried  parameters#/properties/city type: the Python type
	//   lost     parameters#/properties/units additionalItems: not in the keyword table: neither rendered nor reported
	//   carried  parameters#/properties/units enum: Literal[...] type, or enum= suffix for large or structured values
	// total: 1 tools, 5 carried, 0 consumed, 1 dropped, 1 lost
	// lost silently: 1
	//   get_weather parameters#/properties/units additionalItems: not in the keyword table: neither rendered nor reported
	// lossless: false
}
