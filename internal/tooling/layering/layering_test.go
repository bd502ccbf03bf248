package layering

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
)

const module = "github.com/adk-codemode/codemode"

// modules are the repository's Go modules whose packages take part in the
// layout, by directory from the repository's root: the root module (the
// core and the ADK Go v2 adapters) and the ADK Go v1 adapters, a module
// of its own because ADK Go v1 and v2 cannot be built together
// (docs/adk-versions.md).
var modules = []string{".", "adkv1"}

// layers ranks the repository's packages from the top of the README's
// table down, by import path below the root module's. A package may import
// only packages of a higher rank. Every package must be listed, so a new
// one takes a place on purpose.
var layers = map[string]int{
	"cmd/codemode":                      0,
	"cmd/codemode-demo":                 0,
	"cmd/codemode-sandbox":              0,
	"evidence":                          10,
	"mcpserver":                         10,
	"callbacks":                         10,
	"adkv1/callbacks":                   10,
	"toolset/openapi/e2e":               10,
	"plugin/codemode":                   20,
	"adkv1/plugin/codemode":             20,
	"toolset/openapi":                   20,
	"adkv1/toolset/openapi":             20,
	"openapi":                           25,
	"toolset/mcpcommand":                40,
	"adkv1/internal/fromv2":             20,
	"internal/host/hooklink":            30,
	"adkv1/internal/host/hooklink":      30,
	"render":                            30,
	"conformance":                       30,
	"fidelity":                          30,
	"schema":                            40,
	"backend/jail":                      50,
	"backend/unsandboxed":               50,
	"backend/remote":                    60,
	"backend/docker":                    60,
	"backend/warm":                      70,
	"internal/sandbox/wsserve":          50,
	"backend/jail/internal/floor":       60,
	"internal/sandbox/stage":            0,
	"internal/host/sandboxbin":          100,
	"internal/sandbox/initstage":        80,
	"internal/protocol/jailplan":        100,
	"internal/host/engine":              25,
	"sandboxserver":                     60,
	"internal/host/launch":              60,
	"internal/host/connect":             70,
	"internal/both/server":              70,
	"transport/transporttest":           70,
	"internal/testsupport/adksuite":     22,
	"internal/testsupport/sessionbench": 80,
	"internal/testsupport/escapeprobe":  80,
	"internal/protocol/wsproto":         70,
	"internal/protocol/wire":            80,
	"transport":                         90,
	"internal/sandbox/supervisor":       90,
	"internal/both/clip":                100,
	"internal/both/observe":             100,
	"egress":                            90,
	"internal/testsupport/fdcheck":      100,
	"internal/both/tailbuf":             100,
	"internal/tooling/layering":         100,
	"internal/tooling/apicheck":         100,
	"internal/tooling/release":          100,
	"internal/tooling/maketargets":      100,
	"internal/testsupport/hostcap":      110,
	"internal/testsupport/npmtest":      100,
	"internal/both/egressrelay":         100,
	"internal/testsupport/loopback":     110,
	"internal/both/syscallpolicy":       110,
}

// side says where a package's code runs, by its place under internal/:
// "sandbox" for internal/sandbox/ (the sandbox program, the jail's init,
// the supervisor, the WebSocket server), and for the code both sides run
// (internal/both/, internal/protocol/), which must run in a sandbox too;
// "host" for internal/host/ and for the library's packages outside
// internal/ (a sandbox runs none of them); "" for test support and
// tooling.
func side(pkg string) string {
	switch {
	case pkg == "": // another module's package
		return ""
	case strings.HasPrefix(pkg, "internal/sandbox/"), strings.HasPrefix(pkg, "internal/both/"), strings.HasPrefix(pkg, "internal/protocol/"):
		return "sandbox"
	case strings.HasPrefix(pkg, "internal/testsupport/"), strings.HasPrefix(pkg, "internal/tooling/"), strings.HasPrefix(pkg, "adkv1/internal/fromv2"):
		return ""
	case pkg == "transport": // the contract, which both sides speak
		return ""
	}
	return "host"
}

