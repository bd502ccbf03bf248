package codemode

import (
	"context"
	"strings"
	"testing"

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
// as {"output": ...}; a functiontool returns an object output as it is and
// wraps any other output as {"result": ...}.
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
	}{
		{"mcp.get_weather", "tools/mcp/get_weather.py", "-> dict[str, dict[str, Any]]:", "{'output': dict[str, Any]}", "output"},
		{"local_weather", "tools/local_weather.py", "-> dict[str, Any]:", "dict[str, Any]", "temp_c"},
		{"count", "tools/count.py", "-> dict[str, int]:", "{'result': int}", "result"},
	} {
		stub := string(s.files[tc.file])
		if !strings.Contains(stub, tc.annotation) || !strings.Contains(stub, "Returns:\n        "+tc.returns) {
			t.Errorf("%s: stub lacks %q or the Returns line %q:\n%s", tc.path, tc.annotation, tc.returns, stub)
		}
		if !strings.Contains(stub, "temp_c: float") && tc.key != "result" {
			t.Errorf("%s: stub lacks the result's fields:\n%s", tc.path, stub)
		}
		st := s.tools[tc.path]
		res, err := st.tool.Run(fakeToolContext(t.Context()), map[string]any{"city": "Paris"})
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		if _, ok := res[tc.key]; !ok || len(res) != 1 {
			t.Errorf("%s: result %v, want the one key %q the stub documents", tc.path, res, tc.key)
		}
	}
}
