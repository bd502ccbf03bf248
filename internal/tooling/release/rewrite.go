package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
)

// edit is a file's new contents, by slash-separated path from the
// repository's root.
type edit struct {
	file string
	data []byte
}

// moduleEdits returns the edits that make m require the repository's
// modules at version, with their hashes from hashes, and the go.sum lines
// they write. A file that would not change has no edit.
func moduleEdits(root string, m goModule, hashes map[string]sums, version string) (edits []edit, lines []string, err error) {
	if len(m.requires) == 0 {
		return nil, nil, nil
	}
	own := map[string]sums{}
	for _, req := range m.requires {
		own[req] = hashes[req]
		lines = append(lines, sumLines(req, version, hashes[req])...)
	}
	steps := []struct {
		file    string
		rewrite func(name string, data []byte) ([]byte, error)
	}{
		{"go.mod", func(name string, data []byte) ([]byte, error) { return rewriteGoMod(name, data, m.requires, version) }},
		{"go.sum", func(name string, data []byte) ([]byte, error) { return rewriteGoSum(name, data, own, version) }},
		{"go.work", func(name string, data []byte) ([]byte, error) { return rewriteGoWork(name, data, m.requires, version) }},
	}
	for _, s := range steps {
		rel := path.Join(m.dir, s.file)
		e, err := rewriteFile(root, rel, s.rewrite)
		if err != nil {
			return nil, nil, err
		}
		if e != nil {
			edits = append(edits, *e)
		}
	}
	return edits, lines, nil
}

// rewriteFile returns the edit that rewrite makes of the file rel, or nil
// if there is no change. A missing go.sum is rewritten from nothing; a
// missing go.work is left missing.
func rewriteFile(root, rel string, rewrite func(name string, data []byte) ([]byte, error)) (*edit, error) {
	name := filepath.Join(root, filepath.FromSlash(rel))
	data, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		switch path.Base(rel) {
		case "go.work":
			return nil, nil
		case "go.sum":
			data, err = nil, nil
		}
	}
	if err != nil {
		return nil, err
	}
	out, err := rewrite(name, data)
	if err != nil || bytes.Equal(out, data) {
		return nil, err
	}
	return &edit{file: rel, data: out}, nil
}

// writeEdits writes the edits in the repository at root.
func writeEdits(root string, edits []edit) error {
	for _, e := range edits {
		if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(e.file)), e.data, 0o644); err != nil {
			return fmt.Errorf("%w: restore the release's files with git checkout, then release again", err)
		}
	}
	return nil
}

// rewriteGoMod makes a go.mod require each module of required at version.
func rewriteGoMod(name string, data []byte, required []string, version string) ([]byte, error) {
	f, err := modfile.Parse(name, data, nil)
	if err != nil {
		return nil, err
	}
	for _, r := range f.Replace {
		if slices.Contains(required, r.Old.Path) {
			return nil, fmt.Errorf("%s replaces %s, which no module requiring it would see: remove the replace (go.work builds the modules against the tree)", name, r.Old.Path)
		}
	}
	for _, p := range required {
		if err := f.AddRequire(p, version); err != nil {
			return nil, err
		}
	}
	f.Cleanup()
	return f.Format()
}

// rewriteGoSum gives a go.sum the hashes at version of each module in
// required, in place of any it had for those modules, in the go command's
// order.
func rewriteGoSum(name string, data []byte, required map[string]sums, version string) ([]byte, error) {
	hashes, err := parseGoSum(name, data)
	if err != nil {
		return nil, err
	}
	for mv := range hashes {
		if _, ok := required[mv.Path]; ok {
			delete(hashes, mv)
		}
	}
	for p, s := range required {
		hashes[module.Version{Path: p, Version: version}] = []string{s.zip}
		hashes[module.Version{Path: p, Version: version + "/go.mod"}] = []string{s.goMod}
	}
	return formatGoSum(hashes), nil
}

// parseGoSum returns the hashes of a go.sum by module version, where a
// go.mod's hash has the version followed by "/go.mod".
func parseGoSum(name string, data []byte) (map[module.Version][]string, error) {
	hashes := map[module.Version][]string{}
	for i, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) != 3 {
			return nil, fmt.Errorf("%s:%d: malformed line %q: restore the file with make tidy TIDY=", name, i+1, line)
		}
		mv := module.Version{Path: f[0], Version: f[1]}
		hashes[mv] = append(hashes[mv], f[2])
	}
	return hashes, nil
}

// formatGoSum writes hashes as the go command writes a go.sum: by module
// path, then by version, then by hash.
func formatGoSum(hashes map[module.Version][]string) []byte {
	mods := make([]module.Version, 0, len(hashes))
	for mv := range hashes {
		mods = append(mods, mv)
	}
	module.Sort(mods)
	var b bytes.Buffer
	for _, mv := range mods {
		list := slices.Clone(hashes[mv])
		slices.Sort(list)
		for _, h := range list {
			fmt.Fprintf(&b, "%s %s %s\n", mv.Path, mv.Version, h)
		}
	}
	return b.Bytes()
}

// sumLines are the go.sum lines of a module version.
func sumLines(modPath, version string, s sums) []string {
	return []string{
		modPath + " " + version + " " + s.zip,
		modPath + " " + version + "/go.mod " + s.goMod,
	}
}

// rewriteGoWork moves a go.work's replacements of a version of a module of
// required to version, so that the workspace keeps building that module
// from the tree.
func rewriteGoWork(name string, data []byte, required []string, version string) ([]byte, error) {
	wf, err := modfile.ParseWork(name, data, nil)
	if err != nil {
		return nil, err
	}
	for _, r := range slices.Clone(wf.Replace) {
		if !slices.Contains(required, r.Old.Path) || r.Old.Version == "" || r.Old.Version == version {
			continue
		}
		old, repl := r.Old, r.New // DropReplace clears r
		if err := wf.DropReplace(old.Path, old.Version); err != nil {
			return nil, err
		}
		if err := wf.AddReplace(old.Path, version, repl.Path, repl.Version); err != nil {
			return nil, err
		}
	}
	wf.Cleanup()
	return modfile.Format(wf.Syntax), nil
}
