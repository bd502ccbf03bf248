package engine

import (
	"strings"
	"testing"
)

// FuzzWorkspaceArtifactName feeds the artifact naming with arbitrary paths,
// as a sandbox may report them: the name must never hold a separator, a
// scope colon or the reserved prefix, and must map back to the path.
func FuzzWorkspaceArtifactName(f *testing.F) {
	for _, s := range []string{"report.csv", "out/b.bin", "codemode-stdout-1.txt", "user:secret", "a%2Fb", `dir\file`, "%63x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		if path == "" {
			return // not a workspace path
		}
		name := WorkspaceArtifactName(path)
		if strings.ContainsAny(name, `/\:`) {
			t.Fatalf("name %q of %q holds a separator or colon", name, path)
		}
		if strings.HasPrefix(name, ReservedPrefix) {
			t.Fatalf("name %q of %q takes the reserved prefix", name, path)
		}
		back, ok := WorkspacePath(name)
		if !ok || back != path {
			t.Fatalf("WorkspacePath(%q) = %q, %v; want %q", name, back, ok, path)
		}
	})
}
