package docker_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/backend/docker"
	"github.com/adk-codemode/codemode/transport"
)

// open starts a session on b that closes when the test ends.
func open(t *testing.T, b *docker.Backend) transport.Session {
	t.Helper()
	s, err := b.Open(t.Context(), transport.SessionConfig{Files: map[string][]byte{"tools/__init__.py": []byte("VALUE = 7\n")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// run runs code in s and fails the test if it did not complete.
func run(t *testing.T, s transport.Session, code string) *transport.Result {
	t.Helper()
	r, err := s.Exec(t.Context(), transport.Block{Code: code, Timeout: 60 * time.Second})
	if err != nil {
		t.Fatalf("Exec: %v", err)
	}
	return r
}

// ok runs code and fails the test unless it exited 0.
func ok(t *testing.T, s transport.Session, code string) string {
	t.Helper()
	r := run(t, s, code)
	if r.ExitCode != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.ExitCode, r.Stdout, r.Stderr)
	}
	return r.Stdout
}

func TestHostEnvironmentDoesNotEnter(t *testing.T) {
	const secret = "host-secret-3b9f1c"
	t.Setenv("CODEMODE_TEST_SECRET", secret)
	s := open(t, engine(t, docker.Config{}))
	out := ok(t, s, `
import os
print(sorted(os.environ))
for p in ("/proc/1/environ", "/proc/self/environ"):
    try:
        print(open(p, "rb").read())
    except OSError as e:
        print(p, e.errno)
`)
	if strings.Contains(out, secret) || strings.Contains(out, "CODEMODE_TEST_SECRET") {
		t.Fatalf("the host's environment reached the sandbox:\n%s", out)
	}
}

func TestHostFilesAreInvisible(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret.txt")
	if err := os.WriteFile(secret, []byte("host secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	s := open(t, engine(t, docker.Config{}))
	out := ok(t, s, fmt.Sprintf(`
import os
for p in (%q, %q, %q):
    print(p, os.path.exists(p))
`, secret, wd, "/var/run/docker.sock"))
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasSuffix(line, " False") {
			t.Errorf("visible in the sandbox: %s", line)
		}
	}
}

// TestNoNetwork: a listener on the host's 127.0.0.1 is unreachable, the
// sandbox has no interface but loopback, and no name resolves.
func TestNoNetwork(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	s := open(t, engine(t, docker.Config{}))
	out := ok(t, s, fmt.Sprintf(`
import socket
print(sorted(n for _, n in socket.if_nameindex()))
try:
    socket.create_connection(("127.0.0.1", %d), timeout=3)
    print("connected")
except OSError as e:
    print("refused", e.errno)
try:
    socket.getaddrinfo("deb.debian.org", 80)
    print("resolved")
except OSError:
    print("no resolution")
`, port))
	if !strings.HasPrefix(out, "['lo']\n") || !strings.Contains(out, "refused") || !strings.Contains(out, "no resolution") {
		t.Fatalf("the sandbox has a network:\n%s", out)
	}
	if accepted.Load() != 0 {
		t.Fatal("the host's listener accepted a connection from the sandbox")
	}
}

func TestWritesOutsideWorkspaceAndTmpFail(t *testing.T) {
	s := open(t, engine(t, docker.Config{}))
	out := ok(t, s, `
import os
for p in ("/etc/x", "/usr/x", "/x", "/tools/x", "/tools/tools/__init__.py", "/var/tmp/../x", "/workspace/ok", "/tmp/ok"):
    try:
        with open(p, "w") as f:
            f.write("1")
        print(p, "written")
    except OSError as e:
        print(p, "refused")
`)
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		p, verdict, _ := strings.Cut(line, " ")
		want := "refused"
		if p == "/workspace/ok" || p == "/tmp/ok" {
			want = "written"
		}
		if verdict != want {
			t.Errorf("%s: %s, want %s", p, verdict, want)
		}
	}
}

func TestIdentityAndPrivileges(t *testing.T) {
	s := open(t, engine(t, docker.Config{}))
	out := ok(t, s, `
import os
status = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines() if ":" in l)
print(os.getuid(), os.getgid(), status["CapEff"].strip(), status["CapBnd"].strip(), status["NoNewPrivs"].strip(), status["Seccomp"].strip())
`)
	if got, want := strings.TrimSpace(out), "1000 1000 0000000000000000 0000000000000000 1 2"; got != want {
		t.Fatalf("uid gid CapEff CapBnd NoNewPrivs Seccomp = %q, want %q", got, want)
	}
}

func TestForkBombIsContained(t *testing.T) {
	b := engine(t, docker.Config{PidsLimit: 64})
	s := open(t, b)
	out := ok(t, s, `
import os, signal
pids, err = [], None
while len(pids) < 1000:
    try:
        pid = os.fork()
    except OSError as e:
        err = e.errno
        break
    if pid == 0:
        signal.pause()
        os._exit(0)
    pids.append(pid)
for p in pids:
    os.kill(p, signal.SIGKILL)
    os.waitpid(p, 0)
print(len(pids), err)
`)
	var n, errno int
	if _, err := fmt.Sscan(out, &n, &errno); err != nil {
		t.Fatalf("output %q: %v", out, err)
	}
	if errno != int(syscall.EAGAIN) || n >= 64 {
		t.Fatalf("forked %d processes, stopped by errno %d; want fewer than 64 and EAGAIN", n, errno)
	}
	if got := ok(t, s, "print(VALUE_AFTER := 1)"); got != "1\n" {
		t.Fatalf("the session after the fork bomb: %q", got)
	}
}

func TestMemoryBombIsContained(t *testing.T) {
	s := open(t, engine(t, docker.Config{MemoryBytes: 192 << 20}))
	r := run(t, s, `
a = []
while True:
    a.append(bytearray(16 << 20))
`)
	if r.ExitCode == 0 {
		t.Fatalf("the memory bomb completed: %+v", r)
	}
	t.Logf("memory bomb: exit %d, reset %v, stderr %q", r.ExitCode, r.Reset, r.Stderr)
	// The sandbox server reads its container's memory cgroup: the kill is
	// named, with the limit.
	if !r.Reset || !r.OutOfMemory || !strings.Contains(r.Stderr, "the sandbox ran out of memory (its limit is 192 MiB)") {
		t.Errorf("the memory kill was not named: reset %v, out of memory %v, stderr %q", r.Reset, r.OutOfMemory, r.Stderr)
	}
	if got := ok(t, s, "print(2 + 2)"); got != "4\n" {
		t.Fatalf("the session after the memory bomb: %q", got)
	}
}

func TestRunawayLoopStopsWithStateKept(t *testing.T) {
	s := open(t, engine(t, docker.Config{}))
	ok(t, s, "kept = 41")
	r, err := s.Exec(t.Context(), transport.Block{Code: "while True:\n    kept += 0", Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Stopped || r.Reset {
		t.Fatalf("the runaway loop: %+v; want it stopped in place", r)
	}
	if got := ok(t, s, "print(kept + 1)"); got != "42\n" {
		t.Fatalf("state after the stop: %q, want 42", got)
	}
}

func TestContainerGoneAfterClose(t *testing.T) {
	b := engine(t, docker.Config{})
	eng := engineClient(t, b)
	s, err := b.Open(t.Context(), transport.SessionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if n := eng.mine(t, os.Getpid()); len(n) != 1 {
		t.Fatalf("containers of this process while the session is open: %v, want 1", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if left := eng.mine(t, os.Getpid()); len(left) != 0 {
		t.Fatalf("containers left after Close: %v", left)
	}
}

func TestConfigChecks(t *testing.T) {
	for _, c := range []struct {
		cfg  docker.Config
		want string
	}{
		{docker.Config{User: "0:0"}, "is root"},
		{docker.Config{User: "root"}, "is root"},
		{docker.Config{MemoryBytes: 1 << 20}, "under 32 MiB"},
		{docker.Config{PidsLimit: 4}, "under 16"},
		{docker.Config{CPUs: -1}, "negative"},
		{docker.Config{TmpBytes: 10}, "TmpBytes"},
		{docker.Config{Labels: map[string]string{"io.codemode.owner": "x"}}, "owns"},
	} {
		if _, err := docker.New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v; want an error saying %q", c.cfg, err, c.want)
		}
	}
}

// TestUnreachableEngineNamesTheSocket needs no engine: the error says which
// address was tried and how to start one.
func TestUnreachableEngineNamesTheSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "no-engine.sock")
	b, err := docker.New(docker.Config{Host: "unix://" + sock})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	_, err = b.Open(ctx, transport.SessionConfig{})
	if err == nil || !strings.Contains(err.Error(), sock) || !strings.Contains(err.Error(), "DOCKER_HOST") {
		t.Fatalf("Open = %v; want an error naming %s and DOCKER_HOST", err, sock)
	}
}

func TestMissingImageSaysMakeImage(t *testing.T) {
	b := engine(t, docker.Config{})
	nb, err := docker.New(docker.Config{Host: b.Host(), Image: "codemode-no-such-image:never"})
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	_, err = nb.Open(t.Context(), transport.SessionConfig{})
	if err == nil || !strings.Contains(err.Error(), "make image") || !strings.Contains(err.Error(), "codemode-no-such-image:never") {
		t.Fatalf("Open = %v; want an error naming the image and `make image`", err)
	}
}

// TestNoResolverConfiguration: a container without a network names no
// resolver, not the build host's nor the engine's.
func TestNoResolverConfiguration(t *testing.T) {
	s := open(t, engine(t, docker.Config{}))
	out := ok(t, s, `
try:
    text = open("/etc/resolv.conf").read()
except OSError as e:
    text = ""
print([l for l in text.splitlines() if l.split()[:1] in (["nameserver"], ["search"], ["domain"])])
`)
	if out != "[]\n" {
		t.Errorf("/etc/resolv.conf in the sandbox names a resolver: %s", out)
	}
}

// TestEnforcementSaysTheSyscallPolicy: the engine's read-back names the
// sandbox's own seccomp profile.
func TestEnforcementSaysTheSyscallPolicy(t *testing.T) {
	b := engine(t, docker.Config{})
	e, err := b.Enforced(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if e.Seccomp != "codemode" {
		t.Errorf("Enforcement.Seccomp = %q, want codemode", e.Seccomp)
	}
}
