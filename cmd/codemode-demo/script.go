package main

import (
	"context"
	"fmt"
	"iter"
	"strings"

	"google.golang.org/genai"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
)

// The demo's tools: deterministic stand-ins for a weather service.

type cityArgs struct {
	City string `json:"city" jsonschema:"the city name, such as Paris"`
}

type weather struct {
	City       string  `json:"city"`
	TempC      float64 `json:"temp_c"`
	Conditions string  `json:"conditions"`
}

type convertArgs struct {
	Value float64 `json:"value" jsonschema:"the temperature in degrees Celsius"`
	Unit  string  `json:"unit" jsonschema:"the unit to convert to: F or K"`
}

type converted struct {
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
}

var conditions = map[string]weather{
	"paris":  {City: "Paris", TempC: 18.5, Conditions: "light rain"},
	"oslo":   {City: "Oslo", TempC: 4, Conditions: "clear"},
	"lisbon": {City: "Lisbon", TempC: 23, Conditions: "sunny"},
	"tokyo":  {City: "Tokyo", TempC: 21, Conditions: "cloudy"},
}

func demoTools() ([]tool.Tool, error) {
	getWeather, err := functiontool.New(functiontool.Config{
		Name:        "get_weather",
		Description: "Return the current weather of a city: its temperature in Celsius and the conditions.",
	}, func(_ agent.Context, a cityArgs) (weather, error) {
		w, ok := conditions[strings.ToLower(strings.TrimSpace(a.City))]
		if !ok {
			return weather{}, fmt.Errorf("no weather data for %q", a.City)
		}
		return w, nil
	})
	if err != nil {
		return nil, err
	}
	convert, err := functiontool.New(functiontool.Config{
		Name:        "convert_temperature",
		Description: "Convert a temperature in Celsius to Fahrenheit (F) or Kelvin (K).",
	}, func(_ agent.Context, a convertArgs) (converted, error) {
		switch strings.ToUpper(a.Unit) {
		case "F":
			return converted{Value: a.Value*9/5 + 32, Unit: "F"}, nil
		case "K":
			return converted{Value: a.Value + 273.15, Unit: "K"}, nil
		}
		return converted{}, fmt.Errorf("unknown unit %q: use F or K", a.Unit)
	})
	if err != nil {
		return nil, err
	}
	return []tool.Tool{getWeather, convert}, nil
}

// scriptedModel replays a fixed conversation: two execute_code calls, the
// second using a variable the first set, then a final answer.
type scriptedModel struct{}

var script = []*genai.Content{
	{Role: genai.RoleModel, Parts: []*genai.Part{
		{Text: "I'll fetch the weather for the three cities and convert each temperature in one go."},
		{FunctionCall: &genai.FunctionCall{Name: "execute_code", Args: map[string]any{"code": `from tools import get_weather, convert_temperature

report = {}
for city in ["Paris", "Oslo", "Lisbon"]:
    w = get_weather(city=city)
    f = convert_temperature(value=w["temp_c"], unit="F")
    report[city] = {"c": w["temp_c"], "f": f["value"], "conditions": w["conditions"]}
print(f"fetched {len(report)} cities")`}}},
	}},
	{Role: genai.RoleModel, Parts: []*genai.Part{
		{Text: "The data is in the sandbox; now I'll rank it, reusing the report variable."},
		{FunctionCall: &genai.FunctionCall{Name: "execute_code", Args: map[string]any{"code": `ranked = sorted(report.items(), key=lambda kv: kv[1]["c"], reverse=True)
for city, r in ranked:
    print(f"{city:7} {r['c']:5.1f} °C {r['f']:5.1f} °F  {r['conditions']}")
print("warmest:", ranked[0][0])`}}},
	}},
	genai.NewContentFromText("Lisbon is the warmest: 23 °C (73.4 °F) and sunny. Paris has 18.5 °C (65.3 °F) with light rain, and Oslo 4 °C (39.2 °F) under a clear sky.", genai.RoleModel),
}

func (*scriptedModel) Name() string { return "scripted" }

func (*scriptedModel) GenerateContent(_ context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		// The step is the number of model replies since the user's message.
		step := 0
		for _, c := range req.Contents {
			if c.Role == genai.RoleModel {
				step++
			} else if c.Role == genai.RoleUser && len(c.Parts) > 0 && c.Parts[0].Text != "" {
				step = 0
			}
		}
		if step >= len(script) {
			yield(nil, fmt.Errorf("the scripted model has no reply %d", step))
			return
		}
		yield(&model.LLMResponse{Content: script[step], TurnComplete: true}, nil)
	}
}
