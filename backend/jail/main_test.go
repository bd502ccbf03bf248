//go:build linux && amd64

package jail

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/backend/jail/internal/floor"
	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
)

// testMark is put into the environment of every payload this test binary
// starts, so leftover processes can be found through /proc.
var testMark = fmt.Sprintf("CODEMODE_JAIL_TEST=%d", os.Getpid())

// Helper stages of the test binary, recognised by argv0 (the jail's own
// stages are caught earlier, by the init hook of package initstage).
const (
	helperSelf = "jail-test-self" // payload of Spec.Self: reports identity
	helperHost = "jail-test-host" // a host process that starts a jail (SIGKILL and rootless tests)
)

func TestMain(m *testing.M) {
	switch os.Args[0] {
	case helperSelf:
		selfPayload()
		return
	case helperHost:
		os.Exit(hostHelper(os.Args[1:]))
	case helperFloor:
		floor.Init(os.Args[1:])
	}
	code := m.Run()
	// Templates live until stopped; their sessions are all closed by now.
	if err := stopAllZygotes(30 * time.Second); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the template processes:", err)
		code = 1
	}
	if code == 0 {
		if err := leftovers(); err != nil {
			fmt.Fprintln(os.Stderr, "leftovers after the suite:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// leftovers reports processes carrying this binary's mark, children of this
// process, and cgroups named after it.
func leftovers() error {
	var problems []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ")); err == nil &&
			bytes.Contains(env, []byte(testMark+"\x00")) {
			problems = append(problems, fmt.Sprintf("marked process %d", pid))
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if f := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+1:])); len(f) > 1 && f[1] == strconv.Itoa(os.Getpid()) {
				problems = append(problems, fmt.Sprintf("child process %d", pid))
			}
		}
	}
	for _, base := range cgroupHierarchies() {
		cg, _ := os.ReadDir(base)
		for _, e := range cg {
			if strings.HasPrefix(e.Name(), fmt.Sprintf("%s%d-", cgroupNamePrefix, os.Getpid())) {
				problems = append(problems, "cgroup "+filepath.Join(base, e.Name()))
			}
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, ", "))
	}
	return nil
}

// skipIfUnsupported ends the test where this host cannot build jails at
// all: it skips, or fails under CODEMODE_REQUIRE_ALL=1 (see hostcap).
func skipIfUnsupported(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, ErrUnsupported) {
		hostcap.Missing(t, hostcap.UserNS, err)
	}
}

// result is the outcome of one jailed run.
type result struct {
	stdout, stderr string
	err            error // from Wait
	enf            Enforcement
	usage          Usage
}

func (r result) exitCode() int {
	var ee interface{ ExitCode() int }
	if errors.As(r.err, &ee) {
		return ee.ExitCode()
	}
	if r.err == nil {
		return 0
	}
	return -1
}

// baseEnv is the environment given to test payloads.
func baseEnv() []string {
	return []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/workspace", "LANG=C.UTF-8", testMark}
}

// run starts spec in a jail built from cfg and waits for it.
func run(t *testing.T, cfg Config, spec Spec) result {
	t.Helper()
	var out, errb bytes.Buffer
	if spec.Stdout == nil {
		spec.Stdout = &out
	}
	if spec.Stderr == nil {
		spec.Stderr = &errb
	}
	if spec.Env == nil {
		spec.Env = baseEnv()
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	c, err := Start(ctx, cfg, spec)
	skipIfUnsupported(t, err)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	werr := c.Wait()
	return result{stdout: out.String(), stderr: errb.String(), err: werr, enf: c.Enforced(), usage: c.Usage()}
}

// py runs Python code in a jail with the default interpreter.
func py(t *testing.T, cfg Config, code string, args ...string) result {
	t.Helper()
	bin, err := cfg.Interpreter()
	if err != nil {
		hostcap.Missing(t, hostcap.Python, err)
	}
	return run(t, cfg, Spec{Args: append([]string{bin, "-c", code}, args...)})
}

// mustOK fails unless the run exited 0.
func (r result) mustOK(t *testing.T) result {
	t.Helper()
	if r.err != nil {
		t.Fatalf("jail run failed: %v\nstdout:\n%s\nstderr:\n%s", r.err, r.stdout, r.stderr)
	}
	return r
}
