//go:build linux

package sandboxserver

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/internal/supervisor"
)

// fdSet is the process's open descriptors, each as "number→target".
// Targets of pipes and sockets name their inode, so a descriptor number
// reused for another pipe does not look like the old one.
type fdSet map[string]bool

func openFDs(t testing.TB) fdSet {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	out := fdSet{}
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil {
			out[e.Name()+"→"+l] = true
		}
	}
	return out
}

// fdBaseline returns the open descriptors after making sure that the
// runtime's poller (which holds descriptors of its own) is up.
func fdBaseline(t testing.TB) fdSet {
	t.Helper()
	a, b, err := socketPair()
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	b.Close()
	return openFDs(t)
}

// newFDs lists the descriptors open now that were not in base. Those of
// base that were closed since (an earlier test's files collected by the
// garbage collector) do not count.
func newFDs(t testing.TB, base fdSet) []string {
	t.Helper()
	var out []string
	for fd := range openFDs(t) {
		if !base[fd] && !strings.Contains(fd, "/proc/") {
			out = append(out, fd)
		}
	}
	slices.Sort(out)
	return out
}

// checkFDs fails t unless every descriptor open now was open at base.
// Descriptors held by a goroutine that is still returning from a read are
// closed when it returns, so it waits a little.
func checkFDs(t testing.TB, base fdSet) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		extra := newFDs(t, base)
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

// supPair returns two connections on a fresh socket pair: a sends what
// b's ops allow and b what a's allow.
func supPair(t testing.TB, aOps, bOps map[string]int) (a, b *supervisor.Conn) {
	t.Helper()
	fa, fb, err := socketPair()
	if err != nil {
		t.Fatal(err)
	}
	if a, err = supervisor.NewConn(fa, aOps); err != nil {
		fb.Close()
		t.Fatal(err)
	}
	if b, err = supervisor.NewConn(fb, bOps); err != nil {
		shut(a)
		t.Fatal(err)
	}
	return a, b
}

// shut closes c and every descriptor it received that no message
// claimed, as its receiving goroutine does.
func shut(c *supervisor.Conn) {
	c.DropFDs()
	_ = c.Close()
}

// pipes returns n pipes; every end is closed at the end of the test.
func pipes(t testing.TB, n int) (rs, ws []*os.File) {
	t.Helper()
	for range n {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close(); w.Close() })
		rs, ws = append(rs, r), append(ws, w)
	}
	return rs, ws
}
