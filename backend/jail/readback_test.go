//go:build linux && amd64

package jail

import (
	"errors"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/adk-codemode/codemode/internal/protocol/jailplan"
	"github.com/adk-codemode/codemode/transport"
)

// TestReadBackOfAProcessOutsideAnyJail reads back a plain child of the
// host: everything a jail enforces must read as not enforced.
func TestReadBackOfAProcessOutsideAnyJail(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	e := readBack(cmd.Process.Pid, []int{os.Getpid()}, map[string]int64{jailplan.ReportSecurebits: 0}, jailplan.Securebits(false, jailplan.DropAll))
	if e.UserNS || e.MountNS || e.PIDNS || e.NetNS || e.IPCNS || e.UTSNS || e.CgroupNS {
		t.Errorf("a child of the host reads as having namespaces of its own:\n%s", e)
	}
	if e.CapsDropped || e.Seccomp || e.Securebits {
		t.Errorf("a child of the host reads as locked down:\n%s", e)
	}
	// A host under no_new_privs (as in some containers) hands it on.
	if procStatus("/proc/self/status")["NoNewPrivs"] != "1" && e.NoNewPrivs {
		t.Errorf("a child of a host without no_new_privs reads as having it")
	}
	var st unix.Statfs_t
	if unix.Statfs("/", &st) == nil && st.Flags&unix.ST_RDONLY == 0 && e.ReadOnlyRoot {
		t.Errorf("a child of the host reads as having a read-only root")
	}
	if ifs, err := os.ReadDir("/sys/class/net"); err == nil && len(ifs) > 1 && e.Loopback {
		t.Errorf("a child of the host, with %d interfaces, reads as having loopback alone", len(ifs))
	}
	// A process that has gone reads as nothing.
	gone := readBack(1<<22+1, nil, nil, 0)
	if gone.UserNS || gone.CapsDropped || gone.ReadOnlyRoot || gone.Loopback || gone.Rlimits != nil {
		t.Errorf("a missing process reads as %s", gone)
	}
}

func TestReadOnlyMounts(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) string {
		p := filepath.Join(dir, "mountinfo")
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const base = "76 45 0:41 / / ro,nosuid - tmpfs tmpfs rw\n" +
		"67 76 254:0 /usr /usr ro,nosuid,nodev - ext4 /dev/vda rw\n" +
		"80 76 0:45 / /workspace rw,nosuid - tmpfs tmpfs rw\n" +
		"81 76 0:46 / /my\\040dir ro - tmpfs tmpfs rw\n"
	for _, tc := range []struct {
		name, info string
		paths      []string
		want       bool
	}{
		{"root and usr", base, []string{"/", "/usr", "/etc"}, true},
		{"a file under usr", base, []string{"/usr/lib/x"}, true},
		{"workspace", base, []string{"/", "/workspace/a"}, false},
		{"a prefix that is not a parent", base, []string{"/workspace2"}, true},
		{"escaped mount point", base, []string{"/my dir/x"}, true},
		{"usr remounted writable over", base + "90 67 254:0 /usr /usr rw - ext4 /dev/vda rw\n", []string{"/usr"}, false},
		{"writable root", "1 0 0:1 / / rw - ext4 /dev/vda rw\n", []string{"/etc"}, false},
		{"no mounts", "", []string{"/"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := readOnly(write(tc.info), tc.paths...); got != tc.want {
				t.Errorf("readOnly(%q) = %v, want %v", tc.paths, got, tc.want)
			}
		})
	}
	if readOnly(filepath.Join(dir, "missing"), "/") {
		t.Error("a missing mountinfo reads as read-only")
	}
}

func TestProcLimits(t *testing.T) {
	p := filepath.Join(t.TempDir(), "limits")
	const limits = `Limit                     Soft Limit           Hard Limit           Units     
Max cpu time              3600                 3600                 seconds   
Max file size             1073741824           1073741824           bytes     
Max data size             unlimited            unlimited            bytes     
Max core file size        0                    0                    bytes     
Max processes             272                  300                  processes 
Max open files            unlimited            unlimited            files     
`
	if err := os.WriteFile(p, []byte(limits), 0o600); err != nil {
		t.Fatal(err)
	}
	got := procLimits(p)
	want := map[string]uint64{"CPU": 3600, "FSIZE": 1 << 30, "CORE": 0, "NPROC": 272, "NOFILE": math.MaxUint64}
	if len(got) != len(want) {
		t.Fatalf("procLimits = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d (soft limits; unlimited as the largest value)", k, got[k], v)
		}
	}
}

// TestReadBackSeesAStepLeftOut leaves a step out of forked sessions'
// plans: the read-back must show what is missing, although the session
// inherits from its template a filter and a cgroup namespace of its own.
// (A step whose effect the session's exec of its supervisor would bring
// about anyway, such as emptying the capability sets of a process that
// execs as a uid without capabilities, cannot be told missing after it.)
func TestReadBackSeesAStepLeftOut(t *testing.T) {
	be := &Backend{forked: true}
	t.Cleanup(func() {
		editForkPlan = nil
		if err := be.Close(); err != nil {
			t.Error(err)
		}
	})
	for _, tc := range []struct {
		op    string
		check func(Enforcement) bool // true while what the step does shows
	}{
		{"load seccomp filter", func(e Enforcement) bool { return e.Seccomp }},
		{"enter a cgroup namespace rooted at the session's cgroups", func(e Enforcement) bool { return e.CgroupNS }},
	} {
		t.Run(tc.op, func(t *testing.T) {
			editForkPlan = nil
			if e := sessionOf(t, be).Enforced(); !tc.check(e) {
				t.Fatalf("with every step, the read-back misses what %q does:\n%s", tc.op, e)
			}
			removed := 0
			editForkPlan = func(p *jailplan.Plan) {
				steps := p.Steps[:0]
				for _, s := range p.Steps {
					if s.Op == tc.op {
						removed++
						continue
					}
					steps = append(steps, s)
				}
				p.Steps = steps
			}
			e := sessionOf(t, be).Enforced()
			if removed != 1 || tc.check(e) {
				t.Fatalf("without %q (%d steps removed) the read-back shows it done:\n%s", tc.op, removed, e)
			}
		})
	}
}

