//go:build linux

package server

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"
)

var update = flag.Bool("update", false, "rewrite the wanted reports of internal/both/server/testdata/packages/*.txtar")

// reportScript loads the runner (without starting it) and prints the
// package report, for the host's interpreter (argument "host", as the
// jail's) or an image's ("image"), over the sys.path directories given as
// further arguments, or over the interpreter's own sys.path when there
// are none.
const reportScript = `
import json, sys
g = {"__name__": "codemode_runner", "__builtins__": __builtins__}
exec(compile(sys.stdin.read(), "<runner>", "exec"), g)
if len(sys.argv) > 2:
    sys.path[:] = sys.argv[2:]
print(json.dumps(g["_packages"](sys.argv[1] == "host"), indent=1, sort_keys=True))
`

// packageReport runs the runner's package report with python, as mode
// ("host" or "image") says, over dirs (each a sys.path entry), or over the
// interpreter's own sys.path.
func packageReport(t *testing.T, python, mode string, site bool, dirs ...string) string {
	t.Helper()
	args := []string{"-I", "-B"}
	if !site {
		args = append(args, "-S")
	}
	cmd := exec.Command(python, append(append(args, "-c", reportScript, mode), dirs...)...)
	cmd.Stdin = strings.NewReader(RunnerSource())
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = ee.Stderr
		}
		t.Fatalf("the package report failed: %v\n%s", err, stderr)
	}
	return string(out)
}

// TestPackageReport runs the runner's package report over the sys.path
// directories each case lays out: the files of a case other than reason,
// mode and want, each top-level directory one sys.path entry in sorted
// order. mode is "host" (the default: the jail's interpreter is the
// host's) or "image".
func TestPackageReport(t *testing.T) {
	needPython(t)
	paths, err := filepath.Glob(filepath.Join("testdata", "packages", "*.txtar"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(path)
			if err != nil {
				t.Fatal(err)
			}
			root := t.TempDir()
			tops := map[string]bool{}
			var want *txtar.File
			reason := false
			mode := "host"
			for i := range ar.Files {
				f := &ar.Files[i]
				switch f.Name {
				case "reason":
					reason = strings.TrimSpace(string(f.Data)) != ""
					continue
				case "want":
					want = f
					continue
				case "mode":
					mode = strings.TrimSpace(string(f.Data))
					continue
				}
				if !filepath.IsLocal(f.Name) || !strings.Contains(f.Name, "/") {
					t.Fatalf("%s: %q is not a file below a sys.path directory", path, f.Name)
				}
				p := filepath.Join(root, filepath.FromSlash(f.Name))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, f.Data, 0o644); err != nil {
					t.Fatal(err)
				}
				tops[strings.SplitN(f.Name, "/", 2)[0]] = true
			}
			if !reason {
				t.Fatalf("%s: a golden case needs a non-empty reason section", path)
			}
			var dirs []string
			for d := range tops {
				dirs = append(dirs, filepath.Join(root, d))
			}
			sort.Strings(dirs)
			got := packageReport(t, testPython, mode, false, dirs...)
			if *update {
				if want == nil {
					ar.Files = append(ar.Files, txtar.File{Name: "want"})
					want = &ar.Files[len(ar.Files)-1]
				}
				want.Data = []byte(got)
				if err := os.WriteFile(path, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if want == nil {
				t.Fatalf("%s has no want section; run with -update", path)
			}
			if diff := cmp.Diff(string(want.Data), got); diff != "" {
				t.Errorf("%s: the report differs (-want +got); rerun with -update if the change is meant:\n%s", path, diff)
			}
		})
	}
}

// TestPackageReportOfTheHost runs the report over the host interpreter's
// own sys.path, as the jail does: the system's own bindings that the host
// can import (apt, dbus, gi on Debian) are not listed. (The jail's own
// test, TestJailPackageReport, runs it through a session.)
func TestPackageReportOfTheHost(t *testing.T) {
	needPython(t)
	system := []string{"apt", "apt_pkg", "dbus", "gi", "pygtkcompat"}
	found, err := exec.Command(testPython, append([]string{"-I", "-c", `import importlib.util, json, sys
print(json.dumps([m for m in sys.argv[1:] if importlib.util.find_spec(m) is not None]))`}, system...)...).Output()
	if err != nil {
		t.Fatal(err)
	}
	var importable []string
	if err := json.Unmarshal(found, &importable); err != nil {
		t.Fatal(err)
	}
	if len(importable) == 0 {
		t.Skipf("the host's python3 imports none of %v, so the test shows nothing here", system)
	}
	var report map[string]map[string]string
	if err := json.Unmarshal([]byte(packageReport(t, testPython, "host", true)), &report); err != nil {
		t.Fatal(err)
	}
	for _, m := range importable {
		if dists, ok := report[m]; ok {
			t.Errorf("the report lists the host system's module %s (%v)", m, dists)
		}
	}
}
