package main

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
)

// moduleDirs are the repository's Go modules, by directory from its root.
// Every go.mod committed to the repository must be one of them, so that a
// new module is released on purpose.
var moduleDirs = []string{".", "adkv1", "deploy"}

// goModule is one module of the repository.
type goModule struct {
	dir      string   // from the repository's root, "." for the root
	path     string   // its module path
	requires []string // the paths of the repository's modules it requires
}

// loadModules reads the go.mod of every module in moduleDirs.
func loadModules(root string) ([]goModule, error) {
	files := make([]*modfile.File, len(moduleDirs))
	paths := map[string]bool{}
	for i, dir := range moduleDirs {
		f, err := readGoMod(root, dir)
		if err != nil {
			return nil, err
		}
		files[i] = f
		paths[f.Module.Mod.Path] = true
	}
	mods := make([]goModule, len(files))
	for i, f := range files {
		mods[i] = goModule{dir: moduleDirs[i], path: f.Module.Mod.Path}
		for _, r := range f.Require {
			if paths[r.Mod.Path] {
				mods[i].requires = append(mods[i].requires, r.Mod.Path)
			}
		}
	}
	return mods, checkRequireChains(mods)
}

// readGoMod parses the go.mod of the module in dir.
func readGoMod(root, dir string) (*modfile.File, error) {
	name := filepath.Join(root, dir, "go.mod")
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("reading the go.mod of module %s: %w (the release knows the modules %s; update moduleDirs in internal/tooling/release if they moved)", dir, err, strings.Join(moduleDirs, ", "))
	}
	f, err := modfile.ParseLax(name, data, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: fix the file, then release again", err)
	}
	if f.Module == nil {
		return nil, fmt.Errorf("%s has no module line: add one naming the module's path", name)
	}
	return f, nil
}

// checkRequireChains refuses a module that is required by another module of
// the repository and itself requires one: its go.sum would change in the
// release, after its hashes were computed from HEAD.
func checkRequireChains(mods []goModule) error {
	for _, m := range mods {
		if len(m.requires) == 0 {
			continue
		}
		if requiredByAny(mods, m.path) {
			return fmt.Errorf("module %s requires %s and is required by another module of the repository: the release computes the hashes of a required module from HEAD, which holds only if the release changes none of its files; release the modules of such a chain one after the other", m.path, strings.Join(m.requires, ", "))
		}
	}
	return nil
}

// checkModuleList refuses a repository with a committed go.mod that is not
// in moduleDirs.
func checkModuleList(root string) error {
	out, err := git(root, "ls-files", "-z", "--", "go.mod", ":(glob)**/go.mod")
	if err != nil {
		return err
	}
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if f == "" {
			continue
		}
		if dir := path.Dir(f); !slices.Contains(moduleDirs, dir) {
			return fmt.Errorf("%s is a module the release does not know: add %q to moduleDirs in internal/tooling/release (and say in docs/adk-versions.md how it is released)", f, dir)
		}
	}
	return nil
}
