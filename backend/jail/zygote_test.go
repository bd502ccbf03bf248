//go:build linux && amd64

package jail_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/backend/jail"
	"github.com/adk-codemode/codemode/transport"
)

func TestZygoteSessionRuns(t *testing.T) {
	be := jail.ForkingBackend(jail.Config{})
	t.Cleanup(func() {
		if err := be.Close(); err != nil {
			t.Error(err)
		}
	})
	for i := 0; i < 3; i++ {
		s, err := be.Open(t.Context(), transport.SessionConfig{})
		if err != nil {
			t.Fatal(err)
		}
		js := s.(*jail.Session)
		if err := js.Fallback(); err != nil {
			t.Fatalf("started cold: %v", err)
		}
		e := js.Enforced()
		if !(e.Forked && e.UserNS && e.MountNS && e.PIDNS && e.NetNS && e.IPCNS && e.UTSNS && e.CgroupNS &&
			e.Seccomp && e.NoNewPrivs && e.CapsDropped && e.Securebits && e.ReadOnlyRoot && e.Loopback) {
			t.Errorf("a forked session does not enforce everything:\n%s", e)
		}
		if e.Rlimits["NOFILE"] == 0 || e.Rlimits["CORE"] != 0 {
			t.Errorf("rlimits %v", e.Rlimits)
		}
		r, err := s.Exec(t.Context(), transport.Block{Code: "import os; print(os.getpid() > 1, os.getuid() == os.geteuid())", Timeout: 10 * time.Second})
		s.Close()
		if err != nil || r.Stdout != "True True\n" {
			t.Fatalf("exec: %v %+v", err, r)
		}
	}
}

// TestZygoteManySessions opens 64 forked sessions at once; every one must
// start forked (none cold) and run a block.
func TestZygoteManySessions(t *testing.T) {
	if testing.Short() {
		t.Skip("64 sessions")
	}
	be := jail.ForkingBackend(jail.Config{})
	t.Cleanup(func() { _ = be.Close() })
	const n = 64
	sessions := make([]transport.Session, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			s, err := be.Open(t.Context(), transport.SessionConfig{})
			if err != nil {
				errs[i] = err
				return
			}
			sessions[i] = s
			if fb := s.(*jail.Session).Fallback(); fb != nil {
				errs[i] = fmt.Errorf("started cold: %w", fb)
				return
			}
			r, err := s.Exec(t.Context(), transport.Block{Code: fmt.Sprintf("print(%d)", i), Timeout: 60 * time.Second})
			if err != nil {
				errs[i] = fmt.Errorf("exec: %w", err)
			} else if r.Stdout != fmt.Sprintf("%d\n", i) {
				errs[i] = fmt.Errorf("exec: result %+v", r)
			}
		})
	}
	wg.Wait()
	failed := 0
	for i, err := range errs {
		if err != nil {
			failed++
			t.Errorf("session %d: %v", i, err)
		}
	}
	for _, s := range sessions {
		if s != nil {
			s.Close()
		}
	}
	t.Logf("%d of %d sessions failed", failed, n)
}

// TestZygoteSessionsDiffer checks what must differ between sessions forked
// from one template: the random module's state, the runner's call-id
// prefix, and the workspace; and that the environment is the allowlist.
func TestZygoteSessionsDiffer(t *testing.T) {
	be := jail.ForkingBackend(jail.Config{})
	t.Cleanup(func() { _ = be.Close() })
	code := `
import os, random, sys
open("/workspace/mark", "a").close()
print(random.random(), sorted(os.environ), len(os.listdir("/workspace")), "ctypes" in sys.modules)
`
	var outs []string
	for range 2 {
		s, err := be.Open(t.Context(), transport.SessionConfig{})
		if err != nil {
			t.Fatal(err)
		}
		r, err := s.Exec(t.Context(), transport.Block{Code: code, Timeout: 10 * time.Second})
		s.Close()
		if err != nil || r.ExitCode != 0 {
			t.Fatal(err, r.Stderr)
		}
		outs = append(outs, r.Stdout)
	}
	f0, f1 := strings.Fields(outs[0]), strings.Fields(outs[1])
	if f0[0] == f1[0] {
		t.Errorf("two forked sessions drew the same random number %s", f0[0])
	}
	want := "['HOME', 'LANG', 'PATH', 'TMPDIR'] 1 False\n"
	for _, o := range outs {
		if _, rest, _ := strings.Cut(o, " "); rest != want {
			t.Errorf("session saw %q; want environment, one workspace file and no template modules: %q", rest, want)
		}
	}
}

func TestCheckForked(t *testing.T) {
	e, d, err := jail.CheckForked(t.Context(), jail.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if !e.Forked || !e.Seccomp || !e.CapsDropped || !e.PIDNS || !e.UserNS || d <= 0 {
		t.Fatalf("CheckForked: %v\n%s", d, e)
	}
}
