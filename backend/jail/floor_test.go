//go:build linux && amd64

package jail

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
	"github.com/adk-codemode/codemode/transport"
)

// helperFloor makes this test binary the init of a floor jail
// (internal/floor): the least a jail whose init re-executes the host
// binary must do before Python runs.
const helperFloor = "jail-test-floor"

// floorCmd runs args in a floor jail whose init is the program exe
// (argv0 helperFloor), with namespaces and id maps made exactly as the
// real jail's are.
func floorCmd(exe string, args []string) *exec.Cmd {
	cmd := exec.Command(exe, args...)
	cmd.Args[0] = helperFloor
	cmd.Env = []string{}
	cmd.SysProcAttr = sysProcAttr(os.Geteuid() != 0, Config{}.withDefaults())
	return cmd
}

// floorInterpreter is the default interpreter if the floor jail can run
// it (it binds /usr only).
func floorInterpreter(tb testing.TB) string {
	py, err := Config{}.Interpreter()
	if err != nil {
		hostcap.Missing(tb, hostcap.Python, err)
	}
	if !strings.HasPrefix(py, "/usr/") {
		hostcap.Missing(tb, hostcap.Python, "the floor jail binds /usr only; the interpreter is ", py)
	}
	if err := supported(); err != nil {
		hostcap.Missing(tb, hostcap.UserNS, err)
	}
	return py
}

// buildFloorInit builds testdata/floorinit, the floor init as a small
// program of its own.
func buildFloorInit(tb testing.TB) string {
	gobin, err := exec.LookPath("go")
	if err != nil {
		hostcap.Missing(tb, hostcap.GoCommand, "to build the floor init: ", err)
	}
	// The jail's setup uid must reach the program: not through TempDir's
	// 0700 directories.
	dir, err := os.MkdirTemp("", "codemode-floor-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	exe := filepath.Join(dir, "floorinit")
	cmd := exec.Command(gobin, "build", "-o", exe, "./testdata/floorinit")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go build ./testdata/floorinit: %v\n%s", err, out)
	}
	return exe
}

// TestFloorJailRunsPython keeps the floor benchmark honest: both floor
// inits really put the interpreter in new namespaces (it is pid 1, sees
// only lo and the floor's root) and run it.
func TestFloorJailRunsPython(t *testing.T) {
	py := floorInterpreter(t)
	code := "import os, socket; print(os.getpid(), [n for _, n in socket.if_nameindex()], sorted(os.listdir('/')))"
	const want = "1 ['lo'] ['.old', 'bin', 'lib', 'lib64', 'proc', 'usr']\n"
	for _, exe := range []string{"/proc/self/exe", buildFloorInit(t)} {
		got, err := floorCmd(exe, []string{py, "-c", code}).CombinedOutput()
		if err != nil {
			t.Fatalf("floor jail with init %s: %v\n%s", exe, err, got)
		}
		if string(got) != want {
			t.Errorf("floor jail with init %s saw %q, want %q", exe, got, want)
		}
	}
}

// BenchmarkJailFloor times, in one loop, a bare spawn of the interpreter
// (`-c pass`), the same spawn in a floor jail whose init is a small
// program of its own (tiny-floor), the same with this test binary
// re-executed as the init as the real jail does (floor), and a real
// jailed session (Backend.Open until the worker is ready). The floors are
// what any jail built this way costs on this machine before it does
// anything a sandbox needs.
func BenchmarkJailFloor(b *testing.B) {
	py := floorInterpreter(b)
	tiny := buildFloorInit(b)
	be := &Backend{}
	var bare, tinyFloor, floor, sess []time.Duration
	timed := func(into *[]time.Duration, cmd *exec.Cmd) {
		cmd.Stderr = os.Stderr
		t0 := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		*into = append(*into, time.Since(t0))
	}
	for b.Loop() {
		timed(&bare, exec.Command(py, "-c", "pass"))
		timed(&tinyFloor, floorCmd(tiny, []string{py, "-c", "pass"}))
		timed(&floor, floorCmd("/proc/self/exe", []string{py, "-c", "pass"}))

		t0 := time.Now()
		s, err := be.Open(context.Background(), transport.SessionConfig{})
		if err != nil {
			b.Fatal(err)
		}
		sess = append(sess, time.Since(t0))
		b.StopTimer()
		s.Close()
		b.StartTimer()
	}
	mb := medianOf(bare)
	b.ReportMetric(ms(mb), "bare-ms")
	for _, m := range []struct {
		name string
		ds   []time.Duration
	}{{"tiny-floor", tinyFloor}, {"floor", floor}, {"session", sess}} {
		d := medianOf(m.ds)
		b.ReportMetric(ms(d), m.name+"-ms")
		b.ReportMetric(float64(d)/float64(mb), m.name+"-ratio")
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func medianOf(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
