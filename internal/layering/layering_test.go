package layering

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/adk-codemode/codemode"

// layers ranks the module's packages from the top of the README's table
// down. A package may import only packages of a higher rank. Every package
// of the module must be listed, so a new one takes a place on purpose.
var layers = map[string]int{
	"cmd/codemode":                0,
	"cmd/codemode-demo":           0,
	"cmd/codemode-sandbox":        0,
	"callbacks":                   1,
	"toolset/openapi/e2e":         1,
	"plugin/codemode":             2,
	"toolset/openapi":             2,
	"render":                      3,
	"conformance":                 3,
	"fidelity":                    3,
	"schema":                      4,
	"backend/jail":                5,
	"backend/unsandboxed":         5,
	"backend/remote":              6,
	"backend/docker":              6,
	"sandboxserver/wsserve":       5,
	"backend/jail/internal/floor": 6,
	"sandboxserver":               6,
	"transport/transporttest":     7,
	"transport/wsproto":           7,
	"transport/wire":              8,
	"transport":                   9,
	"internal/clip":               10,
	"internal/tailbuf":            10,
	"internal/layering":           10,
}

func TestImportsRunDown(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}|{{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}`, module+"/...").Output()
	if err != nil {
		t.Skipf("go list failed (the go command is needed to check the package graph): %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
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
		}
	}
}
