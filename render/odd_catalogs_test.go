package render

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"google.golang.org/genai"
)

// oddStubs renders one tool with the given parameter schema and returns its
// stub, failing if rendering takes longer than limit.
func oddStubs(t *testing.T, params any, limit time.Duration) []File {
	t.Helper()
	reg, err := NewRegistry([]Tool{{Namespace: "ns", Declaration: &genai.FunctionDeclaration{
		Name: "tool", Description: "A tool.", ParametersJsonSchema: params,
	}}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan []File, 1)
	go func() {
		files := reg.Stubs()
		_ = reg.Block(Environment{}, DefaultBudget)
		done <- files
	}()
	select {
	case files := <-done:
		return files
	case <-time.After(limit):
		t.Fatalf("rendering did not finish within %v", limit)
		return nil
	}
}

func checkPython(t *testing.T, files []File) {
	t.Helper()
	py := newPyChecker(t)
	for _, f := range files {
		if msg := py.check(t, f.Path, f.Content); msg != "" {
			t.Errorf("%s is not valid Python: %s", f.Path, msg)
		}
	}
}

// A wide union of unions without properties adds no docstring lines, so the
// line budget never ran out: the nested field listing visited every path,
// 20^8 of them here, and took minutes for a 4 KB schema.
func TestWideNestedUnionsRenderQuickly(t *testing.T) {
	defs := map[string]any{"d8": map[string]any{"type": "string"}}
	for i := 0; i < 8; i++ {
		var branches []any
		for j := 0; j < 20; j++ {
			branches = append(branches, map[string]any{"$ref": fmt.Sprintf("#/$defs/d%d", i+1)})
		}
		defs[fmt.Sprintf("d%d", i)] = map[string]any{"anyOf": branches}
	}
	params := map[string]any{
		"$defs":      defs,
		"properties": map[string]any{"a": map[string]any{"$ref": "#/$defs/d0"}},
	}
	checkPython(t, oddStubs(t, params, 20*time.Second))
}

// Python (3.11+) refuses decimal integer literals of more than 4300 digits,
// and compiling an annotation under "from __future__ import annotations"
// turns its constants back into decimal text. A huge integer default or
// enum value made the stub a SyntaxError.
func TestHugeIntegersStayValidPython(t *testing.T) {
	huge := json.Number("1" + strings.Repeat("0", 5000))
	neg := json.Number("-" + strings.Repeat("9", 4301))
	for name, params := range map[string]any{
		"required default": map[string]any{
			"properties": map[string]any{"a": map[string]any{"type": "integer", "default": huge}},
			"required":   []any{"a"},
		},
		"negative default": map[string]any{
			"properties": map[string]any{"a": map[string]any{"type": "integer", "default": neg}},
			"required":   []any{"a"},
		},
		"enum": map[string]any{
			"properties": map[string]any{"a": map[string]any{"enum": []any{huge, json.Number("1")}}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			files := oddStubs(t, params, 20*time.Second)
			checkPython(t, files)
		})
	}
	// The default stays exact, as a hexadecimal literal.
	if got, want := numberRepr(json.Number("-"+strings.Repeat("9", 4301)), true), "-0x"; !strings.HasPrefix(got, want) {
		t.Errorf("numberRepr = %.20s..., want a %s literal", got, want)
	}
	if got := numberRepr(json.Number(strings.Repeat("9", 4300)), true); got != strings.Repeat("9", 4300) {
		t.Errorf("a 4300-digit integer should stay decimal, got %.20s...", got)
	}
}

// A json.Number handed over in a Go map can say NaN; strconv accepts it
// and the float formatting turned it into "N.aN", which parses as an
// attribute access and fails when the stub is imported.
func TestNaNNumberRendersAsFloatNaN(t *testing.T) {
	if got := numberRepr(json.Number("NaN"), true); got != "float('nan')" {
		t.Errorf("numberRepr(NaN) = %q", got)
	}
	files := oddStubs(t, map[string]any{
		"properties": map[string]any{"a": map[string]any{"type": "number", "default": json.Number("NaN")}},
		"required":   []any{"a"},
	}, 20*time.Second)
	checkPython(t, files)
	for _, f := range files {
		if strings.Contains(f.Content, "N.aN") {
			t.Errorf("%s renders NaN as N.aN:\n%s", f.Path, f.Content)
		}
	}
}

// U+2028 and U+2029 were escaped as `\x2028`, but \x takes exactly two hex
// digits, so in a docstring without the r prefix Python read " 28": the
// model saw a different description than the tool declared.
func TestLineSeparatorSurvivesDocstring(t *testing.T) {
	py := pythonPath(t)
	reg, err := NewRegistry([]Tool{{Declaration: &genai.FunctionDeclaration{Name: "tool", Description: "A tool.",
		ParametersJsonSchema: map[string]any{"properties": map[string]any{"a": map[string]any{"description": "before\u2028after\u2029end"}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	var src string
	for _, f := range reg.Stubs() {
		if f.Path == "tools/tool.py" {
			src = f.Content
		}
	}
	script := `import sys, types
sys.modules["codemode_runtime"] = types.SimpleNamespace(call=None)
ns = {}
exec(sys.stdin.read(), ns)
sys.stdout.write(ns["tool"].__doc__.encode("unicode_escape").decode())`
	cmd := exec.Command(py, "-c", script)
	cmd.Stdin = strings.NewReader(src)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s\n%s", err, out, src)
	}
	if want := `a: before\u2028after\u2029end`; !strings.Contains(string(out), want) {
		t.Errorf("docstring = %s, want %s", out, want)
	}
}
