package layering

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/adk-codemode/codemode"

// modules are the repository's Go modules whose packages take part in the
// layout, by directory from the repository's root. The ADK adapters are
// modules of their own because ADK Go v1 and v2 cannot be built together
// (docs/adk-versions.md).
var modules = []string{".", "adk", "adk/v2"}

// layers ranks the repository's packages from the top of the README's
// table down, by import path below the root module's. A package may import
// only packages of a higher rank. Every package must be listed, so a new
// one takes a place on purpose.
var layers = map[string]int{
	"adk/cmd/codemode":                0,
	"adk/cmd/codemode-demo":           0,
	"adk/v2/cmd/codemode-demo":        0,
	"cmd/codemode-sandbox":            0,
	"adk/callbacks":                   1,
	"adk/v2/callbacks":                1,
	"adk/toolset/openapi/e2e":         1,
	"adk/v2/toolset/openapi/e2e":      1,
	"adk/plugin/codemode":             2,
	"adk/v2/plugin/codemode":          2,
	"adk/toolset/openapi":             2,
	"adk/v2/toolset/openapi":          2,
	"adk/v2/internal/fromv1":          2,
	"render":                          3,
	"conformance":                     3,
	"fidelity":                        3,
	"schema":                          4,
	"backend/jail":                    5,
	"backend/unsandboxed":             5,
	"backend/remote":                  6,
	"backend/docker":                  6,
	"sandboxserver/wsserve":           5,
	"backend/jail/internal/floor":     6,
	"backend/jail/internal/initstage": 6,
	"sandboxserver":                   6,
	"transport/transporttest":         7,
	"transport/wsproto":               7,
	"transport/wire":                  8,
	"transport":                       9,
	"internal/supervisor":             9,
	"internal/clip":                   10,
	"internal/fdcheck":                10,
	"internal/tailbuf":                10,
	"internal/layering":               10,
}

func TestImportsRunDown(t *testing.T) {
	for _, dir := range modules {
		cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}|{{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}`, "./...")
		cmd.Dir = filepath.Join("..", "..", dir)
		out, err := cmd.Output()
		if err != nil {
			if _, statErr := exec.LookPath("go"); statErr != nil {
				t.Skipf("the go command is needed to check the package graph: %v", statErr)
			}
			t.Fatalf("go list in %s: %v", dir, err)
		}
		checkModule(t, string(out))
	}
}

func checkModule(t *testing.T, list string) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		pkg, imports, _ := strings.Cut(line, "|")
		from := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
		rank, ok := layers[from]
		if !ok {
			t.Errorf("package %s has no place in the layout: add it to the table here and to the README's", from)
			continue
		}
		for _, imp := range strings.Fields(imports) {
			if !strings.HasPrefix(imp, module+"/") || imp == pkg {
				continue
			}
			to := strings.TrimPrefix(imp, module+"/")
			if r, ok := layers[to]; ok && r <= rank {
				t.Errorf("%s (layer %d) imports %s (layer %d): a package may import only packages below it", from, rank, to, r)
			}
			if line := adkLine(from); line != "" && adkLine(to) != "" && adkLine(to) != line {
				t.Errorf("%s imports %s: the adapters of one ADK line may not import the other's", from, to)
			}
		}
	}
}

// adkLine names the ADK line a package adapts to, or "" for the core.
func adkLine(pkg string) string {
	switch {
	case strings.HasPrefix(pkg, "adk/v2/"):
		return "v2"
	case strings.HasPrefix(pkg, "adk/"):
		return "v1"
	}
	return ""
}
