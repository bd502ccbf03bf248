package main

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"

	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	modzip "golang.org/x/mod/zip"
)

// sums are the two go.sum hashes of a module version.
type sums struct {
	zip   string // of the module zip
	goMod string // of its go.mod
}

// hashRequired computes, from commit, the hashes at version of every module
// that another module of the repository requires, by module path.
func hashRequired(root, commit string, mods []goModule, version string) (map[string]sums, error) {
	out := map[string]sums{}
	for _, m := range mods {
		if !requiredByAny(mods, m.path) {
			continue
		}
		s, err := hashModule(root, commit, m, version)
		if err != nil {
			return nil, err
		}
		out[m.path] = s
	}
	return out, nil
}

// requiredByAny reports whether a module of mods requires the module at
// modPath.
func requiredByAny(mods []goModule, modPath string) bool {
	for _, m := range mods {
		if slices.Contains(m.requires, modPath) {
			return true
		}
	}
	return false
}

// hashModule computes the hashes of module m at version as made from commit.
func hashModule(root, commit string, m goModule, version string) (sums, error) {
	archive, err := gitArchive(root, commit)
	if err != nil {
		return sums{}, err
	}
	var zipped bytes.Buffer
	if err := moduleZip(&zipped, archive, m.dir, module.Version{Path: m.path, Version: version}); err != nil {
		return sums{}, err
	}
	zipSum, err := hashZip(zipped.Bytes())
	if err != nil {
		return sums{}, err
	}
	goMod, err := archivedFile(archive, path.Join(m.dir, "go.mod"))
	if err != nil {
		return sums{}, err
	}
	modSum, err := hashGoMod(goMod)
	return sums{zip: zipSum, goMod: modSum}, err
}

// gitArchive returns the zip archive git makes of commit, as the go command
// asks for it when it fetches a module from a repository: line endings
// exactly as committed.
func gitArchive(root, commit string) (*zip.Reader, error) {
	out, err := git(root, "-c", "core.autocrlf=input", "-c", "core.eol=lf", "archive", "--format=zip", commit)
	if err != nil {
		return nil, err
	}
	return zip.NewReader(bytes.NewReader(out), int64(len(out)))
}

// moduleZip writes the module zip of m, whose files are those of archive
// under dir. A module in a subdirectory without a LICENSE gets the
// repository's, as the go command gives it. modzip.Create leaves out what
// does not belong in a module zip: nested modules, vendored packages,
// symbolic links.
func moduleZip(w io.Writer, archive *zip.Reader, dir string, m module.Version) error {
	var files []modzip.File
	hasLicense := false
	for _, f := range archive.File {
		name, ok := strings.CutPrefix(f.Name, prefixOf(dir))
		if !ok || name == "" || strings.HasSuffix(name, "/") {
			continue
		}
		files = append(files, archivedEntry{name: name, f: f})
		hasLicense = hasLicense || name == "LICENSE"
	}
	if dir != "." && !hasLicense {
		if lic := entry(archive, "LICENSE"); lic != nil {
			files = append(files, archivedEntry{name: "LICENSE", f: lic})
		}
	}
	if err := modzip.Create(w, m, files); err != nil {
		return fmt.Errorf("making the module zip of %s: %w", m, err)
	}
	return nil
}

// prefixOf returns what the names of dir's files start with in an archive.
func prefixOf(dir string) string {
	if dir == "." {
		return ""
	}
	return dir + "/"
}

// entry returns the file named name in archive, or nil.
func entry(archive *zip.Reader, name string) *zip.File {
	for _, f := range archive.File {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// archivedFile returns the contents of the file named name in archive.
func archivedFile(archive *zip.Reader, name string) ([]byte, error) {
	f := entry(archive, name)
	if f == nil {
		return nil, fmt.Errorf("%s is not committed: commit it before releasing", name)
	}
	r, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// archivedEntry is a file of a git archive as a file of a module zip.
type archivedEntry struct {
	name string
	f    *zip.File
}

func (e archivedEntry) Path() string                 { return e.name }
func (e archivedEntry) Lstat() (os.FileInfo, error)  { return e.f.FileInfo(), nil }
func (e archivedEntry) Open() (io.ReadCloser, error) { return e.f.Open() }

// hashZip returns the go.sum hash of a module zip, as the go command
// computes it from the zip it downloads.
func hashZip(zipped []byte) (string, error) {
	tmp, err := os.CreateTemp("", "release-*.zip")
	if err != nil {
		return "", err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	defer tmp.Close()
	if _, err := tmp.Write(zipped); err != nil {
		return "", err
	}
	return dirhash.HashZip(tmp.Name(), dirhash.Hash1)
}

// hashGoMod returns the go.sum hash of a go.mod file.
func hashGoMod(data []byte) (string, error) {
	return dirhash.Hash1([]string{"go.mod"}, func(string) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	})
}
