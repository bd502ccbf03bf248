//go:build linux && amd64

package jail

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/adk-codemode/codemode/internal/testsupport/escapeprobe"
	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
	"github.com/adk-codemode/codemode/transport"
)

// TestEscapeProbes runs the escape-probe suite in a cold session and in
// one forked from a template: as root where the tests run as root (then
// TestEscapeProbesRootless runs it rootless too), rootless otherwise.
func TestEscapeProbes(t *testing.T) {
	startPaths(t, Config{}, func(t *testing.T, be *Backend) {
		escapeprobe.Run(t, func(t *testing.T) transport.Session { return sessionOf(t, be) })
	})
}

// TestEscapeProbesRootless runs TestEscapeProbes again in this test
// binary as an unprivileged user (nobody), whose jails are rootless.
func TestEscapeProbesRootless(t *testing.T) {
	runAsNobody(t, "TestEscapeProbes", "TestEscapeProbes/forked/host-loopback")
}

// runAsNobody runs the test named test again in this test binary as the
// unprivileged user nobody, whose jails are rootless, and fails unless
// the subtest passed reports a pass. It skips where the tests already run
// unprivileged (the test itself ran rootless then).
func runAsNobody(t *testing.T, test, passed string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("the tests run unprivileged, so %s ran rootless", test)
	}
	cmd := exec.Command("/proc/self/exe", "-test.run=^"+test+"$", "-test.count=1", "-test.v")
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/nonexistent", "TMPDIR=" + os.TempDir(), testMark}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	if strings.Contains(string(out), "--- SKIP") {
		hostcap.Missing(t, hostcap.UserNS, "an unprivileged process cannot build a jail:\n", string(out))
	}
	if err != nil || !strings.Contains(string(out), "--- PASS: "+passed) {
		t.Fatalf("%s as nobody: %v\n%s", test, err, out)
	}
}
