package codemode

import (
	"context"
	"strings"
	"testing"

	eng "github.com/adk-codemode/codemode/internal/host/engine"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/adk/v2/tool/mcptoolset"
)

type weatherIn struct {
	City string `json:"city"`
}

type weatherOut struct {
	TempC float64 `json:"temp_c" jsonschema:"temperature in Celsius"`
}

// TestStubsDescribeWhatCodeReceives checks that a tool's stub documents the
// shape its result really has when code receives it: an MCP tool (a real
// in-memory MCP server behind ADK's mcptoolset) wraps its structured result
// as {"output": ...} and a functiontool any output that is not an object
// as {"result": ...}; code gets what is inside, as the stub says.
func TestStubsDescribeWhatCodeReceives(t *testing.T) {
	clientT, serverT := mcp.NewInMemoryTransports()
	server := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "v1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "get_weather", Description: "Weather for a city."},
		func(_ context.Context, _ *mcp.CallToolRequest, in weatherIn) (*mcp.CallToolResult, weatherOut, error) {
			return nil, weatherOut{TempC: 21.5}, nil
		})
	ss, err := server.Connect(t.Context(), serverT, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	ts, err := mcptoolset.New(mcptoolset.Config{Transport: clientT})
	if err != nil {
		t.Fatal(err)
	}
	ctx := fakeToolContext(t.Context())
	mcpTools, err := ts.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	object, err := functiontool.New(functiontool.Config{Name: "local_weather", Description: "Weather here."},
		func(agent.Context, weatherIn) (weatherOut, error) { return weatherOut{TempC: 3}, nil })
	if err != nil {
		t.Fatal(err)
	}
	scalar, err := functiontool.New(functiontool.Config{Name: "count", Description: "Count."},
		func(agent.Context, weatherIn) (int, error) { return 7, nil })
	if err != nil {
		t.Fatal(err)
	}
	all := []namespacedTool{{t: object}, {t: scalar}}
	for _, mt := range mcpTools {
		all = append(all, namespacedTool{ns: "mcp", t: mt})
	}
	s, err := buildSurface(all, surfaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, file, annotation, returns, key string
		code                                 any
	}{
		{"mcp.get_weather", "tools/mcp/get_weather.py", "-> dict[str, Any]:", "temp_c: float (required) - temperature in Celsius", "output", map[string]any{"temp_c": 21.5}},
		{"local_weather", "tools/local_weather.py", "-> dict[str, Any]:", "temp_c: float (required) - temperature in Celsius", "", map[string]any{"temp_c": 3.0}},
		{"count", "tools/count.py", "-> int:", "", "result", int64(7)},
	} {
		stub := string(s.Files[tc.file])
		if !strings.Contains(stub, tc.annotation) {
			t.Errorf("%s: stub lacks %q:\n%s", tc.path, tc.annotation, stub)
		}
		if tc.returns != "" && (!strings.Contains(stub, "Returns:\n        "+tc.returns) || !strings.Contains(stub, "temp_c: float")) {
			t.Errorf("%s: stub lacks the Returns line %q or the result's fields:\n%s", tc.path, tc.returns, stub)
		}
		if tc.returns == "" && strings.Contains(stub, "Returns:") {
			t.Errorf("%s: a Returns section that only repeats the annotation:\n%s", tc.path, stub)
		}
		st := s.Tools[tc.path]
		if st.ResultKey != tc.key {
			t.Errorf("%s: result key %q, want %q", tc.path, st.ResultKey, tc.key)
		}
		res, err := st.Tool.Run(fakeToolContext(t.Context()), map[string]any{"city": "Paris"})
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		// What code gets: the tool's result taken out of its wrapper, as
		// JSON decodes it.
		var e engine
		got := e.resultValue(t.Context(), &execCall{}, st, "", eng.ResultNaming{}, res)
		if diff := cmp.Diff(tc.code, got); diff != "" {
			t.Errorf("%s: code gets (-want +got):\n%s", tc.path, diff)
		}
	}
}
