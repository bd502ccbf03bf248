package codemode

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestInterruptKeepsVariables: the interrupt that hooklink hands to
// package mcpserver stops the block an invocation runs in place, as a
// timeout would, and the turn's next block sees its variables.
func TestInterruptKeepsVariables(t *testing.T) {
	m := newScript().on("go",
		run("x = 41\nimport time\ntime.sleep(30)\nx = 0"),
		run("print(x + 1)"),
		say("done"))
	f := newFixture(t, m, fixtureConfig{cfg: Config{}})
	e := f.hooks.e
	if e.interrupt("no-such-invocation", errors.New("cancelled")) {
		t.Error("interrupt of an unknown invocation reported a block")
	}
	stopped := make(chan bool, 1)
	go func() {
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			e.mu.Lock()
			var ids []string
			for id, tn := range e.turns {
				if tn.currentFlight() != nil {
					ids = append(ids, id)
				}
			}
			e.mu.Unlock()
			// Give the block time to set x.
			if len(ids) == 1 {
				time.Sleep(300 * time.Millisecond)
				stopped <- e.interrupt(ids[0], errors.New("the client cancelled the call"))
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		stopped <- false
	}()
	start := time.Now()
	out := outputs(f.turn(t.Context(), "s1", "go"))
	if !<-stopped {
		t.Fatal("interrupt found no block to stop")
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("the interrupted block ran on: the turn took %s", d)
	}
	if len(out) != 2 {
		t.Fatalf("got %d results, want 2", len(out))
	}
	stderr, _ := out[0]["stderr"].(string)
	for _, want := range []string{"cancelled the code: the client cancelled the call", "Variables and files from this turn are kept."} {
		if !strings.Contains(stderr, want) {
			t.Errorf("the interrupted block's stderr lacks %q: %q", want, stderr)
		}
	}
	if stdout, _ := out[1]["stdout"].(string); stdout != "42\n" {
		t.Errorf("the next block: stdout %q, want 42 (the variable kept)", stdout)
	}
}
