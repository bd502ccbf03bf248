//go:build linux && amd64

package jail

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
)

// hostReport is what testdata/hostprogram prints.
type hostReport struct {
	StartsMS []float64   `json:"starts_ms"`
	BareMS   []float64   `json:"bare_ms"`
	Enforced Enforcement `json:"enforced"`
	Output   string      `json:"output"`
}

// buildHostProgram builds testdata/hostprogram as a user would build a
// program of their own: in a module of its own (aaa.example/startprobe,
// whose path sorts before the library's), which requires the library
// through a replace of this checkout. tags are its build tags. It returns
// the program and the host-only file its mustconfig package needs.
func buildHostProgram(t testing.TB, tags string) (exe, hostFile string) {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		hostcap.Missing(t, hostcap.GoCommand, "to build a program outside the repository: ", err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "hostprogram"))); err != nil {
		t.Fatal(err)
	}
	gomod := "module aaa.example/startprobe\n\ngo 1.26.8\n\nrequire github.com/adk-codemode/codemode v0.0.0\n\nreplace github.com/adk-codemode/codemode => " + root + "\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
	hostFile = filepath.Join(dir, "host-only.conf")
	if err := os.WriteFile(hostFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	exe = filepath.Join(dir, "hostprogram")
	cmd := exec.Command(goCmd, "build", "-tags", tags, "-ldflags", "-X aaa.example/startprobe/mustconfig.HostFile="+hostFile, "-o", exe, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off", "GOTOOLCHAIN=local", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags %s: %v\n%s", tags, err, out)
	}
	return exe, hostFile
}

// runHostProgram runs the program built by buildHostProgram with args and
// decodes its report.
func runHostProgram(t testing.TB, exe string, args ...string) hostReport {
	t.Helper()
	cmd := exec.Command(exe, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", testMark}
	out, err := cmd.Output()
	if err != nil {
		if strings.Contains(stderr.String(), ErrUnsupported.Error()) {
			hostcap.Missing(t, hostcap.UserNS, stderr.String())
		}
		t.Fatalf("%s %s: %v\n%s", filepath.Base(exe), strings.Join(args, " "), err, stderr.String())
	}
	var rep hostReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("the program's report %q: %v", out, err)
	}
	return rep
}

// TestHostProgramNeverRunsInTheSandbox starts sessions on both paths from
// a program whose packages' initializers must never run in a sandbox: one
// exits unless a host-only file is there, one spends 40 ms. Every session
// starts, runs code and has every protection read back, and the
// initializers ran in the host program only, once per run: no code of the
// host program runs in a sandbox.
func TestHostProgramNeverRunsInTheSandbox(t *testing.T) {
	exe, hostFile := buildHostProgram(t, "hostile")
	for _, start := range []string{"forked", "cold"} {
		t.Run(start, func(t *testing.T) {
			rep := runHostProgram(t, exe, "-start", start, "-n", "3")
			if rep.Output != "42\n" {
				t.Errorf("the block printed %q; want 42", rep.Output)
			}
			if len(rep.StartsMS) != 3 {
				t.Errorf("%d sessions started; want 3", len(rep.StartsMS))
			}
			e := rep.Enforced
			if e.Forked != (start == "forked") {
				t.Errorf("Forked = %v on the %s path", e.Forked, start)
			}
			for name, ok := range map[string]bool{
				"user ns": e.UserNS, "mount ns": e.MountNS, "pid ns": e.PIDNS, "net ns": e.NetNS, "ipc ns": e.IPCNS,
				"uts ns": e.UTSNS, "cgroup ns": e.CgroupNS, "seccomp": e.Seccomp, "no_new_privs": e.NoNewPrivs,
				"caps dropped": e.CapsDropped, "securebits": e.Securebits, "read-only root": e.ReadOnlyRoot, "loopback": e.Loopback,
			} {
				if !ok {
					t.Errorf("%s not enforced: %+v", name, e)
				}
			}
			for _, r := range []string{"AS", "CPU", "FSIZE", "NOFILE", "NPROC", "CORE"} {
				if _, ok := e.Rlimits[r]; !ok {
					t.Errorf("RLIMIT_%s not read back: %v", r, e.Rlimits)
				}
			}
			if os.Geteuid() == 0 && (!e.CgroupMemory || !e.CgroupPids) {
				t.Errorf("cgroup limits not read back as root: memory %v, pids %v", e.CgroupMemory, e.CgroupPids)
			}
		})
	}
	runs, err := os.ReadFile(hostFile)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(runs), "init in pid"); n != 2 {
		t.Errorf("the host-only initializer ran %d times; want 2, once per run of the program:\n%s", n, runs)
	}
}

// BenchmarkStartFromAProgram times session starts from testdata/hostprogram
// built as an agent is (the plugin, ADK and OpenTelemetry's SDK linked),
// with and without the packages whose initializers exit in a sandbox or
// spend 40 ms, on both paths, each start beside a bare python3 -c pass
// timed in the same loop. It reports the medians and their ratio; the
// start must not depend on the host program (docs/benchmarks.md).
func BenchmarkStartFromAProgram(b *testing.B) {
	py, err := Config{}.Interpreter()
	if err != nil {
		b.Skip(err)
	}
	for _, tags := range []string{"plugin", "plugin hostile"} {
		exe, _ := buildHostProgram(b, tags)
		name := "agent"
		if strings.Contains(tags, "hostile") {
			name = "agent-with-slow-inits"
		}
		for _, start := range []string{"forked", "cold"} {
			b.Run(name+"/"+start, func(b *testing.B) {
				var starts, bare []float64
				for b.Loop() {
					rep := runHostProgram(b, exe, "-start", start, "-n", "10", "-bare", py)
					starts = append(starts, rep.StartsMS...)
					bare = append(bare, rep.BareMS...)
				}
				ms, mb := medianF(starts), medianF(bare)
				b.ReportMetric(ms, "session-ms")
				b.ReportMetric(mb, "bare-ms")
				b.ReportMetric(ms/mb, "ratio")
			})
		}
	}
}

func medianF(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	slices.Sort(s)
	return s[len(s)/2]
}
