//go:build linux && amd64

package jail

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/adk-codemode/codemode/internal/escapeprobe"
	"github.com/adk-codemode/codemode/internal/hostcap"
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
	if os.Geteuid() != 0 {
		t.Skip("the tests run unprivileged, so TestEscapeProbes ran rootless")
	}
	cmd := exec.Command("/proc/self/exe", "-test.run=^TestEscapeProbes$", "-test.count=1", "-test.v")
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/nonexistent", "TMPDIR=" + os.TempDir(), testMark}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	if strings.Contains(string(out), "--- SKIP") {
		hostcap.Missing(t, hostcap.UserNS, "an unprivileged process cannot build a jail:\n", string(out))
	}
	if err != nil || !strings.Contains(string(out), "--- PASS: TestEscapeProbes/forked/host-loopback") {
		t.Fatalf("the suite as nobody: %v\n%s", err, out)
	}
}
