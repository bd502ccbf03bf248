package adksuite

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/transport"
)

// interruptTests are the plugin's interrupt, the one package mcpserver
// uses when its client cancels a call: it stops a block as a timeout
// would, also while the block's sandbox is still starting.
var interruptTests = []test{
	{"InterruptKeepsVariables", testInterruptKeepsVariables},
	{"InterruptWhileTheSandboxStarts", testInterruptWhileTheSandboxStarts},
}

// testInterruptKeepsVariables: the interrupt stops the block an
// invocation runs in place, as a timeout would, and the turn's next block
// sees its variables.
func testInterruptKeepsVariables(t *testing.T, l Line) {
	// The code calls ready once it has set x; the block is interrupted
	// then, and only then.
	set := make(chan struct{}, 1)
	ready := Tool{
		Name: "ready", Description: "Say the variable is set.",
		Run: func(Call, map[string]any) (map[string]any, error) {
			set <- struct{}{}
			return map[string]any{}, nil
		},
	}
	m := NewScript().On("go",
		Exec("x = 41\nfrom tools import ready\nready()\nimport time\ntime.sleep(30)\nx = 0"),
		Exec("print(x + 1)"),
		Say("done"))
	f := start(t, l, Setup{Tools: []Tool{ready}, Model: m})
	if f.Interrupt("no-such-invocation", errors.New("cancelled")) {
		t.Error("interrupt of an unknown invocation reported a block")
	}
	stopped := make(chan bool, 1)
	go func() {
		select {
		case <-set:
		case <-time.After(60 * time.Second):
			stopped <- false
			return
		}
		ids := f.InFlight()
		if len(ids) != 1 {
			t.Errorf("%d blocks in flight while the code waits, want 1", len(ids))
			stopped <- false
			return
		}
		stopped <- f.Interrupt(ids[0], errors.New("the client cancelled the call"))
	}()
	start := time.Now()
	out := Outputs(f.turn("s1", "go"))
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
	for _, want := range []string{"cancelled the code: the client cancelled the call", "Its variables and files are kept for the next block."} {
		if !strings.Contains(stderr, want) {
			t.Errorf("the interrupted block's stderr lacks %q: %q", want, stderr)
		}
	}
	if stdout, _ := out[1]["stdout"].(string); stdout != "42\n" {
		t.Errorf("the next block: stdout %q, want 42 (the variable kept)", stdout)
	}
}

// gatedBackend holds each turn's Open (one with tools; the probe of the
// environment has none) until the test lets it go.
type gatedBackend struct {
	transport.Backend
	opening chan struct{} // receives when an Open begins
	release chan struct{} // closed to let Opens go on
}

func (b *gatedBackend) Open(ctx context.Context, cfg transport.SessionConfig) (transport.Session, error) {
	if cfg.Tools != nil {
		b.opening <- struct{}{}
		<-b.release
	}
	return b.Backend.Open(ctx, cfg)
}

// testInterruptWhileTheSandboxStarts: an interrupt that lands while the
// turn's sandbox is still starting stops the block before any of it runs,
// and the model is told so; the turn's next block runs in a sandbox of its
// own.
func testInterruptWhileTheSandboxStarts(t *testing.T, l Line) {
	gate := &gatedBackend{Backend: Backend(t), opening: make(chan struct{}, 1), release: make(chan struct{})}
	m := NewScript().On("go",
		Exec("x = 41\nprint('ran')"),
		Exec("print('next')"),
		Say("done"))
	f := start(t, l, Setup{Model: m, Config: Config{Backend: gate}})
	stopped := make(chan bool, 1)
	go func() {
		<-gate.opening
		ids := f.InFlight()
		ok := len(ids) == 1 && f.Interrupt(ids[0], errors.New("the client cancelled the call"))
		close(gate.release)
		stopped <- ok
	}()
	out := Outputs(f.turn("s1", "go"))
	if !<-stopped {
		t.Fatal("interrupt found no block to stop while the sandbox started")
	}
	if len(out) != 2 {
		t.Fatalf("got %d results, want 2: %v", len(out), out)
	}
	stdout, _ := out[0]["stdout"].(string)
	stderr, _ := out[0]["stderr"].(string)
	if stdout != "" {
		t.Errorf("the interrupted block printed %q; none of it should have run", stdout)
	}
	for _, want := range []string{"the client cancelled the call", "still starting", "none of the code ran"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("the interrupted block's stderr lacks %q: %v", want, out[0])
		}
	}
	if stdout, _ := out[1]["stdout"].(string); stdout != "next\n" {
		t.Errorf("the next block: stdout %q stderr %v, want it run", stdout, out[1]["stderr"])
	}
}
