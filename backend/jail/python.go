package jail

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// interp is a resolved host interpreter.
type interp struct {
	bin    string // real binary path, same inside the jail
	prefix string // install prefix to mount read-only, "" if under /usr
}

var interpCache sync.Map // configured path -> interp

// Interpreter returns the path of the configured Python inside the jail, to
// use as Spec.Args[0]. It resolves symlinks and shims (see [Config.Python]).
func (c Config) Interpreter() (string, error) {
	ip, err := resolvePython(c.Python)
	return ip.bin, err
}

func resolvePython(p string) (interp, error) {
	if v, ok := interpCache.Load(p); ok {
		return v.(interp), nil
	}
	ip, err := resolvePythonUncached(p)
	if err != nil {
		return interp{}, err
	}
	interpCache.Store(p, ip)
	return ip, nil
}

func resolvePythonUncached(p string) (interp, error) {
	orig := p
	if p == "" {
		if _, err := os.Stat("/usr/bin/python3"); err == nil {
			p = "/usr/bin/python3"
		} else {
			p = "python3"
		}
	}
	if !filepath.IsAbs(p) {
		lp, err := exec.LookPath(p)
		if err != nil {
			return interp{}, fmt.Errorf("jail: Config.Python: no %q on PATH (%w): install python3, or set Config.Python to an interpreter's path", p, err)
		}
		p, _ = filepath.Abs(lp)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return interp{}, fmt.Errorf("jail: Config.Python %q cannot be used: %w; set it to a Python 3 interpreter's path, or leave it empty for the host's python3", orig, err)
	}
	ip := interp{bin: real}
	if isScript(real) {
		// A shim (pyenv, asdf): ask the interpreter it launches.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, p, "-c",
			"import os,sys;print(os.path.realpath(sys.executable));print(sys.base_prefix)").Output()
		if err != nil {
			return interp{}, fmt.Errorf("jail: resolve python shim %q: %w", p, err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) != 2 || !filepath.IsAbs(lines[0]) || isScript(lines[0]) {
			return interp{}, fmt.Errorf("jail: resolve python shim %q: unexpected output %q", p, out)
		}
		ip.bin = lines[0]
		if base := filepath.Clean(lines[1]); filepath.IsAbs(base) && strings.HasPrefix(ip.bin, base+"/") {
			ip.prefix = base
		}
	}
	if ip.prefix == "" {
		dir := filepath.Dir(ip.bin)
		if filepath.Base(dir) == "bin" {
			dir = filepath.Dir(dir)
		}
		ip.prefix = dir
	}
	if ip.prefix == "/usr" || strings.HasPrefix(ip.prefix, "/usr/") {
		ip.prefix = ""
	} else if err := checkExtraPath(ip.prefix); err != nil {
		return interp{}, fmt.Errorf("jail: python prefix %q cannot be mounted: %w", ip.prefix, err)
	}
	return ip, nil
}

func isScript(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [2]byte
	n, _ := f.Read(b[:])
	return n == 2 && bytes.Equal(b[:], []byte("#!"))
}
