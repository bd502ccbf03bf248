package openapi

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
	"github.com/adk-codemode/codemode/render"
)

// GitHub's REST description, from the npm package @octokit/openapi at a
// pinned version. .ci/run installs it; the test installs it itself when
// npm is at hand.
const (
	octokitPackage = "@octokit/openapi"
	octokitVersion = "23.0.2"
	octokitFile    = "node_modules/@octokit/openapi/generated/api.github.com.json"
)

// octokitDir is where the package is installed: $CODEMODE_OCTOKIT_DIR, else
// a directory in the user's cache.
func octokitDir() string {
	if d := os.Getenv("CODEMODE_OCTOKIT_DIR"); d != "" {
		return d
	}
	c, err := os.UserCacheDir()
	if err != nil {
		c = os.TempDir()
	}
	return filepath.Join(c, "codemode-test", "octokit-openapi@"+octokitVersion)
}

var (
	githubOnce sync.Once
	githubData []byte
	githubErr  string
)

// githubDescription returns the document, installing it first if needed;
// it skips the test when it cannot, or fails it when CODEMODE_REQUIRE_ALL=1.
func githubDescription(tb testing.TB) []byte {
	tb.Helper()
	githubOnce.Do(func() {
		dir := octokitDir()
		path := filepath.Join(dir, octokitFile)
		if _, err := os.Stat(path); err != nil {
			if _, err := exec.LookPath("npm"); err != nil {
				githubErr = "npm is not installed"
			} else {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				defer cancel()
				cmd := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--prefix", dir, octokitPackage+"@"+octokitVersion)
				if out, err := cmd.CombinedOutput(); err != nil {
					githubErr = "npm install failed: " + err.Error() + ": " + strings.TrimSpace(string(out))
				}
			}
		}
		if githubErr == "" {
			var err error
			if githubData, err = os.ReadFile(path); err != nil {
				githubErr = err.Error()
			}
		}
	})
	if githubErr != "" {
		hostcap.Missing(tb, hostcap.NPM, "GitHub's REST description: "+githubErr+"; install it with\n\tnpm install --prefix "+
			octokitDir()+" "+octokitPackage+"@"+octokitVersion+"\nor point CODEMODE_OCTOKIT_DIR at such an install")
	}
	return githubData
}

// registry renders a toolset's tools as Code Mode does.
func registry(tb testing.TB, ts *API) *render.Registry {
	tb.Helper()
	list := ts.Ops()
	rt := make([]render.Tool, len(list))
	for i, tl := range list {
		rt[i] = render.Tool{Namespace: ts.Name(), Declaration: tl.Declaration()}
	}
	reg, err := render.NewRegistry(rt)
	if err != nil {
		tb.Fatalf("render.NewRegistry: %v", err)
	}
	return reg
}

func TestGitHubDescription(t *testing.T) {
	data := githubDescription(t)
	ts := load(t, Config{Spec: data, Name: "github", Auth: map[string]Credential{}})

	// Every operation becomes a tool, and keeps every parameter it
	// declares (but the headers the specification says to ignore).
	var raw struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	byOp := map[string]*Op{}
	list := ts.Ops()
	for _, tl := range list {
		o := tl
		byOp[o.method+" "+o.path] = o
	}
	ops := 0
	for path, item := range raw.Paths {
		for m := range item {
			if !slices.Contains(methods, m) {
				continue
			}
			ops++
			o := byOp[strings.ToUpper(m)+" "+path]
			if o == nil {
				t.Errorf("%s %s has no tool", m, path)
				continue
			}
			for _, p := range o.params {
				if _, ok := o.decl.ParametersJsonSchema.(map[string]any)["properties"].(map[string]any)[p.prop]; !ok {
					t.Errorf("%s: parameter %s is not in the declaration", o.name, p.prop)
				}
			}
		}
	}
	if len(list) != ops || ops < 1000 {
		t.Errorf("%d tools for %d operations", len(list), ops)
	}
	if n := len(ts.Report().Skipped); n != 0 {
		t.Errorf("%d operations skipped", n)
	}
	t.Logf("%d tools, %d renamed, %d unsupported parts", len(list), len(ts.Report().Renamed), len(ts.Report().Unsupported))

	reg := registry(t, ts)
	full := reg.Catalog(render.Full)
	for _, name := range []string{"def repos_get(", "def issues_create(", "def pulls_list("} {
		if !strings.Contains(full, name) {
			t.Errorf("the catalog lacks %s", name)
		}
	}
	block := reg.Block(render.Environment{PythonVersion: "3.11.2"}, 50_000)
	if !strings.Contains(block, "<code-mode>") || !strings.Contains(block, "repos_get") {
		t.Errorf("the block names no tool:\n%.2000s", block)
	}
}

// BenchmarkGitHubToolsetAndBlock loads GitHub's description from bytes,
// builds its toolset, and renders its registry and <code-mode> block.
func BenchmarkGitHubToolsetAndBlock(b *testing.B) {
	data := githubDescription(b)
	b.ReportAllocs()
	for b.Loop() {
		ts, err := Load(context.Background(), Config{Spec: data, Name: "github"})
		if err != nil {
			b.Fatal(err)
		}
		reg := registry(b, ts)
		_ = reg.Block(render.Environment{PythonVersion: "3.11.2"}, 50_000)
	}
}

// BenchmarkGitHubToolset is the loading and building alone.
func BenchmarkGitHubToolset(b *testing.B) {
	data := githubDescription(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(context.Background(), Config{Spec: data, Name: "github"}); err != nil {
			b.Fatal(err)
		}
	}
}
