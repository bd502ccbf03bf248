package engine

import (
	"errors"
	"testing"

	"google.golang.org/genai"
)

func TestWorkspaceArtifactName(t *testing.T) {
	tests := []struct{ path, name string }{
		{"report.csv", "report.csv"},
		{"out/deep/b.bin", "out%2Fdeep%2Fb.bin"},
		{"100%.txt", "100%25.txt"},
		{"user:x", "user%3Ax"},
		{`a\b`, "a%5Cb"},
		{"codemode-tool-x.json", "%63odemode-tool-x.json"},
		{"dir/codemode-x", "dir%2Fcodemode-x"},
	}
	for _, tt := range tests {
		if got := WorkspaceArtifactName(tt.path); got != tt.name {
			t.Errorf("WorkspaceArtifactName(%q) = %q, want %q", tt.path, got, tt.name)
		}
		if got, ok := WorkspacePath(tt.name); !ok || got != tt.path {
			t.Errorf("WorkspacePath(%q) = %q, %v; want %q", tt.name, got, ok, tt.path)
		}
	}
	for _, bad := range []string{"codemode-stdout-x.txt", "a%2", "a%41", "x%63", "a/b", ""} {
		if p, ok := WorkspacePath(bad); ok {
			t.Errorf("WorkspacePath(%q) = %q, want no path", bad, p)
		}
	}
}

func TestReadToolResultsRefusesOthers(t *testing.T) {
	plain := &genai.Part{InlineData: &genai.Blob{MIMEType: "application/json", Data: []byte(`{"results":[]}`)}}
	for _, p := range []*genai.Part{nil, {Text: "x"}, plain} {
		if _, err := ReadToolResults(p); !errors.Is(err, ErrNotToolResult) {
			t.Errorf("ReadToolResults(%+v) = %v, want ErrNotToolResult", p, err)
		}
	}
	bad := &genai.Part{InlineData: &genai.Blob{MIMEType: ToolResultsMIMEType, Data: []byte(`{"results":{}}`)}}
	if _, err := ReadToolResults(bad); err == nil || errors.Is(err, ErrNotToolResult) {
		t.Errorf("ReadToolResults of a damaged artifact = %v, want a decode error", err)
	}
}
