//go:build linux

package server

import (
	"os"
	"testing"

	"github.com/adk-codemode/codemode/internal/sandbox/supervisor"
)

// supPair returns two connections on a fresh socket pair: a sends what
// b's ops allow and b what a's allow.
func supPair(t testing.TB, aOps, bOps map[string]int) (a, b *supervisor.Conn) {
	t.Helper()
	fa, fb, err := SocketPair()
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
