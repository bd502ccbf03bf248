package e2e_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/tools/txtar"
	"google.golang.org/genai"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/artifact"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/adk/v2/tool/mcptoolset"

	"github.com/adk-codemode/codemode/plugin/codemode"
	"github.com/adk-codemode/codemode/toolset/openapi"
)

var update = flag.Bool("update", false, "rewrite the wanted blocks of testdata/blocks/*.txtar")

type cityArgs struct {
	City string `json:"city" jsonschema:"The city, such as Paris."`
}

type convertArgs struct {
	Amount float64 `json:"amount" jsonschema:"The amount to convert."`
	From   string  `json:"from" jsonschema:"ISO 4217 code of the amount's currency."`
	To     string  `json:"to" jsonschema:"ISO 4217 code to convert to."`
}

type noteArgs struct {
	Text string `json:"text" jsonschema:"What to remember."`
}

type supplierArgs struct {
	Country string `json:"country" jsonschema:"ISO 3166 country code."`
}

type supplier struct {
	Name    string `json:"name"`
	Country string `json:"country"`
}

type sumArgs struct {
	A float64 `json:"a" jsonschema:"First addend."`
	B float64 `json:"b" jsonschema:"Second addend."`
}

type sumOut struct {
	Sum float64 `json:"sum" jsonschema:"The sum."`
}

type echoArgs struct {
	Message string `json:"message" jsonschema:"The message to echo."`
}

