package codemode

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/mcptoolset"

	"github.com/adk-codemode/codemode/internal/testsupport/npmtest"
)

// everythingServer returns the path of the MCP reference server's entry
// point, installed under $CODEMODE_MCP_EVERYTHING_DIR, else the user's
// cache, with npm first if needed (internal/testsupport/npmtest); it skips the test
// when it cannot, or fails it when CODEMODE_REQUIRE_ALL=1.
func everythingServer(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("CODEMODE_MCP_EVERYTHING_DIR")
	if dir == "" {
		return npmtest.Everything(t)
	}
	return filepath.Join(npmtest.PackageIn(t, dir, npmtest.EverythingPackage, npmtest.EverythingVersion, npmtest.EverythingEntry), npmtest.EverythingEntry)
}

// TestMCPEverythingFromCode runs npm's MCP reference server over stdio
// through ADK's mcptoolset, and calls its tools from Python in the jail:
// plain content, a sum, structured output with its schema, and a tool that
// fails (its MCP result has isError set: it refuses a URL of a protocol it
// does not fetch, before fetching anything) and must raise a Python
// exception.
func TestMCPEverythingFromCode(t *testing.T) {
	main := everythingServer(t)
	server := exec.Command("node", main, "stdio")
	// The gzip tool fetches URLs: allow it no domain but a name that
	// resolves nowhere, so that nothing is ever fetched.
	server.Env = append(os.Environ(), "GZIP_ALLOWED_DOMAINS=invalid")
	// The toolset keeps its session, and so the server, for the process's
	// life: end the server with the test.
	t.Cleanup(func() {
		if server.Process != nil {
			_ = server.Process.Kill()
		}
	})
	all, err := mcptoolset.New(mcptoolset.Config{Transport: &mcp.CommandTransport{Command: server}})
	if err != nil {
		t.Fatal(err)
	}
	ts := tool.FilterToolset(all, tool.StringPredicate([]string{"echo", "get-sum", "get-structured-content", "gzip-file-as-resource"}))
	code := `import json
from tools import search

def find(raw):
    # The block names the tools; search finds them the way a model would.
    for hit in search(raw.replace("-", " "), limit=20):
        if hit["name"].rsplit(".", 1)[-1] == raw.replace("-", "_"):
            ns = {}
            exec(hit["import"], ns)
            return ns[raw.replace("-", "_")]
    raise LookupError(raw)

echo, get_sum, weather, gzip = (find(n) for n in ("echo", "get-sum", "get-structured-content", "gzip-file-as-resource"))
print("echo:", json.dumps(echo(message="hello from the jail")))
print("sum:", json.dumps(get_sum(a=2, b=40)))
print("weather:", json.dumps(weather(location="Chicago")))
from tools import describe
doc = describe([h["name"] for h in search("structured content", limit=5) if h["name"].endswith("get_structured_content")][0])
print("described:", "Returns:" in doc and "temperature" in doc)
try:
    gzip(name="x.gz", data="ftp://127.0.0.1/x", outputType="resource")
    print("gzip: no error")
except Exception as e:
    print("gzip raised:", type(e).__name__, "Tool execution failed" in str(e))
`
	m := newScript().on("go", run(code), say("done"))
	f := newFixture(t, m, fixtureConfig{cfg: Config{Toolsets: []tool.Toolset{ts}, DisableToolResultArtifacts: true}})
	out := outputs(f.turn(t.Context(), "s1", "go"))
	if len(out) != 1 {
		t.Fatalf("got %d results, want 1", len(out))
	}
	stdout, _ := out[0]["stdout"].(string)
	stderr, _ := out[0]["stderr"].(string)
	for _, want := range []string{
		`echo: "Echo: hello from the jail"`,
		`sum: "The sum of 2 and 40 is 42."`,
		`weather: {"conditions": "Light rain / drizzle", "humidity": 82, "temperature": 36}`,
		"described: True",
		"gzip raised: ToolError True",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s\nstderr:\n%s", want, stdout, stderr)
		}
	}
}

// TestMCPServerGoneLeavesOthers: once the MCP reference server is gone,
// its toolset can no longer list its tools (ADK's reconnection cannot
// reuse the command); the next turns go on with the other tools, the
// model is told the namespace is unavailable, and the run does not fail.
func TestMCPServerGoneLeavesOthers(t *testing.T) {
	main := everythingServer(t)
	server := exec.Command("node", main, "stdio")
	t.Cleanup(func() {
		if server.Process != nil {
			_ = server.Process.Kill()
		}
	})
	all, err := mcptoolset.New(mcptoolset.Config{Transport: &mcp.CommandTransport{Command: server}})
	if err != nil {
		t.Fatal(err)
	}
	everything := tool.FilterToolset(all, tool.StringPredicate([]string{"echo"}))
	good := &echoToolset{label: "good"}
	m := newScript().
		on("before", run(`from tools.everything import echo
print(echo(message="up"))`), say("ok")).
		on("after", run(`from tools.good import echo
print(echo(word="still")["said"])`), say("ok"))
	f := newFixture(t, m, fixtureConfig{cfg: Config{
		Toolsets:                   []tool.Toolset{everything, good},
		Namespaces:                 []Namespace{{Toolset: everything, Name: "everything"}, {Toolset: good, Name: "good"}},
		DisableToolResultArtifacts: true,
	}})
	if out := outputs(f.turn(t.Context(), "s1", "before")); len(out) != 1 || !strings.Contains(out[0]["stdout"].(string), "up") {
		t.Fatalf("before the server ended: %v", out)
	}
	// The MCP client waits for the command itself once its connection
	// closes; the test only kills it.
	if err := server.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	out := outputs(f.turn(t.Context(), "s1", "after"))
	if len(out) != 1 || out[0]["stdout"] != "good:still\n" {
		t.Errorf("after the server ended, the other toolset's call gave %v", out)
	}
	reqs := m.requests()
	if last := systemText(reqs[len(reqs)-1]); !strings.Contains(last, "Unavailable for now: tools.everything") {
		t.Errorf("the instruction after the server ended does not say tools.everything is unavailable:\n%s", last)
	}
}
