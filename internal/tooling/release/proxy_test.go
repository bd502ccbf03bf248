package main

import (
	"archive/zip"
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/mod/module"
)

// publish writes the module in dir of repo, as of commit, at version into
// a file-based module proxy in proxyDir: the layout GOPROXY=file://proxyDir
// reads, <escaped module path>/@v/ with list, <version>.info, .mod and .zip.
func publish(t *testing.T, proxyDir, repo, commit, dir, version string) {
	t.Helper()
	archive, err := gitArchive(repo, commit)
	if err != nil {
		t.Fatal(err)
	}
	goMod, err := archivedFile(archive, path.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := readGoMod(repo, dir)
	if err != nil {
		t.Fatal(err)
	}
	m := module.Version{Path: f.Module.Mod.Path, Version: version}
	at := versionDir(t, proxyDir, m.Path)
	base := filepath.Join(at, escapedVersion(t, version))

	zipFile, err := os.Create(base + ".zip")
	if err != nil {
		t.Fatal(err)
	}
	defer zipFile.Close()
	if err := moduleZip(zipFile, archive, dir, m); err != nil {
		t.Fatal(err)
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, commitTime(t, repo, commit)})
	if err != nil {
		t.Fatal(err)
	}
	writeFiles(t, at, map[string]string{
		escapedVersion(t, version) + ".info": string(info),
		escapedVersion(t, version) + ".mod":  string(goMod),
		"list":                               version + "\n",
	})
}

// versionDir makes and returns the @v directory of a module in a proxy.
func versionDir(t *testing.T, proxyDir, modPath string) string {
	t.Helper()
	escaped, err := module.EscapePath(modPath)
	if err != nil {
		t.Fatal(err)
	}
	at := filepath.Join(proxyDir, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	return at
}

func escapedVersion(t *testing.T, version string) string {
	t.Helper()
	v, err := module.EscapeVersion(version)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// commitTime returns when commit was made.
func commitTime(t *testing.T, repo, commit string) time.Time {
	t.Helper()
	when, err := time.Parse(time.RFC3339, gitIn(t, repo, "show", "-s", "--format=%cI", commit))
	if err != nil {
		t.Fatal(err)
	}
	return when.UTC()
}

func TestPublishLayout(t *testing.T) {
	repo := newRepo(t, map[string]string{
		"go.mod":       "module example.com/Upper\n\ngo 1.26.8\n",
		"u.go":         "package upper\n",
		"LICENSE":      "the license\n",
		"adkv1/go.mod": "module example.com/Upper/adkv1\n\ngo 1.26.8\n",
		"adkv1/a.go":   "package adkv1\n",
	})
	proxyDir := t.TempDir()
	publish(t, proxyDir, repo, "HEAD", ".", "v0.2.0-RC.1")
	publish(t, proxyDir, repo, "HEAD", "adkv1", "v0.2.0-RC.1")

	// Upper-case letters are escaped, in paths and in versions.
	for _, name := range []string{
		"example.com/!upper/@v/list",
		"example.com/!upper/@v/v0.2.0-!r!c.1.info",
		"example.com/!upper/@v/v0.2.0-!r!c.1.mod",
		"example.com/!upper/@v/v0.2.0-!r!c.1.zip",
		"example.com/!upper/adkv1/@v/v0.2.0-!r!c.1.zip",
	} {
		if _, err := os.Stat(filepath.Join(proxyDir, filepath.FromSlash(name))); err != nil {
			t.Errorf("the proxy lacks %s: %v", name, err)
		}
	}
	at := filepath.Join(proxyDir, "example.com", "!upper", "@v")
	if got := readFile(t, filepath.Join(at, "list")); got != "v0.2.0-RC.1\n" {
		t.Errorf("list = %q, want the version on a line", got)
	}
	if got := readFile(t, filepath.Join(at, "v0.2.0-!r!c.1.mod")); got != "module example.com/Upper\n\ngo 1.26.8\n" {
		t.Errorf(".mod = %q, want the committed go.mod", got)
	}
	var info struct{ Version string }
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(at, "v0.2.0-!r!c.1.info"))), &info); err != nil || info.Version != "v0.2.0-RC.1" {
		t.Errorf(".info = %+v (%v), want Version v0.2.0-RC.1", info, err)
	}
	// The zip is the module's, with its files under path@version/, and
	// without the nested module.
	zr, err := zip.OpenReader(filepath.Join(at, "v0.2.0-!r!c.1.zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
	}
	slices.Sort(names)
	if want := []string{"example.com/Upper@v0.2.0-RC.1/LICENSE", "example.com/Upper@v0.2.0-RC.1/go.mod", "example.com/Upper@v0.2.0-RC.1/u.go"}; !slices.Equal(names, want) {
		t.Errorf("zip names = %q, want %q", names, want)
	}
}
