package layering

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/adk-codemode/codemode/internal/hostcap"
)

// hooks are the packages whose init functions take over a re-executed
// program: the jail's init stage and the supervisor. Go initializes a
// package only once all of its dependencies are, and among the packages
// that are ready, in the order of their import paths; a hook that depends
// on a package that sorts late therefore runs only after most of a large
// program's package initializers, at every cold start of a jail.
var hooks = []string{"backend/jail/internal/initstage", "internal/supervisor"}

// lateInit are packages that a hook must not depend on, directly or
// not, with why.
var lateInit = map[string]string{
	"net":           "it waits for vendor/golang.org/x/net/dns/dnsmessage, which sorts after every other package",
	"net/http":      "it needs net, crypto/tls and much more",
	"net/url":       "it sorts after github.com, go.opentelemetry.io, golang.org and google.golang.org",
	"crypto/tls":    "it needs net and crypto/x509",
	"crypto/x509":   "it needs net and the certificate machinery",
	"os/exec":       "it needs path/filepath",
	"path/filepath": "it needs os and strings and sorts after github.com, go.opentelemetry.io, golang.org and google.golang.org: package path does for Linux paths",
	"log":           "it sorts after github.com, go.opentelemetry.io and golang.org",
	"log/slog":      "it sorts after github.com, go.opentelemetry.io, golang.org and google.golang.org (internal/wire imports it)",
	"regexp":        "it has init work and sorts after the third-party packages",
	"text/template": "it needs net/url and reflect's whole machinery",
	"html/template": "it needs text/template",
	"mime":          "it has init work and sorts after the third-party packages",
	"testing":       "it needs regexp and more",
}

// hookDeps are the packages a hook may depend on outside the standard
// library: each sorts early enough, and has been measured (docs/benchmarks.md).
var hookDeps = map[string]bool{
	"golang.org/x/sys/unix":                     true,
	"golang.org/x/net/bpf":                      true,
	module + "/internal/clip":                   true,
	module + "/internal/egressrelay":            true,
	module + "/internal/supervisor":             true,
	module + "/internal/syscallpolicy":          true,
	module + "/backend/jail/internal/initstage": true,
}

// TestHooksImportEarlyPackages holds the hooks' dependencies to packages
// that Go initializes early, so that a cold start of a jail from any
// program reaches the hook before most of the program's initializers (see
// internal/supervisor's package documentation). TestHookRunsEarly in the
// init stage's package checks the order itself in a binary that links the
// late packages.
func TestHooksImportEarlyPackages(t *testing.T) {
	for _, h := range hooks {
		// The jail runs on linux/amd64 only: list what it builds there.
		cmd := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}|{{.Standard}}|{{join .Imports " "}}`, "./"+h)
		cmd.Dir = filepath.Join("..", "..")
		cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=0")
		out, err := cmd.Output()
		if err != nil {
			if _, statErr := exec.LookPath("go"); statErr != nil {
				hostcap.Missing(t, hostcap.GoCommand, "to list the hooks' dependencies: ", statErr)
			}
			t.Fatalf("go list %s: %v", h, err)
		}
		imports := map[string][]string{}
		standard := map[string]bool{}
		var order []string
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			f := strings.SplitN(line, "|", 3)
			if len(f) != 3 {
				t.Fatalf("go list: unexpected line %q", line)
			}
			imports[f[0]] = strings.Fields(f[2])
			standard[f[0]] = f[1] == "true"
			order = append(order, f[0])
		}
		for _, dep := range order {
			why, late := lateInit[dep]
			switch {
			case late:
			case strings.HasPrefix(dep, "vendor/"):
				why = "the standard library's vendored packages sort after every other package"
			case !standard[dep] && !hookDeps[dep]:
				why = "only the standard library's early packages and those of hookDeps here are known to initialize early: check its place in the init order (GODEBUG=inittrace=1) before adding it"
			default:
				continue
			}
			t.Errorf("%s depends on %s (%s): %s", h, dep, strings.Join(importChain(imports, module+"/"+h, dep), " → "), why)
		}
	}
}

// importChain is a shortest chain of imports from one package to another.
func importChain(imports map[string][]string, from, to string) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == to {
			var chain []string
			for ; p != ""; p = prev[p] {
				chain = append([]string{strings.TrimPrefix(p, module+"/")}, chain...)
			}
			return chain
		}
		for _, q := range imports[p] {
			if _, seen := prev[q]; !seen {
				prev[q] = p
				queue = append(queue, q)
			}
		}
	}
	return []string{from, "…", to}
}
