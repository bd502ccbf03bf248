package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	version := flag.String("version", "", "the version to release, such as v0.3.0")
	dir := flag.String("dir", ".", "a directory in the repository to release")
	flag.Parse()
	p, err := prepare(*dir, *version)
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
	p.print(os.Stdout)
}

// plan is what prepare did and what is left to do by hand.
type plan struct {
	version string
	commit  string   // the commit the hashes were computed from
	changed []string // the files rewritten, from the repository's root
	sums    []string // the go.sum lines written
	tags    []string // the tags to create, one a module
}

// prepare checks that the repository in dir can be released at version,
// then rewrites the requirements between its modules for that version:
// every file's new contents are made before any is written.
func prepare(dir, version string) (plan, error) {
	if err := checkVersion(version); err != nil {
		return plan{}, err
	}
	root, err := repoRoot(dir)
	if err != nil {
		return plan{}, err
	}
	mods, err := loadModules(root)
	if err != nil {
		return plan{}, err
	}
	p := plan{version: version, tags: tagsFor(mods, version)}
	if err := checkReleasable(root, p.tags); err != nil {
		return plan{}, err
	}
	if p.commit, err = headCommit(root); err != nil {
		return plan{}, err
	}
	hashes, err := hashRequired(root, p.commit, mods, version)
	if err != nil {
		return plan{}, err
	}
	edits, lines, err := releaseEdits(root, mods, hashes, version)
	if err != nil {
		return plan{}, err
	}
	p.sums = lines
	for _, e := range edits {
		p.changed = append(p.changed, e.file)
	}
	return p, writeEdits(root, edits)
}

// releaseEdits returns the edits of every module for version, and the
// go.sum lines they write.
func releaseEdits(root string, mods []goModule, hashes map[string]sums, version string) (edits []edit, lines []string, err error) {
	for _, m := range mods {
		e, l, err := moduleEdits(root, m, hashes, version)
		if err != nil {
			return nil, nil, err
		}
		edits = append(edits, e...)
		lines = append(lines, l...)
	}
	return edits, lines, nil
}

// checkReleasable refuses a repository whose modules are not all known, whose
// tracked files have uncommitted changes, or that has one of the tags already.
func checkReleasable(root string, tags []string) error {
	if err := checkModuleList(root); err != nil {
		return err
	}
	if err := checkClean(root); err != nil {
		return err
	}
	return checkTagsFree(root, tags)
}

// tagsFor names the tag of each module at version: the root module's is the
// version, a nested module's is prefixed with its directory.
func tagsFor(mods []goModule, version string) []string {
	tags := make([]string, len(mods))
	for i, m := range mods {
		tags[i] = version
		if m.dir != "." {
			tags[i] = m.dir + "/" + version
		}
	}
	return tags
}

// print says what changed and the commands that finish the release.
func (p plan) print(w io.Writer) {
	fmt.Fprintf(w, "Prepared %s from commit %s.\n", p.version, p.commit)
	if len(p.changed) == 0 {
		fmt.Fprintln(w, "No file needed a change: the modules already require each other at this version.")
	} else {
		fmt.Fprintln(w, "\nChanged (review with git diff):")
		for _, f := range p.changed {
			fmt.Fprintf(w, "\t%s\n", f)
		}
		fmt.Fprintln(w, "\nwith these go.sum lines, as the module proxy will compute them from the tag:")
		for _, l := range p.sums {
			fmt.Fprintf(w, "\t%s\n", l)
		}
	}
	fmt.Fprintln(w, "\nNothing was committed, tagged or pushed. To finish the release:")
	if len(p.changed) > 0 {
		fmt.Fprintf(w, "\tgit commit -m 'Release %s: the modules require each other at %s' --", p.version, p.version)
		for _, f := range p.changed {
			fmt.Fprintf(w, " %s", f)
		}
		fmt.Fprintln(w)
	}
	for _, t := range p.tags {
		fmt.Fprintf(w, "\tgit tag %s\n", t)
	}
	fmt.Fprintf(w, "\tgit push origin HEAD")
	for _, t := range p.tags {
		fmt.Fprintf(w, " %s", t)
	}
	fmt.Fprintln(w, "\nPush the tags together: a module that requires another at this version cannot be fetched before the other's tag is public.")
}
