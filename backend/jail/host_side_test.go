//go:build linux && amd64

package jail

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
	"github.com/adk-codemode/codemode/transport"
)

// Cmd's methods may be called from any goroutine: Usage while another
// goroutine is in Wait must not be a data race (go test -race).
func TestUsageConcurrentWithWait(t *testing.T) {
	bin, err := Config{}.Interpreter()
	if err != nil {
		hostcap.Missing(t, hostcap.Python, err)
	}
	c, err := Start(t.Context(), Config{}, Spec{Args: []string{bin, "-c", "pass"}, Env: baseEnv()})
	skipIfUnsupported(t, err)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		_ = c.Wait()
		close(done)
	}()
	for {
		_ = c.Usage()
		select {
		case <-done:
			_ = c.Usage()
			return
		default:
			time.Sleep(100 * time.Microsecond)
		}
	}
}

// Host ids that the kernel cannot map are a configuration error, not a
// host without namespaces: the error must not wrap ErrUnsupported (which
// tells the user to fall back to the unsandboxed backend).
func TestBadHostIDsAreConfigErrors(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("host ids are used only by a root caller")
	}
	bin, err := Config{}.Interpreter()
	if err != nil {
		hostcap.Missing(t, hostcap.Python, err)
	}
	for _, cfg := range []Config{
		{SetupHostID: 70000, PayloadHostID: 70000},
		{PayloadHostID: 1 << 32},
		{SetupHostID: 1<<32 - 1},
	} {
		c, err := Start(t.Context(), cfg, Spec{Args: []string{bin, "-c", "pass"}, Env: baseEnv()})
		if err == nil {
			_ = c.Wait()
			t.Errorf("%+v: Start succeeded", cfg)
			continue
		}
		if errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "HostID") {
			t.Errorf("setup %d, payload %d: %v; want a configuration error naming the field, not ErrUnsupported",
				cfg.SetupHostID, cfg.PayloadHostID, err)
		}
	}
}

// When the jail's cgroup cannot be removed at the end of a session (a
// process outside the jail was put in it), closing the session must say
// so instead of leaking the cgroup silently.
func TestSessionCloseReportsCgroupLeak(t *testing.T) {
	s, err := (&Backend{}).Open(t.Context(), transport.SessionConfig{})
	skipIfUnsupported(t, err)
	if err != nil {
		t.Fatal(err)
	}
	// The session's cgroups, found from its pid 1 (a template and its
	// spare session have cgroups of their own).
	var dir, base string
	own, _ := os.ReadFile("/proc/" + strconv.Itoa(s.(*Session).cmd.Pid()) + "/cgroup")
	for _, line := range strings.Split(string(own), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || !strings.HasPrefix(filepath.Base(parts[2]), cgroupNamePrefix+strconv.Itoa(os.Getpid())+"-") {
			continue
		}
		for _, b := range cgroupHierarchies() {
			if d := filepath.Join(b, filepath.Base(parts[2])); dir == "" {
				if _, err := os.Stat(d); err == nil {
					dir, base = d, b
				}
			}
		}
	}
	if dir == "" {
		s.Close()
		hostcap.Missing(t, hostcap.Cgroup, "the session has no cgroup of its own")
	}
	intruder := exec.Command("sleep", "60")
	if err := intruder.Start(); err != nil {
		s.Close()
		t.Fatal(err)
	}
	defer func() {
		_ = intruder.Process.Kill()
		_ = intruder.Wait()
		_ = rmdirRetry(dir)
	}()
	if err := writeFile(dir, "cgroup.procs", int64(intruder.Process.Pid)); err != nil {
		s.Close()
		hostcap.Missing(t, hostcap.Cgroup, "cannot move a process into ", dir, ": ", err)
	}
	cerr := s.Close()
	// Move the intruder back out so that the cgroup can go.
	_ = writeFile(base, "cgroup.procs", int64(intruder.Process.Pid))
	if cerr == nil || !strings.Contains(cerr.Error(), "cgroup") {
		t.Errorf("Close = %v; want the failure to remove %s", cerr, dir)
	}
}
