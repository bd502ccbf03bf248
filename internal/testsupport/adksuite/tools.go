package adksuite

import (
	"fmt"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
)

// object is the schema of an object with the given properties, all
// required, and no other: what functiontool infers from a struct.
func object(props map[string]*jsonschema.Schema) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "object", Properties: props, AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}}}
	for name := range props {
		s.Required = append(s.Required, name)
	}
	slices.Sort(s.Required)
	return s
}

// NoParams is the schema of a tool that takes no arguments: what
// functiontool infers from struct{}.
func NoParams() *jsonschema.Schema { return object(nil) }

func str(description string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Description: description}
}

func num() *jsonschema.Schema { return &jsonschema.Schema{Type: "number"} }

// WeatherTools are deterministic tools: the weather of two cities, a
// temperature conversion, and a tool that sets session state.
func WeatherTools() []Tool {
	return []Tool{
		{
			Name: "get_weather", Description: "Current weather of a city.",
			Params: object(map[string]*jsonschema.Schema{"city": str("")}),
			Run: func(_ Call, a map[string]any) (map[string]any, error) {
				temps := map[string]float64{"Paris": 18, "Oslo": 4}
				temp, ok := temps[a["city"].(string)]
				if !ok {
					return nil, fmt.Errorf("unknown city %q", a["city"])
				}
				return map[string]any{"city": a["city"], "temp_c": temp}, nil
			},
		},
		{
			Name: "convert_temperature", Description: "Convert a Celsius temperature.",
			Params: object(map[string]*jsonschema.Schema{"value": num(), "unit": str("the unit to convert to: F or C")}),
			Run: func(_ Call, a map[string]any) (map[string]any, error) {
				if a["unit"] != "F" {
					return nil, fmt.Errorf("unsupported unit %q", a["unit"])
				}
				return map[string]any{"value": a["value"].(float64)*9/5 + 32, "unit": "F"}, nil
			},
		},
		{
			Name: "remember", Description: "Store a value in the session state.",
			Params: object(map[string]*jsonschema.Schema{"key": str(""), "value": str("")}),
			Run: func(c Call, a map[string]any) (map[string]any, error) {
				key, _ := a["key"].(string)
				if err := c.SetState(key, a["value"]); err != nil {
					return nil, err
				}
				return map[string]any{"stored": key}, nil
			},
		},
	}
}
