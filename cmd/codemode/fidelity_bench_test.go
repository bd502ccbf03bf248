package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/genai"

	"github.com/adk-codemode/codemode/fidelity"
	"github.com/adk-codemode/codemode/toolset/openapi"
)

// githubSpecPath is GitHub's REST description as .ci/run installs it
// (npm @octokit/openapi 23.0.2), or "" when it is not there.
func githubSpecPath() string {
	dir := os.Getenv("CODEMODE_OCTOKIT_DIR")
	if dir == "" {
		c, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(c, "codemode-test", "octokit-openapi@23.0.2")
	}
	p := filepath.Join(dir, "node_modules/@octokit/openapi/generated/api.github.com.json")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// BenchmarkFidelityGitHub times the fidelity report over GitHub's 1,223
// operations, from the document's declarations to the report (loading the
// document is timed apart, in toolset/openapi's benchmarks).
func BenchmarkFidelityGitHub(b *testing.B) {
	spec := githubSpecPath()
	if spec == "" {
		b.Skip("GitHub's REST description is not installed; run toolset/openapi's tests, which install it")
	}
	tools, err := loadOpenAPI(openapi.Config{File: spec}, io.Discard, "fidelity")
	if err != nil {
		b.Fatal(err)
	}
	list := make([]*genai.FunctionDeclaration, len(tools))
	for i, t := range tools {
		d := *t.Declaration
		d.Name = t.Namespace + "." + d.Name
		list[i] = &d
	}
	b.ResetTimer()
	for b.Loop() {
		r, err := fidelity.Check(list)
		if err != nil {
			b.Fatal(err)
		}
		if err := r.WriteText(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
