package hostcap

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// RequireAll is the variable that turns a skip for any missing capability
// into a failure when it is "1".
const RequireAll = "CODEMODE_REQUIRE_ALL"

// Capability is something on the host that some tests need. The package's
// variables are the capabilities the repository's tests use.
type Capability struct {
	name string // short, for messages and tests
	what string // what is missing, for "missing: ..."
	how  string // how to provide it
	env  string // a variable that requires this capability alone, or ""
}

// The capabilities the repository's tests need.
var (
	// UserNS: the namespace jail (user, mount and pid namespaces).
	UserNS = Capability{
		name: "userns",
		what: "user namespaces for the namespace jail",
		how: "on Linux 5.12+ on amd64, allow user namespaces (sysctl user.max_user_namespaces above 0) and run the tests as root, " +
			"or allow unprivileged ones too (kernel.unprivileged_userns_clone=1, and on Ubuntu kernel.apparmor_restrict_unprivileged_userns=0); " +
			"in a container, allow unshare and mount (docs/deployment.md)",
	}
	// Python: a Python 3 interpreter, /usr/bin/python3 where a test names it.
	Python = Capability{
		name: "python3",
		what: "a Python 3 interpreter (/usr/bin/python3)",
		how:  "install python3 (apt-get install python3)",
	}
	// GoCommand: the go command, for tests that build or list packages.
	GoCommand = Capability{
		name: "go",
		what: "the go command",
		how:  "put the Go toolchain's bin directory on PATH",
	}
	// Docker: a Docker Engine API (Docker, podman) with the sandbox image.
	Docker = Capability{
		name: "docker",
		what: "a Docker engine with the sandbox image",
		how: "start an engine (Docker, or `podman system service --time 0 unix:///run/podman.sock`), " +
			"set DOCKER_HOST to its socket and run `make image`",
		env: "CODEMODE_REQUIRE_DOCKER",
	}
	// NPM: node and npm, which install test fixtures from npm (the MCP
	// reference servers, the TypeScript SDK, the MCP Inspector, GitHub's
	// OpenAPI description).
	NPM = Capability{
		name: "npm",
		what: "a package from npm (node and npm install it on first use)",
		how:  "install node and npm (apt-get install npm), or install the package where the message says",
	}
	// Inotify: an inotify instance for the workspace tracker.
	Inotify = Capability{
		name: "inotify",
		what: "an inotify instance",
		how:  "raise fs.inotify.max_user_instances (sysctl) or close what holds the instances",
	}
	// Cgroup: a cgroup hierarchy the jail can create cgroups in and move
	// processes into.
	Cgroup = Capability{
		name: "cgroup",
		what: "a writable cgroup hierarchy",
		how:  "run the tests as root on a host with cgroups mounted under /sys/fs/cgroup, or delegate a cgroup v2 subtree to the user",
	}
	// Proc: /proc, with the process's own /proc/self/fd.
	Proc = Capability{
		name: "proc",
		what: "/proc (with /proc/self/fd)",
		how:  "mount proc on /proc",
	}
	// Home: a home directory the tests can write a file into.
	Home = Capability{
		name: "home",
		what: "a writable home directory",
		how:  "set HOME to a directory this user can write to",
	}
	// Git: the git command, for tests that make repositories.
	Git = Capability{
		name: "git",
		what: "the git command",
		how:  "install git (apt-get install git)",
	}
	// ModuleProxy: the Go module proxy, for tests that fetch modules
	// outside this repository (ADK Go and its requirements).
	ModuleProxy = Capability{
		name: "goproxy",
		what: "the Go module proxy",
		how:  "let the go command reach the proxy in GOPROXY, or point GOPROXY at a mirror that serves ADK Go and its requirements",
	}
)

// capabilities lists the package's capabilities.
var capabilities = []Capability{UserNS, Python, GoCommand, Docker, NPM, Inotify, Cgroup, Proc, Home, Git, ModuleProxy}

// String returns the capability's short name, such as "userns".
func (c Capability) String() string { return c.name }

// Required reports whether a test that lacks c fails rather than skips:
// CODEMODE_REQUIRE_ALL=1, or c's own variable (CODEMODE_REQUIRE_DOCKER=1
// for [Docker]).
func Required(c Capability) bool {
	return os.Getenv(RequireAll) == "1" || (c.env != "" && os.Getenv(c.env) == "1")
}

// Missing ends tb because c is missing on this host; why says how that
// showed (an error, a path, a probe's output), formatted as by fmt.Sprint.
// It skips tb, or fails it where c is [Required]; either way the message
// says what is missing and how to provide it.
func Missing(tb testing.TB, c Capability, why ...any) {
	tb.Helper()
	msg := c.missing("to run this test", why)
	if Required(c) {
		tb.Fatal(msg + "\n" + c.requiredBy() + ": a missing capability fails the test instead of skipping it")
	}
	tb.Skip(msg + "\n(" + strings.Join(c.switches(), " or ") + " makes this a failure)")
}

// Without lets tb go on without c, by instead (what the test uses in its
// place, as "the unsandboxed backend"), for a test whose point is not c;
// why is as for [Missing]. Where c is [Required] it fails tb, as Missing
// does: a substitute must never hide a missing capability from a run that
// requires all. Otherwise it logs what is missing, how to provide it, and
// what the test uses instead.
func Without(tb testing.TB, c Capability, instead string, why ...any) {
	tb.Helper()
	msg := c.missing("to run this test with it", why)
	if Required(c) {
		tb.Fatal(msg + "\n" + c.requiredBy() + ": a missing capability fails the test instead of its running on " + instead)
	}
	tb.Log(msg + "\nthe test runs on " + instead + " instead (" + strings.Join(c.switches(), " or ") + " makes this a failure)")
}

// missing says what of c is missing, how that showed (why, formatted as
// by fmt.Sprint) and, after to, how to provide it.
func (c Capability) missing(to string, why []any) string {
	var b strings.Builder
	fmt.Fprintf(&b, "missing: %s", c.what)
	if s := strings.TrimSpace(fmt.Sprint(why...)); s != "" {
		fmt.Fprintf(&b, " (%s)", s)
	}
	fmt.Fprintf(&b, "\n%s: %s", to, c.how)
	return b.String()
}

// switches are the settings that make c required.
func (c Capability) switches() []string {
	s := []string{RequireAll + "=1"}
	if c.env != "" {
		s = append(s, c.env+"=1")
	}
	return s
}

// requiredBy names the variable that made c required.
func (c Capability) requiredBy() string {
	if os.Getenv(RequireAll) == "1" {
		return RequireAll + "=1"
	}
	return c.env + "=1"
}