// mixedToolsets are the tools of an agent as a newcomer builds one: four Go
// tools, an MCP server's tools and an OpenAPI document's operations.
func mixedToolsets(t *testing.T) ([]tool.Tool, []tool.Toolset, []codemode.Namespace) {
	t.Helper()
	must := func(tl tool.Tool, err error) tool.Tool {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return tl
	}
	tools := []tool.Tool{
		must(functiontool.New(functiontool.Config{Name: "get_weather", Description: "Current weather of a city."},
			func(agent.Context, cityArgs) (map[string]any, error) { return map[string]any{"temp_c": 18}, nil })),
		must(functiontool.New(functiontool.Config{Name: "convert_currency", Description: "Convert an amount between currencies at today's rate."},
			func(agent.Context, convertArgs) (map[string]any, error) { return map[string]any{"amount": 1}, nil })),
		must(functiontool.New(functiontool.Config{Name: "remember", Description: "Keep a note for later turns."},
			func(agent.Context, noteArgs) (map[string]any, error) { return map[string]any{"ok": true}, nil })),
		must(functiontool.New(functiontool.Config{Name: "list_suppliers", Description: "List the suppliers of a country."},
			func(agent.Context, supplierArgs) ([]supplier, error) { return nil, nil })),
	}
	clientT, serverT := mcp.NewInMemoryTransports()
	server := mcp.NewServer(&mcp.Implementation{Name: "everything", Version: "v1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "get-sum", Description: "Add two numbers."},
		func(_ context.Context, _ *mcp.CallToolRequest, in sumArgs) (*mcp.CallToolResult, sumOut, error) {
			return nil, sumOut{Sum: in.A + in.B}, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "echo", Description: "Echo a message back."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Message}}}, nil, nil
		})
	ss, err := server.Connect(t.Context(), serverT, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	mcpSet, err := mcptoolset.New(mcptoolset.Config{Transport: clientT})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := os.ReadFile(document(t, "petstore.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	pets, err := openapi.New(t.Context(), openapi.Config{Spec: spec, BaseURL: "http://127.0.0.1:1/v1"})
	if err != nil {
		t.Fatal(err)
	}
	return tools, []tool.Toolset{mcpSet, pets}, []codemode.Namespace{{Toolset: mcpSet, Name: "everything"}, {Toolset: pets, Name: "pets"}}
}

// firstRequest runs one turn of an agent with the plugin and returns what
// the model read first: the system instruction and execute_code's
// description.
func firstRequest(t *testing.T, cfg codemode.Config, artifacts bool) (instruction, description string) {
	t.Helper()
	p, err := codemode.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	m := &oneBlockModel{code: "pass"}
	a, err := llmagent.New(llmagent.Config{Name: "assistant", Model: m, Instruction: "Use the tools."})
	if err != nil {
		t.Fatal(err)
	}
	rc := runner.Config{
		AppName: "blocks", Agent: a, SessionService: session.InMemoryService(),
		PluginConfig: runner.PluginConfig{Plugins: []*plugin.Plugin{p}}, AutoCreateSession: true,
	}
	if artifacts {
		rc.ArtifactService = artifact.InMemoryService()
	}
	r, err := runner.New(rc)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range r.Run(t.Context(), "user", "s1", genai.NewContentFromText("go", genai.RoleUser), agent.RunConfig{}) {
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.reqs) == 0 {
		t.Fatal("no model request")
	}
	req := m.reqs[0]
	for _, part := range req.Config.SystemInstruction.Parts {
		instruction += part.Text
	}
	for _, gt := range req.Config.Tools {
		for _, d := range gt.FunctionDeclarations {
			if d.Name == codemode.ToolName {
				description = d.Description
			}
		}
	}
	return instruction, description
}

// hostLines are the elements of the block that depend on the machine: the
// interpreter's version and the packages it has.
var hostLines = regexp.MustCompile(`(?s)\n  <python-version>[^\n]*</python-version>|\n  <installed-packages>.*?</installed-packages>`)

// TestGoldenBlocks keeps what the model reads of a mixed agent (Go tools,
// an MCP server, an OpenAPI document), with an artifact service and
// without, as goldens: every change to it is reviewed as a diff. The
// interpreter's version and packages, which depend on the machine, are
// left out.
func TestGoldenBlocks(t *testing.T) {
	requireJail(t)
	for _, tc := range []struct {
		name      string
		artifacts bool
		reason    string
	}{
		{"mixed_artifacts", true, "A mixed agent with an artifact service: the artifact tools in the tools package, the two parameters every tool gets described once in the how-to-use text, the execute_code description naming save_artifact. The OpenAPI operations show the body their success response declares as their return (list_pets a list, show_pet_by_id and create_pet a dict), or Any when it declares none, a list's item fields under an \"each item:\" line. The execute_code description says what a timeout does to the code's state and names the block budget."},
		{"mixed_no_artifacts", false, "The same agent without an artifact service: nothing about artifacts anywhere, and the description says files last for the turn. The OpenAPI operations show the body their success response declares as their return (list_pets a list, show_pet_by_id and create_pet a dict), or Any when it declares none, a list's item fields under an \"each item:\" line. The execute_code description says what a timeout does to the code's state and names the block budget."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tools, sets, names := mixedToolsets(t)
			instruction, description := firstRequest(t, codemode.Config{Tools: tools, Toolsets: sets, Namespaces: names}, tc.artifacts)
			block := instruction[strings.Index(instruction, "<code-mode>"):]
			whole := len([]rune(block))
			block = hostLines.ReplaceAllString(block, "")
			t.Logf("%s: the block is %d characters (%d with this machine's Python version and packages), the execute_code description %d",
				tc.name, len([]rune(block)), whole, len([]rune(description)))
			path := filepath.Join("testdata", "blocks", tc.name+".txtar")
			got := &txtar.Archive{Files: []txtar.File{
				{Name: "reason", Data: []byte(tc.reason + "\n")},
				{Name: "block", Data: []byte(block + "\n")},
				{Name: "description", Data: []byte(description + "\n")},
			}}
			if *update {
				if err := os.WriteFile(path, txtar.Format(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := txtar.ParseFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to write it)", err)
			}
			if diff := cmp.Diff(string(txtar.Format(want)), string(txtar.Format(got))); diff != "" {
				t.Errorf("%s (-want +got); run with -update if the change is meant:\n%s", path, diff)
			}
		})
	}
}
