//go:build linux

package wsserve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/adk-codemode/codemode/internal/both/server"
)

func TestWriteFilesReadOnly(t *testing.T) {
	dir := t.TempDir()
	t.Cleanup(func() { _ = os.Chmod(filepath.Join(dir, "tools"), 0o755) })
	if err := WriteFiles(dir, map[string][]byte{"tools/__init__.py": []byte("x = 1\n")}); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{"tools": 0o555 | os.ModeDir, "tools/__init__.py": 0o444} {
		st, err := os.Stat(filepath.Join(dir, p))
		if err != nil || st.Mode() != want {
			t.Errorf("%s: mode %v, %v; want %v", p, st.Mode(), err, want)
		}
	}
}

func TestWriteFilesStaysBeneathItsDirectory(t *testing.T) {
	outside := t.TempDir()
	tests := []struct {
		name  string
		plant func(dir string) error
		want  string
	}{
		{"a symlink out of the directory", func(dir string) error { return os.Symlink(outside, filepath.Join(dir, "tools")) }, "escapes"},
		{"a file already there", func(dir string) error { return os.WriteFile(filepath.Join(dir, "x.py"), nil, 0o644) }, "exists"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := tc.plant(dir); err != nil {
				t.Fatal(err)
			}
			err := WriteFiles(dir, map[string][]byte{"tools/__init__.py": nil, "x.py": nil})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("WriteFiles = %v, want an error saying %q", err, tc.want)
			}
			if entries, _ := os.ReadDir(outside); len(entries) != 0 {
				t.Fatalf("a file was written outside: %v", entries)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	_ = os.WriteFile(file, nil, 0o600)
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no secret", Config{Session: sessionIn(dir)}, "no secret"},
		{"secret and insecure", Config{Session: sessionIn(dir), Secret: []byte("0123456789abcdef"), InsecureNoAuth: true}, "choose one"},
		{"short secret", Config{Session: sessionIn(dir), Secret: []byte("short")}, "at least 16"},
		{"no files directory", Config{Secret: []byte("0123456789abcdef")}, "FilesDir is required"},
		{"files directory a file", Config{Session: sessionIn(file), Secret: []byte("0123456789abcdef")}, "not a directory"},
		{"ok", Config{Session: sessionIn(dir), Secret: []byte("0123456789abcdef")}, ""},
		{"ok without auth", Config{Session: sessionIn(dir), InsecureNoAuth: true}, ""},
	} {
		err := tc.cfg.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: Validate = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func sessionIn(dir string) server.Config {
	return server.Config{Python: "/usr/bin/python3", Workdir: dir, FilesDir: dir}
}
