//go:build linux && amd64

package jail_test

import (
	"encoding/json"
	"os/exec"
	"testing"

	"github.com/adk-codemode/codemode/backend/jail"
	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
	"github.com/adk-codemode/codemode/transport"
)

// TestJailPackageReport opens forked and cold sessions on the host's
// interpreter: the packages they report leave out the host system's own
// bindings (apt, dbus, gi on Debian) that the interpreter can import.
func TestJailPackageReport(t *testing.T) {
	python, err := jail.Config{}.Interpreter()
	if err != nil {
		hostcap.Missing(t, hostcap.Python, err)
	}
	system := []string{"apt", "apt_pkg", "dbus", "gi", "pygtkcompat"}
	importable := importableOf(t, python, system...)
	// A library the system's package manager installed stays listed.
	libraries := importableOf(t, python, "yaml", "six", "cryptography")
	if len(importable) == 0 {
		t.Skipf("%s imports none of %v, so the test shows nothing here", python, system)
	}
	for _, tc := range []struct {
		name string
		be   *jail.Backend
	}{
		{"forked", jail.ForkingBackend(jail.Config{})},
		{"cold", &jail.Backend{Cold: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Cleanup(func() { _ = tc.be.Close() })
			s, err := tc.be.Open(t.Context(), transport.SessionConfig{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.(*jail.Session).Fallback(); tc.name == "forked" && err != nil {
				t.Fatalf("started cold: %v", err)
			}
			pkgs := s.Environment().Packages
			for _, m := range importable {
				if dists, ok := pkgs[m]; ok {
					t.Errorf("the session reports the host system's module %s (%v)", m, dists)
				}
			}
			for _, m := range libraries {
				if _, ok := pkgs[m]; !ok {
					t.Errorf("the session does not report %s, which its code can import", m)
				}
			}
		})
	}
}

// importableOf returns those of modules that python can import.
func importableOf(t *testing.T, python string, modules ...string) []string {
	t.Helper()
	found, err := exec.Command(python, append([]string{"-I", "-c", `import importlib.util, json, sys
print(json.dumps([m for m in sys.argv[1:] if importlib.util.find_spec(m) is not None]))`}, modules...)...).Output()
	if err != nil {
		t.Fatal(err)
	}
	var importable []string
	if err := json.Unmarshal(found, &importable); err != nil {
		t.Fatal(err)
	}
	return importable
}