// TestForkedSessionAboveTheTemplatesTasks asks for more processes than a
// template allows itself: the session gets the template's limit, forked.
func TestForkedSessionAboveTheTemplatesTasks(t *testing.T) {
	be := &Backend{Config: Config{Processes: zygoteTasks + 1000}, forked: true}
	t.Cleanup(func() {
		if err := be.Close(); err != nil {
			t.Error(err)
		}
	})
	if got := sessionOf(t, be).Enforced().Rlimits["NPROC"]; got != zygoteTasks {
		t.Fatalf("NPROC %d, want the template's %d", got, zygoteTasks)
	}
}

// TestForkedPlanFailureIsReported has a forked session's plan fail at a
// step: the session reports that step and its errno (the backend starts
// it cold and says so), and the template forks the next session as before.
func TestForkedPlanFailureIsReported(t *testing.T) {
	be := &Backend{forked: true}
	t.Cleanup(func() {
		editForkPlan = nil
		if err := be.Close(); err != nil {
			t.Error(err)
		}
	})
	sessionOf(t, be).Close() // the template runs
	editForkPlan = func(p *jailplan.Plan) {
		var b jailplan.Builder
		b.Call("a step that fails", unix.SYS_CLOSE, jailplan.Int(-1))
		p.Steps = append(b.Plan().Steps, p.Steps...)
		p.Bufs = append(p.Bufs, b.Plan().Bufs...)
	}
	// The backend starts such a session cold, and says why.
	s, err := be.Open(t.Context(), transport.SessionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	err = s.(*Session).Fallback()
	s.Close()
	var se *SetupError
	if !errors.As(err, &se) || se.Op != "a step that fails (forked session)" || !errors.Is(err, syscall.EBADF) {
		t.Fatalf("Fallback: %v; want the failing step as a SetupError wrapping EBADF", err)
	}
	editForkPlan = nil
	next := sessionOf(t, be)
	if r := execIn(t, next, "print('after')"); strings.TrimSpace(r.Stdout) != "after" {
		t.Fatalf("the next session printed %q", r.Stdout)
	}
}

// TestTemplateMakesNoSystemCallOfItsOwn keeps zygote.py to forking and
// passing descriptors: a session's setup is in the plans the host builds
// (internal/protocol/jailplan), which restate no kernel constant in Python. (Its
// first worker's own limits it sets with Python's resource module, as the
// supervisor sets every later worker's.)
func TestTemplateMakesNoSystemCallOfItsOwn(t *testing.T) {
	for _, word := range []string{"ctypes", "libc", "ioctl", "prctl", "syscall", "0x", "mount(", "unshare(", "sethostname("} {
		for i, line := range strings.Split(zygoteSource, "\n") {
			if code, _, _ := strings.Cut(line, "#"); strings.Contains(code, word) {
				t.Errorf("zygote.py:%d: %s", i+1, strings.TrimSpace(line))
			}
		}
	}
}

// FuzzReadStatus feeds a forked session's setup report, which comes from
// the sandbox, to the host's reader: it must return a report or an error,
// never panic, and a report's error must name a step.
func FuzzReadStatus(f *testing.F) {
	f.Add([]byte(`{"reports":{"uid":1000,"gid":1000,"securebits":239}}` + "\n"))
	f.Add([]byte(`{"op":"mount /proc","errno":1,"msg":"Operation not permitted"}` + "\n"))
	f.Add([]byte(`{"op":"x","extra":1}` + "\n"))
	f.Add([]byte(`{"reports":{"uid":1e99}}`))
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		f.Fatal(err)
	}
	unix.Close(fds[1]) // every read past the report finds EOF
	fc, err := net.FileConn(os.NewFile(uintptr(fds[0]), "status"))
	if err != nil {
		f.Fatal(err)
	}
	conn := fc.(*net.UnixConn)
	f.Cleanup(func() { conn.Close() })
	f.Fuzz(func(t *testing.T, data []byte) {
		var st forkStatus
		if err := readStatus(conn, data, &st); err != nil {
			return
		}
		if err := st.err(); err != nil {
			var se *SetupError
			if !errors.As(err, &se) || !strings.HasSuffix(se.Op, "(forked session)") {
				t.Fatalf("a report's error %v is not a SetupError naming its step", err)
			}
		}
	})
}

// TestReadBackOfAPayloadThatEndsAtOnce starts jails whose payload exits at
// once: the host's read-back must still find the jail (its init waits for
// it), and see all of it.
func TestReadBackOfAPayloadThatEndsAtOnce(t *testing.T) {
	for i := range 20 {
		c, err := Start(t.Context(), Config{}, Spec{Args: []string{"/bin/true"}, Env: baseEnv()})
		skipIfUnsupported(t, err)
		if err != nil {
			t.Fatal(err)
		}
		e := c.Enforced()
		if err := c.Wait(); err != nil {
			t.Fatal(err)
		}
		if !(e.ReadOnlyRoot && e.Loopback && e.MountNS && e.NetNS && e.Seccomp && e.CapsDropped) {
			t.Fatalf("run %d: the read-back missed a jail whose payload ended at once:\n%s", i, e)
		}
	}
}
