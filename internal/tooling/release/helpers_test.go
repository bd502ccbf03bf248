package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
)

// needCommand returns the path of a command the test runs.
func needCommand(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		capability := hostcap.GoCommand
		if name != "go" {
			capability = hostcap.Git
		}
		hostcap.Missing(t, capability, fmt.Sprintf("the %s command on PATH: %v", name, err))
	}
	return p
}

// gitIn runs git in dir, with an identity for commits and no signing, and
// returns what it printed.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	base := []string{"-c", "user.name=release test", "-c", "user.email=release-test@example.invalid", "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false", "-c", "init.defaultBranch=main"}
	cmd := exec.Command("git", append(base, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

// writeFiles writes files, by slash-separated name, under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// newRepo makes a git repository of files, committed.
func newRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	needCommand(t, "git")
	dir := t.TempDir()
	writeFiles(t, dir, files)
	commitAll(t, dir, "files")
	return dir
}

// commitAll commits every file of the repository in dir, making the
// repository first if there is none.
func commitAll(t *testing.T, dir, message string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, ".git")); errors.Is(err, fs.ErrNotExist) {
		gitIn(t, dir, "init", "-q")
	}
	gitIn(t, dir, "add", "-A")
	gitIn(t, dir, "commit", "-q", "--allow-empty", "-m", message)
}
