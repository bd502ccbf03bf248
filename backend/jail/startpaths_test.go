//go:build linux && amd64

package jail

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/internal/host/sandboxbin"
	"github.com/adk-codemode/codemode/internal/protocol/jailplan"
	"github.com/adk-codemode/codemode/internal/sandbox/supervisor"
	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
	"github.com/adk-codemode/codemode/transport"
)

// startPaths runs f once with cold sessions and once with sessions forked
// from a template, so that every hostile case holds on both.
func startPaths(t *testing.T, cfg Config, f func(t *testing.T, be *Backend)) {
	for _, forked := range []bool{false, true} {
		name := "cold"
		if forked {
			name = "forked"
		}
		t.Run(name, func(t *testing.T) {
			be := &Backend{Config: cfg, Cold: !forked, forked: forked}
			t.Cleanup(func() {
				if err := be.Close(); err != nil {
					t.Error(err)
				}
			})
			f(t, be)
		})
	}
}

// sessionOf opens a session of be and checks that it started the way be
// asks (forked or cold).
func sessionOf(t *testing.T, be *Backend) *Session {
	t.Helper()
	s, err := be.Open(t.Context(), transport.SessionConfig{})
	skipIfUnsupported(t, err)
	if err != nil {
		t.Fatal(err)
	}
	js := s.(*Session)
	t.Cleanup(func() { js.Close() })
	if !be.Cold {
		if err := js.Fallback(); err != nil {
			t.Fatalf("the session started cold: %v", err)
		}
		if !js.Enforced().Forked {
			t.Fatal("the session does not report that it was forked")
		}
	} else if js.Enforced().Forked {
		t.Fatal("a cold session reports that it was forked")
	}
	return js
}

func execIn(t *testing.T, s *Session, code string) *transport.Result {
	t.Helper()
	r, err := s.Exec(t.Context(), transport.Block{Code: code, Timeout: 60 * time.Second})
	if err != nil {
		t.Fatalf("Exec: %v", err)
	}
	return r
}

