package main

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpServeEnv makes the test binary a stdio MCP server (see TestMain), so
// that --mcp has a real server to start.
const mcpServeEnv = "CODEMODE_TEST_SERVE_MCP"

type forecastIn struct {
	City string `json:"city" jsonschema:"the city to forecast"`
	Days int    `json:"days,omitempty" jsonschema:"how many days ahead, 1 to 7"`
}

type forecastOut struct {
	TempC float64 `json:"temp_c" jsonschema:"temperature in Celsius"`
}

// serveTestMCP serves one tool over stdio until stdin closes.
func serveTestMCP() int {
	server := mcp.NewServer(&mcp.Implementation{Name: "forecast", Version: "v1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "get-forecast", Description: "The forecast for a city."},
		func(_ context.Context, _ *mcp.CallToolRequest, in forecastIn) (*mcp.CallToolResult, forecastOut, error) {
			return nil, forecastOut{TempC: 12}, nil
		})
	if err := server.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		return 1
	}
	return 0
}

// TestMCPInput: stubs, catalog and fidelity take a stdio MCP server's
// command, start it, read its tools through ADK's mcptoolset, and stop it.
func TestMCPInput(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(mcpServeEnv, "1")
	code, out, errs := runCLI(t, "", "catalog", "--mcp", exe)
	if code != 0 || !strings.Contains(out, "def get_forecast(*, city: str, days: int | None = ") || !strings.Contains(out, "the city to forecast") {
		t.Errorf("catalog --mcp: exit %d, stdout:\n%s\nstderr: %s", code, out, errs)
	}
	if !strings.Contains(out, "temp_c") {
		t.Errorf("catalog --mcp: the tool's output schema is missing:\n%s", out)
	}
	code, out, errs = runCLI(t, "", "stubs", "--mcp", exe)
	if code != 0 || !strings.Contains(out, "get_forecast.py") {
		t.Errorf("stubs --mcp: exit %d, stdout:\n%s\nstderr: %s", code, out, errs)
	}
	code, out, errs = runCLI(t, "", "fidelity", "--mcp", exe)
	if code != 0 || !strings.Contains(out, "get-forecast: 14 carried") {
		t.Errorf("fidelity --mcp: exit %d, stdout:\n%s\nstderr: %s", code, out, errs)
	}
	// A command that is no MCP server is an input error that names it.
	code, _, errs = runCLI(t, "", "fidelity", "--mcp", "/bin/true")
	if code != 2 || !strings.Contains(errs, `--mcp "/bin/true"`) {
		t.Errorf("fidelity --mcp /bin/true: exit %d, stderr %q; want 2 naming the command", code, errs)
	}
	code, _, errs = runCLI(t, "", "catalog", "--mcp", exe, "--decls", "x.json")
	if code == 0 || !strings.Contains(errs, "not several") {
		t.Errorf("two inputs: exit %d, stderr %q", code, errs)
	}
}
