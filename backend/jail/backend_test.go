package jail_test

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/backend/jail"
	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
	"github.com/adk-codemode/codemode/transport"
	"github.com/adk-codemode/codemode/transport/transporttest"
)

func TestBackend(t *testing.T) {
	transporttest.Run(t, func(t *testing.T) transport.Backend { return &jail.Backend{} }, transporttest.Options{Isolated: true})
}

// procsWith lists host processes whose command line contains token.
func procsWith(t *testing.T, token string) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), token) {
			out = append(out, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}

func openSession(t *testing.T, cfg jail.Config) transport.Session {
	t.Helper()
	s, err := (&jail.Backend{Config: cfg}).Open(t.Context(), transport.SessionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestSessionDaemonDiesWithSession(t *testing.T) {
	s := openSession(t, jail.Config{})
	token := fmt.Sprintf("codemode-daemon-%d", time.Now().UnixNano())
	r, err := s.Exec(t.Context(), transport.Block{Code: fmt.Sprintf(`
import subprocess, sys
# Double fork and a new session: the classic way to escape a parent. The
# token is an argument the daemon ignores, to find it from the host.
subprocess.run(["sh", "-c", "setsid " + sys.executable + " -c 'import time; time.sleep(3600)' %s </dev/null >/dev/null 2>&1 &"])
`, token), Timeout: 10 * time.Second})
	if err != nil || r.ExitCode != 0 {
		t.Fatalf("%v %+v", err, r)
	}
	// The daemon runs on its own; a process in the middle of an exec may
	// briefly show an empty command line, so look more than once.
	for deadline := time.Now().Add(10 * time.Second); len(procsWith(t, token)) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the daemon did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := s.Close(); err != nil && !errors.Is(err, transport.ErrClosed) {
		t.Fatal(err)
	}
	if left := procsWith(t, token); len(left) > 0 {
		t.Errorf("processes outlived the session: %v", left)
	}
}

func TestSessionForkBombContained(t *testing.T) {
	s := openSession(t, jail.Config{Processes: 64})
	r, err := s.Exec(t.Context(), transport.Block{Code: `
import os
kids, refused = 0, 0
for _ in range(500):
    try:
        pid = os.fork()
    except OSError:
        refused += 1
        continue
    if pid == 0:
        import time
        time.sleep(30)
        os._exit(0)
    kids += 1
print(kids < 64, refused > 0)
`, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if r.Stdout != "True True\n" {
		t.Errorf("fork bomb not contained: stdout %q stderr %q", r.Stdout, r.Stderr)
	}
	// The session goes on working once the block is over.
	r, err = s.Exec(t.Context(), transport.Block{Code: "print('alive')", Timeout: 20 * time.Second})
	if err != nil || r.Stdout != "alive\n" {
		t.Errorf("after the fork bomb: %v %+v", err, r)
	}
}

func TestSessionMemoryBombContained(t *testing.T) {
	s := openSession(t, jail.Config{MemoryBytes: 256 << 20})
	r, err := s.Exec(t.Context(), transport.Block{Code: `
v = 'kept'
chunks = []
try:
    while True:
        chunks.append(bytearray(32 << 20))
except MemoryError:
    chunks = None
    print("MemoryError")
`, Timeout: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// Either Python sees a MemoryError (address-space limit), or the
	// kernel kills it (memory cgroup) and the result says so.
	switch {
	case r.Stdout == "MemoryError\n" && !r.Reset:
	case r.Reset && r.ExitCode == 137 && strings.Contains(r.Stderr, "killed"):
	default:
		t.Fatalf("memory bomb: exit %d reset %v stdout %q stderr %q", r.ExitCode, r.Reset, r.Stdout, r.Stderr)
	}
	r, err = s.Exec(t.Context(), transport.Block{Code: "print('alive')", Timeout: 20 * time.Second})
	if err != nil || r.Stdout != "alive\n" {
		t.Errorf("after the memory bomb: %v %+v", err, r)
	}
}

func TestSessionLimitsApplyToWorker(t *testing.T) {
	s := openSession(t, jail.Config{MemoryBytes: 512 << 20, OpenFiles: 256, Processes: 100})
	r, err := s.Exec(t.Context(), transport.Block{Code: `
import resource, os
print(resource.getrlimit(resource.RLIMIT_AS)[0] >> 20, resource.getrlimit(resource.RLIMIT_NOFILE)[0], resource.getrlimit(resource.RLIMIT_NPROC)[0])
# Only stdin, stdout, stderr, the two control pipes and the runner's
# copies of stdout and stderr (which give every block sound streams): the
# server's own connection to the host is not among them (the eighth is
# listdir's own).
print(os.getpid() != 1, len(os.listdir("/proc/self/fd")))
`, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// Address space: the default for 512 MiB of memory, 512 MiB + 1 GiB;
	// processes: 100 less the 16 kept for the server.
	if want := "1536 256 84\nTrue 8\n"; r.Stdout != want {
		t.Errorf("stdout %q, want %q (stderr %q)", r.Stdout, want, r.Stderr)
	}
}

// TestMemoryKillIsNamed: a worker killed by the session's memory cgroup is
// reported as such, to the host (Result.OutOfMemory) and in the note the
// model reads, with the limit; the session goes on with a fresh worker.
func TestMemoryKillIsNamed(t *testing.T) {
	for _, cold := range []bool{false, true} {
		name := "forked"
		if cold {
			name = "cold"
		}
		t.Run(name, func(t *testing.T) {
			be := &jail.Backend{Config: jail.Config{MemoryBytes: 128 << 20, AddressSpaceBytes: 4 << 30}, Cold: cold}
			t.Cleanup(func() { _ = be.Close() })
			s, err := be.Open(t.Context(), transport.SessionConfig{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if !s.(*jail.Session).Enforced().CgroupMemory {
				hostcap.Missing(t, hostcap.Cgroup, "the session has no memory cgroup to tell a memory kill by")
			}
			r, err := s.Exec(t.Context(), transport.Block{Code: "kept = 1\nx = b'x' * (1 << 30)\nprint(len(x))", Timeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if !r.Reset || !r.OutOfMemory || r.ExitCode != 137 {
				t.Fatalf("reset %v, out of memory %v, exit %d; stderr %q", r.Reset, r.OutOfMemory, r.ExitCode, r.Stderr)
			}
			if !strings.Contains(r.Stderr, "the sandbox ran out of memory (its limit is 128 MiB)") || !strings.Contains(r.Stderr, "variables from earlier blocks are gone") {
				t.Errorf("stderr %q does not name the memory limit", r.Stderr)
			}
			// A worker killed otherwise is not taken for a memory kill.
			r, err = s.Exec(t.Context(), transport.Block{Code: "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", Timeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if !r.Reset || r.OutOfMemory || strings.Contains(r.Stderr, "memory") {
				t.Errorf("a SIGKILL taken for a memory kill: out of memory %v, stderr %q", r.OutOfMemory, r.Stderr)
			}
			r, err = s.Exec(t.Context(), transport.Block{Code: "print('alive')", Timeout: time.Minute})
			if err != nil || r.Stdout != "alive\n" {
				t.Errorf("after the memory kill: %v %+v", err, r)
			}
		})
	}
}
