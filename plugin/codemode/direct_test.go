package codemode

import (
	"strings"
	"testing"

	"google.golang.org/genai"

	"google.golang.org/adk/v2/model"
)

// TestDirect: a tool named in Config.Direct is declared to the model
// besides execute_code and runs when the model calls it directly, while
// code can still call it; the block says when to use which.
func TestDirect(t *testing.T) {
	m := newScript().
		on("direct", callTool("get_weather", map[string]any{"city": "Paris"}), say("done")).
		on("code", run(`from tools import get_weather
print(get_weather(city="Oslo")["temp_c"])`), say("done"))
	f := newFixture(t, m, fixtureConfig{cfg: Config{Tools: weatherTools(t), Direct: []string{"get_weather"}}})
	evs := f.turn(t.Context(), "s1", "direct")
	var resp *genai.FunctionResponse
	for _, ev := range evs {
		if ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			if p.FunctionResponse != nil && p.FunctionResponse.Name == "get_weather" {
				resp = p.FunctionResponse
			}
		}
	}
	if resp == nil || resp.Response["temp_c"] == nil {
		t.Fatalf("the direct call's response %+v, want the weather", resp)
	}
	req := m.requests()[0]
	var declared []string
	for _, gt := range req.Config.Tools {
		for _, d := range gt.FunctionDeclarations {
			declared = append(declared, d.Name)
		}
	}
	if strings.Join(declared, ",") != ToolName+",get_weather" {
		t.Errorf("declared %v, want execute_code and get_weather", declared)
	}
	var si strings.Builder
	for _, p := range req.Config.SystemInstruction.Parts {
		si.WriteString(p.Text)
	}
	if !strings.Contains(si.String(), "<routing>You may also call `get_weather` directly") {
		t.Errorf("the block has no routing hint:\n%s", si.String())
	}
	out := outputs(f.turn(t.Context(), "s1", "code"))
	if len(out) != 1 || strings.TrimSpace(out[0]["stdout"].(string)) == "" {
		t.Errorf("the code's call: %v", out)
	}
}

func TestDirectUnknownName(t *testing.T) {
	_, err := New(Config{Tools: weatherTools(t), Direct: []string{"get_wether"}})
	if err == nil || !strings.Contains(err.Error(), `Config.Direct names "get_wether", which is not one of Config.Tools`) {
		t.Errorf("err = %v, want the unknown name refused", err)
	}
}

// callTool replies with a direct call of the tool name.
func callTool(name string, args map[string]any) step {
	return func(*model.LLMRequest) *genai.Content {
		return &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{Name: name, Args: args}}}}
	}
}
