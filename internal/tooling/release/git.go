package main

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
)

// git runs git in dir and returns what it printed.
func git(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s in %s: %w: %s", strings.Join(args, " "), dir, err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// repoRoot returns the root of the git work tree that holds dir.
func repoRoot(dir string) (string, error) {
	out, err := git(dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", fmt.Errorf("%w: release from a git checkout of the repository, where the tags will be made", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// headCommit returns the commit at HEAD.
func headCommit(root string) (string, error) {
	out, err := git(root, "rev-parse", "--verify", "HEAD^{commit}")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// checkClean refuses a tree whose tracked files differ from HEAD: the
// hashes are computed from HEAD, and the release commit would carry those
// changes too.
func checkClean(root string) error {
	out, err := git(root, "status", "--porcelain", "--untracked-files=no")
	if err != nil {
		return err
	}
	if strings.TrimSpace(string(out)) != "" {
		return fmt.Errorf("the tree has uncommitted changes, which the release commit would mix with its own and the hashes would not cover; commit or stash them first:\n%s", strings.TrimRight(string(out), "\n"))
	}
	return nil
}

// checkTagsFree refuses tags that exist already: a released version never
// changes, since the checksum database remembers its hashes.
func checkTagsFree(root string, tags []string) error {
	for _, t := range tags {
		if _, err := git(root, "rev-parse", "--quiet", "--verify", "refs/tags/"+t); err == nil {
			return fmt.Errorf("tag %s exists already: a released version cannot be changed, since the checksum database keeps its hashes; release the next version instead", t)
		}
	}
	return nil
}
