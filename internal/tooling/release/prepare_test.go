package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	modzip "golang.org/x/mod/zip"
)

// smallRepo has the modules of moduleDirs, with adkv1 requiring the root
// module at the placeholder version through a go.work, as in this
// repository before its first release.
func smallRepo(t *testing.T) string {
	t.Helper()
	return newRepo(t, map[string]string{
		"go.mod":        "module example.com/r\n\ngo 1.26.8\n",
		"r.go":          "package r\n",
		"LICENSE":       "the license\n",
		"adkv1/go.mod":  "module example.com/r/adkv1\n\ngo 1.26.8\n\nrequire example.com/r " + placeholder + "\n",
		"adkv1/go.sum":  "example.com/x v1.0.0/go.mod h1:x=\n",
		"adkv1/go.work": "go 1.26.8\n\nuse (\n\t.\n\t..\n)\n\nreplace example.com/r " + placeholder + " => ../\n",
		"adkv1/a.go":    "package adkv1\n",
		"deploy/go.mod": "module example.com/r/deploy\n\ngo 1.26.8\n",
	})
}

// rootHashFromDir computes the root module's zip hash with
// golang.org/x/mod/zip.CreateFromDir, from the work tree.
func rootHashFromDir(t *testing.T, dir, version string) string {
	t.Helper()
	name := filepath.Join(t.TempDir(), "root.zip")
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := modzip.CreateFromDir(f, module.Version{Path: "example.com/r", Version: version}, dir); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	h, err := dirhash.HashZip(name, dirhash.Hash1)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestPrepare(t *testing.T) {
	repo := smallRepo(t)
	want := rootHashFromDir(t, repo, "v0.2.0")
	writeFiles(t, repo, map[string]string{"untracked.go": "package r\n\nvar notCommitted = 1\n"})

	p, err := prepare(repo, "v0.2.0")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"v0.2.0", "adkv1/v0.2.0", "deploy/v0.2.0"}; !slices.Equal(p.tags, want) {
		t.Errorf("tags = %q, want %q", p.tags, want)
	}
	if want := []string{"adkv1/go.mod", "adkv1/go.sum", "adkv1/go.work"}; !slices.Equal(p.changed, want) {
		t.Errorf("changed = %q, want %q", p.changed, want)
	}
	if got := readFile(t, filepath.Join(repo, "adkv1", "go.mod")); !strings.Contains(got, "require example.com/r v0.2.0\n") {
		t.Errorf("adkv1/go.mod does not require example.com/r v0.2.0:\n%s", got)
	}
	if got := readFile(t, filepath.Join(repo, "adkv1", "go.work")); !strings.Contains(got, "replace example.com/r v0.2.0 => ../\n") {
		t.Errorf("adkv1/go.work does not replace example.com/r v0.2.0:\n%s", got)
	}
	// The file that is not committed is in neither the hash nor the tree
	// the hash is checked against.
	gotSum := readFile(t, filepath.Join(repo, "adkv1", "go.sum"))
	if line := "example.com/r v0.2.0 " + want + "\n"; !strings.Contains(gotSum, line) {
		t.Errorf("adkv1/go.sum lacks %q:\n%s", line, gotSum)
	}
	if !strings.Contains(gotSum, "example.com/r v0.2.0/go.mod h1:") || !strings.Contains(gotSum, "example.com/x v1.0.0/go.mod h1:x=\n") {
		t.Errorf("adkv1/go.sum lacks the go.mod hash or lost another module's line:\n%s", gotSum)
	}
	var out bytes.Buffer
	p.print(&out)
	for _, s := range []string{"git tag v0.2.0\n", "git tag adkv1/v0.2.0\n", "git commit -m", "adkv1/go.sum", "Nothing was committed"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("the printed plan lacks %q:\n%s", s, out.String())
		}
	}
}

func TestPrepareTwiceChangesNothing(t *testing.T) {
	repo := smallRepo(t)
	if _, err := prepare(repo, "v0.2.0"); err != nil {
		t.Fatal(err)
	}
	commitAll(t, repo, "release")
	p, err := prepare(repo, "v0.2.0")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.changed) != 0 {
		t.Errorf("a second prepare at the same version changed %q", p.changed)
	}
}

func TestPrepareRefuses(t *testing.T) {
	for _, c := range []struct {
		name  string
		setUp func(t *testing.T, repo string)
		want  string
	}{
		{"uncommitted change", func(t *testing.T, repo string) {
			writeFiles(t, repo, map[string]string{"r.go": "package r\n\nvar changed = 1\n"})
		}, "uncommitted changes"},
		{"tag exists", func(t *testing.T, repo string) {
			gitIn(t, repo, "tag", "adkv1/v0.2.0")
		}, "tag adkv1/v0.2.0 exists already"},
		{"unknown module", func(t *testing.T, repo string) {
			writeFiles(t, repo, map[string]string{"tools/go.mod": "module example.com/r/tools\n\ngo 1.26.8\n"})
			commitAll(t, repo, "a module")
		}, `add "tools" to moduleDirs`},
		{"replace in go.mod", func(t *testing.T, repo string) {
			writeFiles(t, repo, map[string]string{"adkv1/go.mod": "module example.com/r/adkv1\n\ngo 1.26.8\n\nrequire example.com/r v0.1.0\n\nreplace example.com/r => ../\n"})
			commitAll(t, repo, "a replace")
		}, "remove the replace"},
		{"chain", func(t *testing.T, repo string) {
			writeFiles(t, repo, map[string]string{"go.mod": "module example.com/r\n\ngo 1.26.8\n\nrequire example.com/r/deploy v0.1.0\n"})
			commitAll(t, repo, "a chain")
		}, "is required by another module"},
	} {
		t.Run(c.name, func(t *testing.T) {
			repo := smallRepo(t)
			c.setUp(t, repo)
			before := readFile(t, filepath.Join(repo, "adkv1", "go.sum"))
			_, err := prepare(repo, "v0.2.0")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("prepare = %v, want an error containing %q", err, c.want)
			}
			if after := readFile(t, filepath.Join(repo, "adkv1", "go.sum")); after != before {
				t.Errorf("a refused release changed adkv1/go.sum:\n%s", after)
			}
		})
	}
}

func TestPrepareRefusesVersionFirst(t *testing.T) {
	// A bad version is refused before anything is looked at, even outside
	// a repository.
	_, err := prepare(t.TempDir(), "v2.0.0")
	if err == nil || !strings.Contains(err.Error(), "major version v2") {
		t.Errorf("prepare at v2.0.0 = %v, want the major version refused", err)
	}
}
