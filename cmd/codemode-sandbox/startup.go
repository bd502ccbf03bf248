package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// findPython returns the absolute path of the interpreter that --python
// names: a name without a slash is looked up on PATH, as a shell does, and
// a path is checked to be an executable file. The session's worker is
// started from that path directly, which neither searches PATH nor reads a
// relative path against this process's directory.
func findPython(name string) (string, error) {
	const fix = "pass --python with the path of a Python 3 interpreter, for example --python /usr/bin/python3"
	if name == "" {
		return "", errors.New("--python is empty: " + fix)
	}
	found, err := exec.LookPath(name)
	switch {
	case err == nil:
	case !strings.Contains(name, "/") && errors.Is(err, exec.ErrDot):
		return "", fmt.Errorf("--python %s: found only in the current directory, through a relative entry of PATH: %s", name, fix)
	case !strings.Contains(name, "/"):
		return "", fmt.Errorf("--python %s: no executable of that name on PATH (%s): %s, or add its directory to PATH", name, os.Getenv("PATH"), fix)
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("--python %s: no such file: %s", name, fix)
	default:
		return "", fmt.Errorf("--python %s: not an executable file (%w): %s", name, unwrapPath(err), fix)
	}
	abs, err := filepath.Abs(found)
	if err != nil {
		return "", fmt.Errorf("--python %s: %w", name, err)
	}
	return abs, nil
}

// checkWorkdir checks that dir, the code's working directory, is a
// directory this process can create files in: the code writes its files
// there, and the server finds them there.
func checkWorkdir(dir string) error {
	uid := os.Geteuid()
	if dir == "" {
		return errors.New("--workdir is empty: pass the directory the code runs in, for example --workdir /workspace")
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("--workdir %s does not exist: create it (in a container, mount a volume or a tmpfs there, for example --tmpfs %s), or pass --workdir with an existing directory", dir, dir)
	case err != nil:
		return fmt.Errorf("--workdir %s cannot be used (%w): pass --workdir with a directory that user %d can write to", dir, unwrapPath(err), uid)
	case !fi.IsDir():
		return fmt.Errorf("--workdir %s is not a directory: pass --workdir with a directory that user %d can write to", dir, uid)
	}
	f, err := os.CreateTemp(dir, ".codemode-write-check-")
	if err != nil {
		return fmt.Errorf("--workdir %s is not writable by user %d (%w), and the code writes its files there: "+
			"make it writable by that user (in a container, mount a tmpfs there, for example --tmpfs %s), or pass --workdir with a writable directory", dir, uid, unwrapPath(err), dir)
	}
	name := f.Name()
	_ = f.Close()
	if err := os.Remove(name); err != nil {
		return fmt.Errorf("--workdir %s: remove the file that checked it is writable: %w", dir, err)
	}
	return nil
}

// unwrapPath returns the reason inside a *fs.PathError or an
// *exec.Error, whose path the message names already.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Err
	}
	return err
}
