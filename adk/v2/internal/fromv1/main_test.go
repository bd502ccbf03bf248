package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUpToDate holds adk/v2 to what the generator makes from adk/: the two
// ADK lines share one implementation.
func TestUpToDate(t *testing.T) {
	tree, err := translate("../../..")
	if err != nil {
		t.Fatal(err)
	}
	if len(tree) == 0 {
		t.Fatal("the generator found no v1 source")
	}
	bad, err := stale(tree, "../..")
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 {
		t.Errorf("adk/v2 disagrees with adk/ in %d files (%s); run `go generate ./...` in adk/v2 and review the diff", len(bad), strings.Join(bad, ", "))
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
		{`"google.golang.org/adk/agent"`, `"google.golang.org/adk/v2/agent"`},
		{`"github.com/adk-codemode/codemode/adk/callbacks"`, `"github.com/adk-codemode/codemode/adk/v2/callbacks"`},
		{`"github.com/adk-codemode/codemode/backend/jail"`, `"github.com/adk-codemode/codemode/backend/jail"`},
		{`func f(ctx agent.ToolContext, cb agent.CallbackContext)`, `func f(ctx agent.Context, cb agent.Context)`},
	} {
		if got := rewrite(c.in); got != c.want {
			t.Errorf("rewrite(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}
