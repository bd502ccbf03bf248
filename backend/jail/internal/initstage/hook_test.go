//go:build linux && amd64

package initstage_test

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	// Packages with init work that sort late and that a large program
	// links (net and its users, path/filepath and os/exec, log/slog,
	// regexp). This test binary links them so that TestHookRunsEarly can
	// see the hooks run before them.
	_ "crypto/tls"
	_ "log/slog"
	_ "net/http"
	_ "path/filepath"
	_ "regexp"
)

// TestHookRunsEarly runs this test binary with GODEBUG=inittrace=1 and
// checks that the hooks that take over a re-executed program, the jail's
// init stage (this package) and the supervisor, are initialized before
// every late package the binary links. Go initializes a package only after
// its dependencies, so a hook that came to depend on one of them (or on a
// package that does) would run after it: in a large program, after most of
// its package initializers, at every cold start of a jail.
func TestHookRunsEarly(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", os.Args[0], err, stderr.String())
	}
	order := map[string]int{} // package → its place among the inits
	var n int
	for _, line := range strings.Split(stderr.String(), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "init" {
			n++
			if _, ok := order[f[1]]; !ok {
				order[f[1]] = n
			}
		}
	}
	const module = "github.com/adk-codemode/codemode"
	hooks := []string{module + "/internal/supervisor", module + "/backend/jail/internal/initstage"}
	late := []string{"net", "net/http", "crypto/tls", "path/filepath", "log/slog", "regexp"}
	seen := 0
	for _, l := range late {
		at, ok := order[l]
		if !ok {
			continue // no init work of its own in this Go release
		}
		seen++
		for _, h := range hooks {
			hat, ok := order[h]
			if !ok {
				t.Fatalf("no init of %s in the trace (%d inits)", h, n)
			}
			if hat > at {
				hint := ""
				if tat, ok := order["testing"]; ok && hat > tat {
					hint = "; it is after testing too: an internal test file that imports testing makes the package depend on it here (write tests in package initstage_test)"
				}
				t.Errorf("%s is initialized after %s (init %d and %d of %d): it must not depend on it, "+
					"or the jail's init reaches its hook only after most of a large program's initializers (see the package documentation)%s",
					h, l, hat, at, n, hint)
			}
		}
	}
	if seen < 2 {
		t.Fatalf("the trace shows the init of %d of %v; it tells nothing:\n%s", seen, late, stderr.String())
	}
	for _, h := range hooks {
		t.Logf("%s: init %d of %d", h, order[h], n)
	}
}
