package maketargets

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// lintedMethod is a method of this repository that .golangci.yml names,
// such as (*github.com/adk-codemode/codemode/internal/protocol/wire.Conn).Close.
var lintedMethod = regexp.MustCompile(`\((\*?)github\.com/adk-codemode/codemode/([\w/.-]+)\.(\w+)\)\.(\w+)`)

// TestLintConfigNamesWhatExists: every method of this repository that
// .golangci.yml names is declared, on that type in that package; an entry
// left behind by a move excludes nothing and hides that it did.
func TestLintConfigNamesWhatExists(t *testing.T) {
	cfg, err := os.ReadFile(filepath.Join(root, ".golangci.yml"))
	if err != nil {
		t.Fatal(err)
	}
	found := lintedMethod.FindAllStringSubmatch(string(cfg), -1)
	if len(found) == 0 {
		t.Fatal(".golangci.yml names no method of this repository; check the pattern here against it")
	}
	for _, m := range found {
		if err := declared(filepath.Join(root, filepath.FromSlash(m[2])), m[3], m[4]); err != "" {
			t.Errorf(".golangci.yml names %s: %s", m[0], err)
		}
	}
}

// TestDeclaredFindsMethods checks declared against a method that exists, an
// interface's method and two that do not.
func TestDeclaredFindsMethods(t *testing.T) {
	wire := filepath.Join(root, "internal", "protocol", "wire")
	if msg := declared(wire, "Conn", "Close"); msg != "" {
		t.Errorf("(*wire.Conn).Close: %s", msg)
	}
	if msg := declared(filepath.Join(root, "transport"), "Session", "Close"); msg != "" {
		t.Errorf("transport.Session's Close: %s", msg)
	}
	if msg := declared(wire, "Conn", "Shut"); msg == "" {
		t.Error("(*wire.Conn).Shut was found")
	}
	if msg := declared(filepath.Join(root, "no", "such"), "Conn", "Close"); msg == "" {
		t.Error("a method in a missing package was found")
	}
}

// declared says what is wrong, or "", with the method name of typ in the
// package in dir: declared with that receiver, or listed in the interface.
func declared(dir, typ, name string) string {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		return "no Go package in " + filepath.ToSlash(dir)
	}
	method := regexp.MustCompile(`(?m)^func \(\w+ \*?` + typ + `\) ` + name + `\(`)
	iface := regexp.MustCompile(`(?ms)^type ` + typ + ` interface \{(.*?)^\}`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			return err.Error()
		}
		if method.Match(src) {
			return ""
		}
		if m := iface.FindSubmatch(src); m != nil && regexp.MustCompile(`(?m)^\s+`+name+`\(`).Match(m[1]) {
			return ""
		}
	}
	return "no method " + name + " of " + typ + " in " + filepath.ToSlash(dir)
}
