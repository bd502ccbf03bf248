package render

import (
	"encoding/json"
	"os/exec"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPythonNamesMatchTheInterpreter compares pythonKeywords and
// pythonBuiltins with what the interpreter itself lists, so neither table
// can drift from the language a tool's name must not hide.
func TestPythonNamesMatchTheInterpreter(t *testing.T) {
	out, err := exec.Command(pythonPath(t), "-c", `import builtins, json, keyword
print(json.dumps({"keywords": keyword.kwlist,
    "builtins": [n for n in dir(builtins) if n[:1].islower()]}))`).Output()
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Keywords, Builtins []string }
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		table map[string]bool
		want  []string
	}{{"pythonKeywords", pythonKeywords, got.Keywords}, {"pythonBuiltins", pythonBuiltins, got.Builtins}} {
		var have []string
		for k := range c.table {
			have = append(have, k)
		}
		sort.Strings(have)
		sort.Strings(c.want)
		if diff := cmp.Diff(c.want, have); diff != "" {
			t.Errorf("%s differs from the interpreter's list (-interpreter +table):\n%s", c.name, diff)
		}
	}
}

func TestToolNameSuffixesBuiltinsAndKeywords(t *testing.T) {
	for in, want := range map[string]string{
		"print": "print_", "list": "list_", "id": "id_", "import": "import_",
		"lookup": "lookup", "print_": "print_", "": "tool", "printer": "printer",
	} {
		if got := toolName(in); got != want {
			t.Errorf("toolName(%q) = %q, want %q", in, got, want)
		}
	}
}
