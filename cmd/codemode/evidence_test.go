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
	} {
		var stdout, stderr strings.Builder
		code := run(append([]string{"evidence"}, c.args...), nil, &stdout, &stderr)
		if code == 0 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("codemode evidence %v: exit %d, stderr %q; want a failure saying %q", c.args, code, stderr.String(), c.want)
		}
	}
}
