package fdcheck

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
)

// Set is the process's open descriptors, each as "number→target".
// Targets of pipes and sockets name their inode, so a descriptor number
// reused for another pipe does not look like the old one.
type Set map[string]bool

// Open returns the descriptors open now. It ends t where /proc/self/fd
// cannot be read (see hostcap.Missing).
func Open(t testing.TB) Set {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		hostcap.Missing(t, hostcap.Proc, err)
	}
	out := Set{}
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil {
			out[e.Name()+"→"+l] = true
		}
	}
	return out
}

// Baseline returns the open descriptors after making sure that the
// runtime's poller (which holds descriptors of its own) is up.
func Baseline(t testing.TB) Set {
	t.Helper()
	r, w, err := os.Pipe() // registered with the poller, which starts it
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	w.Close()
	return Open(t)
}

// Added lists the descriptors open now that were not in base. Those of
// base that were closed since (an earlier test's files collected by the
// garbage collector) do not count, nor do descriptors of /proc files, nor
// the sandbox program's (internal/host/sandboxbin), which is opened once and
// kept for the process's life.
func Added(t testing.TB, base Set) []string {
	t.Helper()
	var out []string
	for fd := range Open(t) {
		if !base[fd] && !strings.Contains(fd, "/proc/") && !strings.Contains(fd, "memfd:codemode-stage") {
			out = append(out, fd)
		}
	}
	slices.Sort(out)
	return out
}

// Check fails t unless every descriptor open now was open at base.
// Descriptors held by a goroutine that is still returning from a read are
// closed when it returns, so it waits up to 10 s for them.
func Check(t testing.TB, base Set) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		extra := Added(t, base)
		if len(extra) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("descriptors left open: %s", strings.Join(extra, " "))
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
