package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/genai"

	"github.com/adk-codemode/codemode/internal/testsupport/npmtest"
	"github.com/adk-codemode/codemode/toolset/openapi"
)

// GitHub's REST description, as toolset/openapi's tests and .ci/run pin
// it: $CODEMODE_OCTOKIT_DIR, else codemode-test/octokit-openapi@VERSION
// under the user's cache.
const (
	octokitPackage = "@octokit/openapi"
	octokitVersion = "23.0.2"
	octokitFile    = "node_modules/@octokit/openapi/generated/api.github.com.json"
)

// listSize is what testdata/mcpclient/toollist.mjs prints.
type listSize struct {
	Bytes int `json:"bytes"`
	Tools int `json:"tools"`
}

// TestMCPToolListSize measures the tools/list a client receives through
// `codemode mcp` in front of server-everything, server-filesystem and
// GitHub's REST description, against the sum of their own lists: the two
// servers' as the TypeScript SDK's client receives them, and GitHub's
// 1,223 operations as the MCP tools a server declaring each operation
// would list (the declarations toolset/openapi makes, as name,
// description and input schema). It logs the figures docs/mcp-server.md
// quotes, in bytes of JSON.
func TestMCPToolListSize(t *testing.T) {
	sdk := npmPackage(t, sdkPackage, sdkVersion, sdkEntry)
	fx := mcpFixture(t)
	dir := os.Getenv("CODEMODE_OCTOKIT_DIR")
	if dir == "" {
		dir = npmtest.CacheDir("octokit-openapi@" + octokitVersion)
	}
	github := filepath.Join(npmtest.PackageIn(t, dir, octokitPackage, octokitVersion, octokitFile), octokitFile)
	script, err := filepath.Abs(filepath.Join("testdata", "mcpclient", "toollist.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	measure := func(command ...string) listSize {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
		defer cancel()
		var stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, "node", append([]string{script, sdk}, command...)...)
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("tools/list of %v: %v\n%s", command, err, stderr.String())
		}
		var n listSize
		if err := json.Unmarshal(out, &n); err != nil {
			t.Fatalf("tools/list of %v: %v: %s", command, err, out)
		}
		return n
	}
	everything := measure("node", fx.everything, "stdio")
	files := measure("node", filepath.Join(npmPackage(t, filesystemPackage, filesystemVersion, filesystemEntry), filesystemEntry), fx.notesDir)
	front := measure(append([]string{fx.bin}, "mcp", "--backend", fx.backend,
		"--mcp", "everything=node "+fx.everything+" stdio",
		"--mcp", "files=node "+filepath.Join(npmPackage(t, filesystemPackage, filesystemVersion, filesystemEntry), filesystemEntry)+" "+fx.notesDir,
		"--openapi", "github="+github)...)

	// GitHub's operations as direct MCP tools.
	ts, err := openapi.New(t.Context(), openapi.Config{Name: "github", File: github})
	if err != nil {
		t.Fatal(err)
	}
	tools, err := ts.Tools(nil)
	if err != nil {
		t.Fatal(err)
	}
	var direct mcp.ListToolsResult
	for _, tl := range tools {
		d, ok := tl.(interface {
			Declaration() *genai.FunctionDeclaration
		})
		if !ok {
			t.Fatalf("the GitHub tool %s has no declaration", tl.Name())
		}
		decl := d.Declaration()
		direct.Tools = append(direct.Tools, &mcp.Tool{Name: decl.Name, Description: decl.Description, InputSchema: decl.ParametersJsonSchema})
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // as JSON.stringify writes it
	if err := enc.Encode(struct {
		Tools []*mcp.Tool `json:"tools"`
	}{direct.Tools}); err != nil {
		t.Fatal(err)
	}
	gh := listSize{Bytes: b.Len() - 1, Tools: len(direct.Tools)}

	sum := everything.Bytes + files.Bytes + gh.Bytes
	t.Logf("server-everything's own tools/list: %d bytes, %d tools", everything.Bytes, everything.Tools)
	t.Logf("server-filesystem's own tools/list: %d bytes, %d tools", files.Bytes, files.Tools)
	t.Logf("GitHub's operations as MCP tools: %d bytes, %d tools", gh.Bytes, gh.Tools)
	t.Logf("sum: %d bytes, %d tools", sum, everything.Tools+files.Tools+gh.Tools)
	t.Logf("through codemode mcp: %d bytes, %d tools (%.2f %% of the sum)", front.Bytes, front.Tools, 100*float64(front.Bytes)/float64(sum))
	if front.Tools != 3 || front.Bytes*100 > sum {
		t.Errorf("through codemode mcp: %d tools in %d bytes; want 3 tools, under 1 %% of the %d bytes of the upstreams' own lists", front.Tools, front.Bytes, sum)
	}
	if gh.Tools < 1000 {
		t.Errorf("GitHub's description gave %d tools; want its 1,223 operations", gh.Tools)
	}
}
