package main

import (
	"archive/zip"
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/mod/module"
)

// zipNames returns the names in the module zip of the module in dir at
// HEAD of repo.
func zipNames(t *testing.T, repo, dir string, m module.Version) []string {
	t.Helper()
	archive, err := gitArchive(repo, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := moduleZip(&buf, archive, dir, m); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
	}
	slices.Sort(names)
	return names
}

func TestModuleZip(t *testing.T) {
	repo := newRepo(t, map[string]string{
		"go.mod":             "module example.com/r\n\ngo 1.26.8\n",
		"r.go":               "package r\n",
		"LICENSE":            "the license\n",
		"testdata/x.txt":     "data\n",
		"sub/go.mod":         "module example.com/r/sub\n\ngo 1.26.8\n",
		"sub/s.go":           "package sub\n",
		"own/go.mod":         "module example.com/r/own\n\ngo 1.26.8\n",
		"own/LICENSE":        "its own license\n",
		"vendor/modules.txt": "# vendored\n",
	})
	if err := os.Symlink("r.go", filepath.Join(repo, "link.go")); err != nil {
		t.Fatal(err)
	}
	commitAll(t, repo, "a link")
	writeFiles(t, repo, map[string]string{"untracked.go": "package r\n"})

	for _, c := range []struct {
		dir, path string
		want      []string
	}{
		// Nested modules, vendored files, links and files not committed
		// are left out.
		{".", "example.com/r", []string{"LICENSE", "go.mod", "r.go", "testdata/x.txt"}},
		// A module in a subdirectory gets the repository's LICENSE...
		{"sub", "example.com/r/sub", []string{"LICENSE", "go.mod", "s.go"}},
		// ...unless it has one.
		{"own", "example.com/r/own", []string{"LICENSE", "go.mod"}},
	} {
		m := module.Version{Path: c.path, Version: "v0.2.0"}
		var want []string
		for _, n := range c.want {
			want = append(want, m.Path+"@v0.2.0/"+n)
		}
		if got := zipNames(t, repo, c.dir, m); !slices.Equal(got, want) {
			t.Errorf("module zip of %s = %q, want %q", c.dir, got, want)
		}
	}
}
