package render_test

import (
	"fmt"
	"strings"

	"google.golang.org/genai"

	"github.com/adk-codemode/codemode/render"
)

func ExampleRegistry_Stubs() {
	reg, err := render.NewRegistry([]render.Tool{{
		Namespace: "slack",
		Declaration: &genai.FunctionDeclaration{
			Name:        "send_message",
			Description: "Post a message to a channel.",
			ParametersJsonSchema: map[string]any{
				"type":     "object",
				"required": []any{"channel"},
				"properties": map[string]any{
					"channel": map[string]any{"type": "string", "pattern": "^C"},
					"text":    map[string]any{"type": "string", "description": "Message text."},
				},
			},
		},
	}})
	if err != nil {
		panic(err)
	}
	for _, f := range reg.Stubs() {
		if f.Path == "tools/slack/send_message.py" {
			// Skip the header and imports; print the function.
			fmt.Print(f.Content[strings.Index(f.Content, "def "):])
		}
	}
	// Output:
	// def send_message(*, channel: str, text: str | None = _MISSING) -> Any:
	//     """Post a message to a channel.
	//
	//     Args:
	//         channel: (pattern=^C)
	//         text: Message text.
	//     """
	//     _args: dict[str, Any] = {'channel': channel}
	//     if text is not _MISSING:
	//         _args['text'] = text
	//     return _call('slack.send_message', _args)
}

func ExampleRegistry_Block() {
	reg, err := render.NewRegistry([]render.Tool{
		{Declaration: &genai.FunctionDeclaration{Name: "get_weather", Description: "Current weather for a city."}},
	})
	if err != nil {
		panic(err)
	}
	env := render.Environment{PythonVersion: "3.12.4", Packages: map[string]map[string]string{"yaml": {"PyYAML": "6.0.2"}}}
	// A budget this small leaves room for each signature with a one-line
	// summary, not for the full docstrings.
	block := reg.Block(env, 1030)
	fmt.Println(block[strings.Index(block, "  <installed-packages>"):])
	// Output:
	//   <installed-packages>
	// yaml: PyYAML 6.0.2
	//   </installed-packages>
	//   <tools-package>
	// # tools
	//
	// from tools import get_weather
	//
	// def get_weather() -> Any:
	//     """Current weather for a city."""
	//   </tools-package>
	// </code-mode>
}

// A tool from an MCP server through ADK's mcptoolset: its outputSchema is the
// declaration's ResponseJsonSchema, and every result arrives wrapped as
// {"output": result}, which ResultKey documents.
func ExampleTool_resultKey() {
	reg, err := render.NewRegistry([]render.Tool{{
		Namespace: "weather",
		ResultKey: "output",
		Declaration: &genai.FunctionDeclaration{
			Name:        "get_weather",
			Description: "Current weather for a city. Updated hourly.",
			ResponseJsonSchema: map[string]any{
				"type":       "object",
				"required":   []any{"temp_c"},
				"properties": map[string]any{"temp_c": map[string]any{"type": "number", "description": "Temperature."}},
			},
		},
	}})
	if err != nil {
		panic(err)
	}
	fmt.Print(reg.Catalog(render.Full))
	fmt.Print(reg.Catalog(render.Signatures))
	// Output:
	// # tools.weather
	//
	// from tools.weather import get_weather
	//
	// def get_weather() -> dict[str, dict[str, Any]]:
	//     """Current weather for a city. Updated hourly.
	//
	//     Returns:
	//         {'output': dict[str, Any]}
	//             temp_c: float (required) - Temperature.
	//     """
	//     ...
	// # tools.weather
	//
	// from tools.weather import get_weather
	//
	// def get_weather() -> dict[str, dict[str, Any]]:
	//     """Current weather for a city."""
}

func ExampleRegistry_Markdown() {
	reg, err := render.NewRegistry([]render.Tool{{
		Declaration: &genai.FunctionDeclaration{
			Name:        "get_weather",
			Description: "Current weather for a city.",
			ParametersJsonSchema: map[string]any{
				"type":     "object",
				"required": []any{"city"},
				"properties": map[string]any{
					"city":  map[string]any{"type": "string", "minLength": 1, "description": "City name."},
					"units": map[string]any{"enum": []any{"C", "F"}, "default": "C"},
				},
			},
		},
	}})
	if err != nil {
		panic(err)
	}
	fmt.Print(reg.Markdown())
	// Output:
	// # Tool catalog
	//
	// ## Contents
	//
	// - [`tools`](#module-tools)
	//   - [`get_weather`](#tool-get_weather): Current weather for a city.
	//
	// <a id="module-tools"></a>
	//
	// ## `tools`
	//
	// ```python
	// from tools import get_weather
	// ```
	//
	// <a id="tool-get_weather"></a>
	//
	// ### `get_weather`
	//
	// Current weather for a city.
	//
	// ```python
	// def get_weather(*, city: str, units: Literal['C', 'F'] | None = ...) -> Any: ...
	// ```
	//
	// | name | type | required | constraints | default | description |
	// |---|---|---|---|---|---|
	// | `city` | `str` | yes | minLength=1 |  | City name. |
	// | `units` | `Literal['C', 'F']` | no |  | `'C'` |  |
}
