package remote_test

import (
	"strings"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/backend/remote"
	"github.com/adk-codemode/codemode/internal/testsupport/escapeprobe"
	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
	"github.com/adk-codemode/codemode/transport"
	"github.com/adk-codemode/codemode/transport/transporttest"
)

// needJail ends the test where this host cannot build the namespace jail
// (see hostcap.Missing), which a server started with --jail checks and
// says before it listens.
func needJail(t *testing.T) {
	t.Helper()
	s, err := launch(tempDir(t), nil, "--jail")
	if err != nil {
		if strings.Contains(err.Error(), "cannot run here") {
			hostcap.Missing(t, hostcap.UserNS, err)
		}
		t.Fatal(err)
	}
	s.stop()
}

// TestSharedSuiteJailed: with --jail the server runs each session's worker
// in the namespace jail, and the remote backend keeps the contract of an
// isolated backend.
func TestSharedSuiteJailed(t *testing.T) {
	needJail(t)
	transporttest.Run(t, func(t *testing.T) transport.Backend {
		return newBackend(t, remote.Config{Provision: provisioner(t, "--jail"), Secret: testSecret})
	}, transporttest.Options{Isolated: true})
}

// jailedSession starts a server with --jail and opens a session of it,
// closed with the test.
func jailedSession(t *testing.T) (*server, transport.Session) {
	t.Helper()
	needJail(t)
	s := startServer(t, nil, "--jail")
	b := newBackend(t, remote.Config{URL: s.URL(), Secret: testSecret})
	sess, err := b.Open(t.Context(), transport.SessionConfig{})
	if err != nil {
		t.Fatalf("Open: %v\n%s", err, s.stderr())
	}
	t.Cleanup(func() { sess.Close() })
	return s, sess
}

// TestJailedServerReports: a jailed session's worker runs in a pid
// namespace of its own, whose pid 1 is the jail's init (the supervisor),
// and the server logs what the jail enforces.
func TestJailedServerReports(t *testing.T) {
	s, sess := jailedSession(t)
	r, err := sess.Exec(t.Context(), transport.Block{Code: "print(open('/proc/1/cmdline', 'rb').read().split(b'\\0')[0].decode())", Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if r.Stdout != "codemode-jail-init\n" {
		t.Errorf("pid 1 of the worker's pid namespace is %q: want the jail's init", r.Stdout)
	}
	if log := s.stderr(); !strings.Contains(log, "runs in a namespace jail") || !strings.Contains(log, `pid ns:        yes`) {
		t.Errorf("the server's log does not say what the jail enforces:\n%s", log)
	}
}

// TestEscapeProbesJailed runs the escape-probe suite in a session of a
// server that jails its sessions.
func TestEscapeProbesJailed(t *testing.T) {
	needJail(t)
	b := newBackend(t, remote.Config{Provision: provisioner(t, "--jail"), Secret: testSecret})
	escapeprobe.Run(t, func(t *testing.T) transport.Session {
		s, err := b.Open(t.Context(), transport.SessionConfig{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// TestSyscallPolicyWithoutJail: a server that runs its sessions without a
// jail (in a container or pod of its own) still holds the code to the
// jail's system-call policy, which it loads on itself before any worker
// starts, whatever seccomp profile it was given.
func TestSyscallPolicyWithoutJail(t *testing.T) {
	b := newBackend(t, remote.Config{Provision: provisioner(t), Secret: testSecret})
	s, err := b.Open(t.Context(), transport.SessionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := s.Exec(t.Context(), transport.Block{Code: `
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(fn, *args):
    return "ok" if fn(*args) != -1 else errno.errorcode[ctypes.get_errno()]
print(call(libc.unshare, 0x10000000), call(libc.mount, b"none", b"/tmp", b"tmpfs", 0, None),
      call(libc.ptrace, 0, 0, None, None), call(libc.syscall, 250, 1, None), call(libc.syscall, 435, None, 0))
status = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines() if ":" in l)
print(status["NoNewPrivs"].strip(), status["Seccomp"].strip())
`, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if r.Stdout != "EPERM EPERM EPERM EPERM ENOSYS\n1 2\n" {
		t.Errorf("unshare, mount, ptrace, keyctl, clone3; no_new_privs, seccomp mode: %q (stderr %q), want them refused as in the jail", r.Stdout, r.Stderr)
	}
}

// TestMemoryKillNamedJailed: a worker that the jail's memory limit kills on
// a server with --jail is reported as such through the protocol: the
// result's OutOfMemory and the note, with the limit.
func TestMemoryKillNamedJailed(t *testing.T) {
	_, sess := jailedSession(t)
	// 1.5 GiB touched, under the default 1 GiB memory limit and 2 GiB
	// address-space limit: the memory cgroup kills the worker.
	r, err := sess.Exec(t.Context(), transport.Block{Code: "x = b'x' * (1536 << 20)\nprint(len(x))", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Reset && strings.Contains(r.Stdout, "1610612736") {
		hostcap.Missing(t, hostcap.Cgroup, "the server's jail has no memory cgroup here, so nothing bounds the worker's memory but RLIMIT_AS")
	}
	if !r.Reset || !r.OutOfMemory || !strings.Contains(r.Stderr, "the sandbox ran out of memory (its limit is 1024 MiB)") {
		t.Fatalf("reset %v, out of memory %v, stderr %q", r.Reset, r.OutOfMemory, r.Stderr)
	}
}
