package hostcap

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// childEnv names the capability that TestMissingChild reports missing.
const childEnv = "CODEMODE_HOSTCAP_CHILD"

// TestMissingChild is a test on a host that lacks the capability named by
// childEnv: TestMissing runs it in a process of its own, as `go test` runs
// any test, and reads how it ended.
func TestMissingChild(t *testing.T) {
	name := os.Getenv(childEnv)
	if name == "" {
		t.Skip("run by TestMissing in a process of its own")
	}
	for _, c := range capabilities {
		if c.name == name {
			Missing(t, c, "faked absent by TestMissing")
			t.Fatal("Missing returned")
		}
	}
	t.Fatalf("no capability %q", name)
}

// TestMissing runs a test whose capability is missing, with and without
// the variables that require it: without them it skips, with them it
// fails, and either way it says what is missing and how to provide it.
// CODEMODE_REQUIRE_ALL=1 on a host without user namespaces is the case
// that matters most: the jail's tests, and every end-to-end test of the
// plugin, must fail there rather than pass by skipping.
func TestMissing(t *testing.T) {
	type run struct {
		c    Capability
		env  string // "NAME=value" or ""
		fail bool
	}
	var runs []run
	for _, c := range capabilities {
		runs = append(runs,
			run{c, "", false},
			run{c, "CODEMODE_REQUIRE_ALL=1", true},
			run{c, "CODEMODE_REQUIRE_ALL=0", false},
			run{c, "CODEMODE_REQUIRE_DOCKER=1", c == Docker},
		)
	}
	for _, r := range runs {
		t.Run(r.c.name+"/"+r.env, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestMissingChild$", "-test.v", "-test.count=1")
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "CODEMODE_REQUIRE_") && !strings.HasPrefix(kv, childEnv+"=") {
					cmd.Env = append(cmd.Env, kv)
				}
			}
			cmd.Env = append(cmd.Env, childEnv+"="+r.c.name)
			if r.env != "" {
				cmd.Env = append(cmd.Env, r.env)
			}
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			switch {
			case r.fail && (!errors.As(err, &ee) || !strings.Contains(string(out), "--- FAIL: TestMissingChild")):
				t.Fatalf("with %q the test did not fail (%v):\n%s", r.env, err, out)
			case !r.fail && (err != nil || !strings.Contains(string(out), "--- SKIP: TestMissingChild")):
				t.Fatalf("with %q the test did not skip (%v):\n%s", r.env, err, out)
			}
			// The test's log is indented and may be wrapped by go test;
			// compare its words.
			words := strings.Join(strings.Fields(string(out)), " ")
			want := []string{"missing: " + r.c.what + " (faked absent by TestMissing)", "to run this test: " + r.c.how}
			if r.fail {
				want = append(want, r.env+": a missing capability fails the test instead of skipping it")
			} else {
				hint := "(CODEMODE_REQUIRE_ALL=1 makes this a failure)"
				if r.c == Docker {
					hint = "(CODEMODE_REQUIRE_ALL=1 or CODEMODE_REQUIRE_DOCKER=1 makes this a failure)"
				}
				want = append(want, hint)
			}
			for _, w := range want {
				if !strings.Contains(words, w) {
					t.Errorf("the test's message lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestCapabilitiesListed holds capabilities, which TestMissing goes
// through, to the package's variables of type Capability, and each to a
// name of its own and a message that says what and how.
func TestCapabilitiesListed(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "hostcap.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	ast.Inspect(f, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok && len(vs.Values) == 1 {
			if cl, ok := vs.Values[0].(*ast.CompositeLit); ok {
				if id, ok := cl.Type.(*ast.Ident); ok && id.Name == "Capability" {
					declared = append(declared, vs.Names[0].Name)
				}
			}
		}
		return true
	})
	if len(declared) != len(capabilities) {
		t.Errorf("hostcap.go declares %d capabilities (%v); capabilities lists %d", len(declared), declared, len(capabilities))
	}
	names := map[string]bool{}
	for _, c := range capabilities {
		if c.name == "" || c.what == "" || c.how == "" {
			t.Errorf("capability %+v: a name, what is missing and how to provide it are all needed", c)
		}
		if names[c.name] {
			t.Errorf("two capabilities are named %q", c.name)
		}
		names[c.name] = true
	}
}

// TestNoOtherSwitch finds code outside this package that reads the
// variables that turn skips into failures: a test that reads them itself
// is a helper of its own, which this package replaces.
func TestNoOtherSwitch(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	self, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == self || d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(data), `"CODEMODE_REQUIRE_`) {
			rel, _ := filepath.Rel(root, path)
			found = append(found, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(found)
	for _, f := range found {
		t.Errorf("%s reads a CODEMODE_REQUIRE_ variable itself: skip through hostcap.Missing, or ask hostcap.Required", f)
	}
}

// TestWithoutChild goes on without the capability named by childEnv: run
// by TestWithout in a process of its own.
func TestWithoutChild(t *testing.T) {
	name := os.Getenv(childEnv)
	if name == "" {
		t.Skip("run by TestWithout in a process of its own")
	}
	for _, c := range capabilities {
		if c.name == name {
			Without(t, c, "a stand-in", "faked absent by TestWithout")
			t.Log("went on")
			return
		}
	}
	t.Fatalf("no capability %q", name)
}

// TestWithout runs a test that goes on without its capability: it passes
// and logs what it used instead, unless a variable requires the
// capability, and then it fails, so that a substitute never hides a
// missing capability from CODEMODE_REQUIRE_ALL=1.
func TestWithout(t *testing.T) {
	for _, tc := range []struct {
		env  string
		fail bool
	}{{"", false}, {"CODEMODE_REQUIRE_ALL=1", true}, {"CODEMODE_REQUIRE_DOCKER=1", false}} {
		t.Run(tc.env, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestWithoutChild$", "-test.v", "-test.count=1")
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "CODEMODE_REQUIRE_") && !strings.HasPrefix(kv, childEnv+"=") {
					cmd.Env = append(cmd.Env, kv)
				}
			}
			cmd.Env = append(cmd.Env, childEnv+"="+UserNS.name)
			if tc.env != "" {
				cmd.Env = append(cmd.Env, tc.env)
			}
			out, err := cmd.CombinedOutput()
			words := strings.Join(strings.Fields(string(out)), " ")
			want := []string{"missing: " + UserNS.what + " (faked absent by TestWithout)"}
			if tc.fail {
				if err == nil || !strings.Contains(words, "--- FAIL: TestWithoutChild") || strings.Contains(words, "went on") {
					t.Fatalf("with %q the test did not fail (%v):\n%s", tc.env, err, out)
				}
				want = append(want, "a missing capability fails the test instead of its running on a stand-in")
			} else {
				if err != nil || !strings.Contains(words, "--- PASS: TestWithoutChild") || !strings.Contains(words, "went on") {
					t.Fatalf("with %q the test did not go on (%v):\n%s", tc.env, err, out)
				}
				want = append(want, "the test runs on a stand-in instead (CODEMODE_REQUIRE_ALL=1 makes this a failure)")
			}
			for _, w := range want {
				if !strings.Contains(words, w) {
					t.Errorf("the test's message lacks %q:\n%s", w, out)
				}
			}
		})
	}
}
