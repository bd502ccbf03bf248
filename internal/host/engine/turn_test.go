package engine

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/transport"
)

// closeCounter is a session that counts its closes.
type closeCounter struct {
	transport.Session
	closes atomic.Int32
}

func (s *closeCounter) Close() error { s.closes.Add(1); return nil }

type testTurn = Turn[string, *int]

func openWith(s transport.Session) func(context.Context, string) (transport.Session, error) {
	return func(context.Context, string) (transport.Session, error) { return s, nil }
}

func notClosed() bool { return false }

// TestTurnReleaseRule: a released turn's sandbox closes once nothing uses
// it and no block of it awaits approval, once; Shutdown closes it at once.
func TestTurnReleaseRule(t *testing.T) {
	turns := NewTurns[string, *int](time.Hour)
	defer turns.Close()
	tn, err := turns.Acquire("inv-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := tn.OpenSession(t.Context(), notClosed, openWith(&closeCounter{})); err == nil {
		t.Fatal("a sandbox opened for a turn with no surface")
	}
	tn.SetSurface("surface")
	sess := &closeCounter{}
	s, fresh, err := tn.OpenSession(t.Context(), notClosed, openWith(sess))
	if err != nil || !fresh || s != sess {
		t.Fatalf("OpenSession = %v, %v, %v", s, fresh, err)
	}
	if again, fresh, _ := tn.OpenSession(t.Context(), notClosed, openWith(&closeCounter{})); again != sess || fresh {
		t.Fatal("a second sandbox was opened for the turn")
	}
	exec := new(int)
	tn.Begin(exec)
	if cur, ok := tn.Current(); !ok || cur != exec {
		t.Errorf("Current = %v, %v", cur, ok)
	}
	turns.Release("inv-1")
	if n := sess.closes.Load(); n != 0 {
		t.Fatalf("the sandbox closed while a call used it (%d)", n)
	}
	ended := false
	tn.End(exec, func() { ended = true })
	if _, ok := tn.Current(); ok || !ended {
		t.Errorf("after End: current %v, ended %v", ok, ended)
	}
	if n := sess.closes.Load(); n != 1 {
		t.Fatalf("the sandbox closed %d times once released and unused, want once", n)
	}

	// A parked block keeps a released turn's sandbox.
	held, _ := turns.Acquire("inv-2")
	held.SetSurface("surface")
	sess2 := &closeCounter{}
	_, _, _ = held.OpenSession(t.Context(), notClosed, openWith(sess2))
	held.Park(&ParkedBlock[*testTurn]{})
	held.Begin(nil)
	turns.Release("inv-2")
	held.End(nil, func() {})
	if !held.AwaitingApproval() || sess2.closes.Load() != 0 {
		t.Fatal("a turn awaiting approval lost its sandbox")
	}
	held.Shutdown()
	if sess2.closes.Load() != 1 {
		t.Error("Shutdown did not close the sandbox")
	}
}

// TestTurnsAdopt: a parked turn resumed by another invocation becomes
// that invocation's turn, unless it has one, or Turns are closed.
func TestTurnsAdopt(t *testing.T) {
	turns := NewTurns[string, *int](time.Hour)
	parked, _ := turns.Get("inv-1")
	turns.Release("inv-1")
	turns.Adopt("inv-2", parked)
	if got := turns.Lookup("inv-2"); got != parked {
		t.Fatal("the resuming invocation did not adopt the parked turn")
	}
	other, _ := turns.Get("inv-3")
	turns.Adopt("inv-3", parked)
	if turns.Lookup("inv-3") != other {
		t.Error("an invocation's own turn was replaced by the one it resumed")
	}
	if !turns.Close() || turns.Close() {
		t.Error("Close did not report the first close alone")
	}
	if _, err := turns.Get("inv-4"); !errors.Is(err, ErrClosed) {
		t.Errorf("Get after Close: %v", err)
	}
	turns.Adopt("inv-5", parked)
	if turns.Lookup("inv-5") != nil {
		t.Error("a closed Turns adopted a turn")
	}
}

// TestTurnsReapIdle: a turn unused past the idle timeout is released and
// its sandbox closed; one in use is left alone.
func TestTurnsReapIdle(t *testing.T) {
	turns := NewTurns[string, *int](100 * time.Millisecond)
	defer turns.Close()
	idle, _ := turns.Get("idle")
	idle.SetSurface("s")
	idleSess := &closeCounter{}
	_, _, _ = idle.OpenSession(t.Context(), notClosed, openWith(idleSess))
	busy, _ := turns.Acquire("busy")
	busy.SetSurface("s")
	busySess := &closeCounter{}
	_, _, _ = busy.OpenSession(t.Context(), notClosed, openWith(busySess))
	for deadline := time.Now().Add(10 * time.Second); idleSess.closes.Load() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the idle turn was not reaped")
		}
	}
	if turns.Lookup("idle") != nil || turns.Lookup("busy") != busy || busySess.closes.Load() != 0 {
		t.Error("the reaper took a turn in use, or left the idle one listed")
	}
}

// TestTurnOpenSessionWhileClosing: a sandbox opened as Code Mode closes
// is dropped, not left open.
func TestTurnOpenSessionWhileClosing(t *testing.T) {
	var tn testTurn
	tn.SetSurface("s")
	sess := &closeCounter{}
	closing := false
	closed := func() bool { return closing }
	_, _, err := tn.OpenSession(t.Context(), closed, func(context.Context, string) (transport.Session, error) {
		closing = true
		return sess, nil
	})
	if !errors.Is(err, ErrClosed) || sess.closes.Load() != 1 {
		t.Errorf("err = %v, closes %d; want ErrClosed and the sandbox closed", err, sess.closes.Load())
	}
}
