package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUpToDate holds adkv1 to what the generator makes from the top-level
// packages: the two ADK lines share one implementation.
func TestUpToDate(t *testing.T) {
	tree, err := translate("../../..")
	if err != nil {
		t.Fatal(err)
	}
	if len(tree) == 0 {
		t.Fatal("the generator found no v2 source")
	}
	bad, err := stale(tree, "../..")
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 {
		t.Errorf("adkv1 disagrees with the top-level packages in %d files (%s); run `make generate` and review the diff", len(bad), strings.Join(bad, ", "))
	}
}

// TestPerLineFilesExist checks that each file written by hand for each
// line is there in both.
func TestPerLineFilesExist(t *testing.T) {
	for rel := range perLine {
		for _, root := range []string{"../../..", "../.."} {
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel))); err != nil {
				t.Errorf("%s: %v (each ADK line needs its own)", rel, err)
			}
		}
	}
}

func TestRewrite(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`"google.golang.org/adk/v2/agent"`, `"google.golang.org/adk/agent"`},
		{`"github.com/adk-codemode/codemode/callbacks"`, `"github.com/adk-codemode/codemode/adkv1/callbacks"`},
		{`"github.com/adk-codemode/codemode/toolset/openapi/e2e"`, `"github.com/adk-codemode/codemode/adkv1/toolset/openapi/e2e"`},
		{`"github.com/adk-codemode/codemode/backend/jail"`, `"github.com/adk-codemode/codemode/backend/jail"`},
		{`func f(ctx agent.Context, m agent.ContextMock)`, `func f(ctx agent.ToolContext, m agent.ContextMock)`},
		{`func f(cb agent.callbackContext)`, `func f(cb agent.CallbackContext)`},
	} {
		if got := rewrite(c.in); got != c.want {
			t.Errorf("rewrite(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}

// TestStaleEditFails checks that an edit whose text is gone stops the
// generation rather than leaving v2 code in the v1 line.
func TestStaleEditFails(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "plugin", "codemode")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "codemode.go"), []byte("package codemode\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := translate(root)
	if err == nil || !strings.Contains(err.Error(), "update") {
		t.Fatalf("translate of a tree without the edited text: err = %v, want one naming the edit to update", err)
	}
}

// TestV2OnlyFilesExist checks that each test file kept to the v2 line is
// still there, so that the list cannot outlive what it names.
func TestV2OnlyFilesExist(t *testing.T) {
	for rel, why := range v2Only {
		if why == "" {
			t.Errorf("%s: no reason given for keeping it to the v2 line", rel)
		}
		if !strings.HasSuffix(rel, "_test.go") && !strings.HasSuffix(rel, "/") {
			t.Errorf("%s: only test files and directories of tests may be kept to the v2 line", rel)
		}
		if _, err := os.Stat(filepath.Join("../../..", filepath.FromSlash(rel))); err != nil {
			t.Errorf("%s: %v", rel, err)
		}
	}
}