// to is an import path as the layout names it, below the root module's
// path, or "" for another module's package.
func to(imp string) string {
	if !strings.HasPrefix(imp, module+"/") {
		return ""
	}
	return strings.TrimPrefix(imp, module+"/")
}

// adkFree are packages that import no ADK package outside their tests:
// the engine and the OpenAPI core, which both ADK lines' adapters share.
var adkFree = map[string]bool{"internal/host/engine": true, "openapi": true}

// stdlibOnly are packages that import nothing but the standard library
// outside their tests: the contract, which every backend implements, is
// worth no dependency of its own.
var stdlibOnly = map[string]bool{"transport": true}

// standalone are packages that import, outside their tests, no package
// of this repository but the ones listed: the OpenAPI core and its ADK
// toolsets are of use to any program, any agent, with or without Code
// Mode.
var standalone = map[string][]string{
	"openapi":               nil,
	"toolset/openapi":       {"openapi"},
	"adkv1/toolset/openapi": {"openapi"},
}

func TestImportsRunDown(t *testing.T) {
	for _, dir := range modules {
		cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}|{{join .Imports " "}}|{{join .TestImports " "}} {{join .XTestImports " "}}`, "./...")
		cmd.Dir = filepath.Join("..", "..", "..", dir)
		out, err := cmd.Output()
		if err != nil {
			if _, statErr := exec.LookPath("go"); statErr != nil {
				hostcap.Missing(t, hostcap.GoCommand, "to check the package graph: ", statErr)
			}
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				t.Fatalf("go list in %s: %v\n%s", dir, err, ee.Stderr)
			}
			t.Fatalf("go list in %s: %v", dir, err)
		}
		for _, msg := range checkModule(string(out)) {
			t.Error(msg)
		}
	}
}

// checkModule returns what breaks the layout in a module's package list,
// one line per package: its import path, its imports, its tests' imports,
// separated by "|".
func checkModule(list string) []string {
	var bad []string
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		f := strings.SplitN(line, "|", 3)
		if len(f) != 3 {
			bad = append(bad, fmt.Sprintf("go list: unexpected line %q", line))
			continue
		}
		pkg := f[0]
		from := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
		rank, ok := layers[from]
		if !ok {
			bad = append(bad, fmt.Sprintf("package %s has no place in the layout: add it to the table here and to the README's", from))
			continue
		}
		for i, imp := range strings.Fields(f[1] + " " + f[2]) {
			if side(from) == "sandbox" && side(to(imp)) == "host" && i < len(strings.Fields(f[1])) {
				bad = append(bad, fmt.Sprintf("%s imports %s: code that runs in a sandbox imports no host-side code", from, to(imp)))
			}
			if adkFree[from] && i < len(strings.Fields(f[1])) && (imp == "google.golang.org/adk" || strings.HasPrefix(imp, "google.golang.org/adk/")) {
				bad = append(bad, fmt.Sprintf("%s imports %s: both ADK lines share it, so it imports no ADK package", from, imp))
			}
			if stdlibOnly[from] && i < len(strings.Fields(f[1])) && strings.Contains(strings.Split(imp, "/")[0], ".") {
				bad = append(bad, fmt.Sprintf("%s imports %s: it is the contract, and imports only the standard library", from, imp))
			}
			if !strings.HasPrefix(imp, module+"/") || imp == pkg {
				continue
			}
			to := strings.TrimPrefix(imp, module+"/")
			if allowed, ok := standalone[from]; ok && i < len(strings.Fields(f[1])) && !slices.Contains(allowed, to) {
				bad = append(bad, fmt.Sprintf("%s imports %s: it is of use without Code Mode and imports no package of it but %v", from, to, allowed))
			}
			if r, ok := layers[to]; ok && r <= rank {
				bad = append(bad, fmt.Sprintf("%s (layer %d) imports %s (layer %d): a package may import only packages below it", from, rank, to, r))
			}
			if line := adkLine(from); line != "" && adkLine(to) != "" && adkLine(to) != line {
				bad = append(bad, fmt.Sprintf("%s imports %s: the adapters of one ADK line may not import the other's", from, to))
			}
		}
	}
	return bad
}

// TestCheckModuleFindsBreaks feeds checkModule package lists that break
// the layout, so that a check that passes everything cannot go unnoticed.
func TestCheckModuleFindsBreaks(t *testing.T) {
	for _, c := range []struct {
		name, list, want string
	}{
		{"upward", module + "/schema|" + module + "/render|", "imports render (layer 30)"},
		{"sideways", module + "/backend/jail|" + module + "/backend/unsandboxed|", "imports backend/unsandboxed (layer 50)"},
		{"unlisted", module + "/newpkg||", "has no place in the layout"},
		{"across lines", module + "/adkv1/callbacks|" + module + "/plugin/codemode|", "the adapters of one ADK line may not import the other's"},
		{"toolset", module + "/toolset/openapi|" + module + "/schema|", "imports no package of it"},
		{"OpenAPI core", module + "/openapi|" + module + "/render|", "imports no package of it"},
		{"OpenAPI core on ADK", module + "/openapi|google.golang.org/adk/v2/tool|", "so it imports no ADK package"},
		{"contract", module + "/transport|go.opentelemetry.io/otel/metric|", "imports only the standard library"},
		{"contract on the repository", module + "/transport|" + module + "/internal/both/clip|", "imports only the standard library"},
		{"engine on ADK", module + "/internal/host/engine|google.golang.org/adk/v2/agent|", "so it imports no ADK package"},
		{"engine on ADK v1", module + "/internal/host/engine|google.golang.org/adk/tool|", "so it imports no ADK package"},
		{"sandbox on host", module + "/internal/sandbox/supervisor|" + module + "/internal/host/launch|", "code that runs in a sandbox imports no host-side code"},
		{"both on host", module + "/internal/both/server|" + module + "/backend/jail|", "code that runs in a sandbox imports no host-side code"},
		{"malformed", "no bars here", "unexpected line"},
	} {
		got := strings.Join(checkModule(c.list), "\n")
		if !strings.Contains(got, c.want) {
			t.Errorf("%s: checkModule(%q) = %q, want a complaint containing %q", c.name, c.list, got, c.want)
		}
	}
	if bad := checkModule(module + "/render|" + module + "/schema|" + module + "/backend/jail"); len(bad) != 0 {
		t.Errorf("a layout that runs down was refused: %v", bad)
	}
	if bad := checkModule(module + "/transport|context net/http|go.opentelemetry.io/otel/sdk/metric"); len(bad) != 0 {
		t.Errorf("a contract on the standard library, whose tests import more, was refused: %v", bad)
	}
	if bad := checkModule(module + "/toolset/openapi|" + module + "/openapi|" + module + "/render"); len(bad) != 0 {
		t.Errorf("an OpenAPI toolset on the core, whose tests import the renderer, was refused: %v", bad)
	}
}

// adkLine names the ADK line a package adapts to, or "" for the core.
func adkLine(pkg string) string {
	if strings.HasPrefix(pkg, "adkv1/") {
		return "v1"
	}
	for _, p := range v2Adapters {
		if pkg == p || strings.HasPrefix(pkg, p+"/") {
			return "v2"
		}
	}
	return ""
}

// v2Adapters are the root module's packages built on ADK Go v2, each with
// what lies below it.
var v2Adapters = []string{"plugin", "callbacks", "toolset", "cmd/codemode", "cmd/codemode-demo", "internal/host/hooklink", "evidence", "mcpserver"}
