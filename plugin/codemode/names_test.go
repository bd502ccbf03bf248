package codemode

import (
	"errors"
	"testing"

	"google.golang.org/genai"
)

// TestNamesReachTheEngine checks that the exported names and readers of
// artifacts are the engine's (whose own tests cover their cases): a
// workspace path's artifact name and back, and a part that holds no tool
// results.
func TestNamesReachTheEngine(t *testing.T) {
	name := WorkspaceArtifactName("out/deep/b.bin")
	if p, ok := WorkspacePath(name); name != "out%2Fdeep%2Fb.bin" || !ok || p != "out/deep/b.bin" {
		t.Errorf("WorkspaceArtifactName then WorkspacePath: %q, then %q, %v", name, p, ok)
	}
	plain := &genai.Part{InlineData: &genai.Blob{MIMEType: "application/json", Data: []byte(`{"results":[]}`)}}
	if _, err := ReadToolResults(plain); !errors.Is(err, ErrNotToolResult) {
		t.Errorf("ReadToolResults of plain JSON = %v, want ErrNotToolResult", err)
	}
}