func TestSessionHostileCasesOnBothStartPaths(t *testing.T) {
	home, _ := os.UserHomeDir()
	secret, err := os.CreateTemp(home, "codemode-jail-secret-*")
	if err != nil {
		hostcap.Missing(t, hostcap.Home, err)
	}
	secret.WriteString("secret")
	secret.Close()
	t.Cleanup(func() { os.Remove(secret.Name()) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	hostPort := ln.Addr().(*net.TCPAddr).Port

	startPaths(t, Config{MemoryBytes: 256 << 20, Processes: 64}, func(t *testing.T, be *Backend) {
		s := sessionOf(t, be)
		t.Run("secrets", func(t *testing.T) {
			r := execIn(t, s, `
import os
for p in [`+pyStr(secret.Name())+`, "/etc/shadow", "/proc/1/root/etc/shadow", "/sys/kernel/notes"]:
    try:
        open(p).read(); print(p, "READABLE")
    except OSError as e:
        print(p, type(e).__name__)
print("dirs", [d for d in ("/home", "/root", "/run", "/sys") if os.path.exists(d)])
`)
			if strings.Contains(r.Stdout, "READABLE") || !strings.Contains(r.Stdout, "dirs []") {
				t.Fatalf("host files visible:\n%s%s", r.Stdout, r.Stderr)
			}
		})
		t.Run("processes", func(t *testing.T) {
			r := execIn(t, s, `
import os
print(sorted(int(p) for p in os.listdir("/proc") if p.isdigit()), os.getppid())`)
			// pid 1 (the supervisor) and the worker; never the template.
			if f := strings.Fields(strings.Trim(r.Stdout, "\n")); len(f) != 3 || f[0] != "[1," || f[2] != "1" {
				t.Fatalf("visible processes %q", r.Stdout)
			}
		})
		t.Run("descriptors", func(t *testing.T) {
			// The worker has its stdio, its two protocol pipes and what
			// the runner opens, and nothing of its supervisor (in a
			// forked session, the descriptor of the host program that
			// the template holds).
			if r := execIn(t, s, fdProbe); r.Stdout != workerFDs {
				t.Fatalf("the worker's descriptors: %q %s", r.Stdout, r.Stderr)
			}
		})
		t.Run("network", func(t *testing.T) {
			r := execIn(t, s, `
import socket, errno
print([n for _, n in socket.if_nameindex()])
for addr in [("127.0.0.1", `+strconv.Itoa(hostPort)+`), ("10.0.0.1", 80)]:
    s = socket.socket(); s.settimeout(5)
    try:
        s.connect(addr); print("CONNECTED", addr)
    except OSError as e:
        print(errno.errorcode.get(e.errno, e))
    s.close()
`)
			if r.Stdout != "['lo']\nECONNREFUSED\nENETUNREACH\n" {
				t.Fatalf("network probe: %q %s", r.Stdout, r.Stderr)
			}
		})
		t.Run("writes", func(t *testing.T) {
			r := execIn(t, s, `
import errno
for p in ["/x", "/usr/x", "/etc/x", "/codemode/x", "/workspace/x", "/tmp/x", "/dev/shm/x"]:
    try:
        open(p, "w").close(); print(p, "ok")
    except OSError as e:
        print(p, errno.errorcode[e.errno])
`)
			want := "/x EROFS\n/usr/x EROFS\n/etc/x EROFS\n/codemode/x EROFS\n/workspace/x ok\n/tmp/x ok\n/dev/shm/x ok\n"
			if r.Stdout != want {
				t.Fatalf("writes:\n%s%s\nwant:\n%s", r.Stdout, r.Stderr, want)
			}
		})
		t.Run("seccomp", func(t *testing.T) {
			// A forked session's template may unshare and mount; the
			// session and its code must not.
			r := execIn(t, s, `
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
def call(name, *args):
    r = getattr(libc, name)(*args)
    return "ok" if r != -1 else errno.errorcode[ctypes.get_errno()]
print(call("unshare", 0x10000000), call("unshare", 0x00020000), call("mount", b"none", b"/tmp", b"tmpfs", 0, None),
      call("syscall", 56, 0x10000000 | 17, None, None, None, None), call("ptrace", 0, 0, None, None))
`)
			if r.Stdout != "EPERM EPERM EPERM EPERM EPERM\n" {
				t.Fatalf("denied calls: %q %s", r.Stdout, r.Stderr)
			}
		})
		t.Run("x32", func(t *testing.T) {
			r := execIn(t, s, x32Probe)
			if strings.Contains(r.Stdout, "returned") || r.ExitCode != 128+int(syscall.SIGSYS) && !r.Reset {
				t.Fatalf("x32 syscall: exit %d, reset %v, stdout %q", r.ExitCode, r.Reset, r.Stdout)
			}
		})
		t.Run("memory bomb", func(t *testing.T) {
			r := execIn(t, s, `
b = []
for _ in range(64):
    b.append(bytearray(16 << 20))
print("survived")`)
			if strings.Contains(r.Stdout, "survived") {
				t.Fatalf("1 GiB allocated under a 256 MiB limit: %+v", r)
			}
			if r2 := execIn(t, s, "print(2)"); r2.Stdout != "2\n" {
				t.Fatalf("the session did not recover: %+v", r2)
			}
			// A worker started after the first (in a forked session, by
			// the supervisor, as a cold session's) has the same.
			if r := execIn(t, s, fdProbe); r.Stdout != workerFDs {
				t.Fatalf("the next worker's descriptors: %q %s", r.Stdout, r.Stderr)
			}
		})
		t.Run("fork bomb", func(t *testing.T) {
			r := execIn(t, s, `
import os, time
n = 0
try:
    for _ in range(1000):
        if os.fork() == 0:
            time.sleep(30); os._exit(0)
        n += 1
except OSError as e:
    print("stopped", n, e.errno)
`)
			if !strings.HasPrefix(r.Stdout, "stopped ") {
				t.Fatalf("fork bomb not stopped: %+v", r)
			}
		})
	})
}

// fdProbe prints the open descriptors of the worker below 4096 by kind:
// its stdio and protocol pipes and the runner's own (copies of stdout and
// stderr, its /proc children file); anything else by its link.
const fdProbe = `
import os
def kind(fd):
    try:
        link = os.readlink("/proc/self/fd/%d" % fd)
    except OSError:
        return None
    if link == "/dev/null" or link.startswith("pipe:"):
        return link.split(":")[0]
    if link == "/proc/%d/task/%d/children" % (os.getpid(), os.getpid()):
        return "children"
    return link
print(" ".join("%d:%s" % (fd, kind(fd)) for fd in range(4096) if kind(fd)))
`

// workerFDs is what fdProbe prints in every worker.
const workerFDs = "0:/dev/null 1:pipe 2:pipe 3:pipe 4:pipe 5:pipe 6:pipe 7:children\n"

func pyStr(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }

// templatePython is the host pid of the template's Python process, the
// payload of the template's jail.
func templatePython(t *testing.T, cfg Config) (*zygote, int) {
	t.Helper()
	c := cfg
	python, err := c.Interpreter()
	if err != nil {
		hostcap.Missing(t, hostcap.Python, err)
	}
	c.Python = python
	zygotes.Lock()
	z := zygotes.live[zygoteKey(c.withDefaults())]
	zygotes.Unlock()
	if z == nil {
		t.Fatal("no live template")
	}
	data, _ := os.ReadFile("/proc/" + strconv.Itoa(z.cmd.Pid()) + "/task/" + strconv.Itoa(z.cmd.Pid()) + "/children")
	kids := strings.Fields(string(data))
	if len(kids) == 0 {
		t.Fatal("the template's jail has no payload")
	}
	pid, _ := strconv.Atoi(kids[0])
	return z, pid
}

func TestDeadTemplateFallsBackAndIsReplaced(t *testing.T) {
	be := &Backend{forked: true}
	t.Cleanup(func() { _ = be.Close() })
	before := sessionOf(t, be)
	z, pid := templatePython(t, Config{})
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The template's death ends no session forked from it.
	if r := execIn(t, before, "print(1)"); r.Stdout != "1\n" {
		t.Fatalf("a session of the dead template: %+v", r)
	}
	// The spare forked ahead may still serve one session; the dead
	// template is found out when it is next asked to fork (a session that
	// needed it would start cold and say why), and then replaced. Every
	// session runs.
	for i := 0; i < 3; i++ {
		s, err := be.Open(t.Context(), transport.SessionConfig{})
		if err != nil {
			t.Fatalf("a session after the template died: %v", err)
		}
		if fb := s.(*Session).Fallback(); fb != nil {
			t.Logf("session %d started cold: %v", i, fb)
		}
		if r := execIn(t, s.(*Session), "print(2)"); r.Stdout != "2\n" {
			t.Fatalf("%+v", r)
		}
		s.Close()
	}
	if !z.isRetired() {
		t.Fatal("the dead template was not retired")
	}
	s := sessionOf(t, be) // forked from a new template
	if z2, _ := templatePython(t, Config{}); z2 == z {
		t.Fatal("the dead template is still in use")
	}
	if r := execIn(t, s, "print(3)"); r.Stdout != "3\n" {
		t.Fatalf("%+v", r)
	}
}

func TestStuckTemplateFallsBack(t *testing.T) {
	cfg := Config{Processes: 100} // a template of its own
	be := &Backend{Config: cfg, forked: true}
	t.Cleanup(func() { _ = be.Close() })
	sessionOf(t, be).Close()
	z, pid := templatePython(t, cfg)
	z.hello.Store(int64(time.Second))
	// Let the spare be taken, so that the next session needs a fork.
	sessionOf(t, be).Close()
	for z.refilling.Load() || len(z.spare) > 0 {
		if len(z.spare) > 0 {
			f := <-z.spare
			f.discard()
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	s, err := be.Open(t.Context(), transport.SessionConfig{})
	if err != nil {
		t.Fatalf("a session with a stuck template: %v", err)
	}
	defer s.Close()
	if fb := s.(*Session).Fallback(); fb == nil || !strings.Contains(fb.Error(), "did not fork") {
		t.Fatalf("Fallback() = %v; want the stuck template reported", fb)
	}
	if s.(*Session).Enforced().Forked {
		t.Fatal("a cold session reports that it was forked")
	}
	if !z.isRetired() {
		t.Fatal("the stuck template was not retired")
	}
}

// TestDefaultStart checks what a Backend's zero value does: it forks its
// sessions from a template, and Cold starts them in a fresh jail.
func TestDefaultStart(t *testing.T) {
	if coldByDefault {
		t.Skip("CODEMODE_JAIL_START=cold makes every Backend start cold")
	}
	cfg := Config{Processes: 102} // a template of its own
	be := &Backend{Config: cfg}
	t.Cleanup(func() { _ = be.Close() })
	s := sessionOf(t, be) // checks that it was forked
	// The session's pid 1 is the supervisor of every session: the
	// sandbox program under the supervisor's argv[0], not the template's
	// Python, and not the host program.
	if got, want := exeID(t, s.Pid()), stageID(t); got != want {
		t.Errorf("a forked session's pid 1 runs %s; want the sandbox program, %s", got, want)
	}
	if got := argv0(t, s.Pid()); got != supervisor.Stage {
		t.Errorf("a forked session's pid 1 has argv[0] %q; want %q", got, supervisor.Stage)
	}
	// The descriptor of the host program it was executed through is gone.
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	fdDir := "/proc/" + strconv.Itoa(s.Pid()) + "/fd"
	fds, err := os.ReadDir(fdDir)
	if err != nil || len(fds) == 0 {
		t.Fatalf("the supervisor's descriptors: %v", err)
	}
	for _, fd := range fds {
		if l, _ := os.Readlink(fdDir + "/" + fd.Name()); l == exe || strings.Contains(l, "memfd:codemode-stage") {
			t.Errorf("the supervisor holds %s at fd %s", l, fd.Name())
		}
	}
	// The processes are named for what they are (the plugin's tests and
	// ps tell them apart by it).
	_, tpl := templatePython(t, cfg)
	if got := comm(t, tpl); got != "codemode-zygote" {
		t.Errorf("the template is named %q", got)
	}
	s.Close()
	if !templateLive(cfg) {
		t.Fatal("no template is running after a forked session")
	}
	if err := be.Close(); err != nil {
		t.Fatal(err)
	}
	if templateLive(cfg) {
		t.Error("the template is still live after Close")
	}
	cold := &Backend{Config: cfg, Cold: true}
	cs := sessionOf(t, cold) // checks that it was not forked
	if got, want := exeID(t, cs.Pid()), stageID(t); got != want {
		t.Errorf("a cold session's pid 1 runs %s; want the sandbox program, %s", got, want)
	}
	cs.Close()
	if templateLive(cfg) {
		t.Error("a Cold backend started a template")
	}
}

func comm(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// exeID identifies the executable pid runs: its device and inode.
func exeID(t *testing.T, pid int) string {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/"+strconv.Itoa(pid)+"/exe", &st); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("dev %d inode %d", st.Dev, st.Ino)
}

// stageID is exeID of the sandbox program (internal/host/sandboxbin).
func stageID(t *testing.T) string {
	t.Helper()
	f, err := sandboxbin.Open()
	if err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("dev %d inode %d", st.Dev, st.Ino)
}

func argv0(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	a, _, _ := strings.Cut(string(b), "\x00")
	return a
}

func templateLive(cfg Config) bool {
	if python, err := cfg.Interpreter(); err == nil {
		cfg.Python = python
	}
	zygotes.Lock()
	defer zygotes.Unlock()
	return zygotes.live[zygoteKey(cfg.withDefaults())] != nil
}

// TestSpareForkedAfterTheStart: a session that takes the template's spare
// starts with no other spare being forked beside it (which would take CPU
// time from its start), and leaves the next spare being forked once its
// start is over.
func TestSpareForkedAfterTheStart(t *testing.T) {
	cfg := Config{Processes: 101} // a template of its own
	be := &Backend{Config: cfg, forked: true}
	t.Cleanup(func() {
		editForkPlan = nil
		_ = be.Close()
	})
	sessionOf(t, be).Close()
	z, _ := templatePython(t, cfg)
	// The spare is there and its refill has finished, flag and all.
	for deadline := time.Now().Add(30 * time.Second); len(z.spare) == 0 || z.refilling.Load(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the template forked no spare after a session's start")
		}
	}
	var duringStart []bool
	editForkPlan = func(*jailplan.Plan) {
		duringStart = append(duringStart, z.refilling.Load() || len(z.spare) > 0)
	}
	sessionOf(t, be).Close()
	editForkPlan = nil
	if len(duringStart) != 1 || duringStart[0] {
		t.Errorf("while a session took the spare and started, another was being forked or ready: %v", duringStart)
	}
	if !z.refilling.Load() && len(z.spare) == 0 {
		t.Error("once the session had started, no spare was being forked")
	}
}
