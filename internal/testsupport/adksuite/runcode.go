package adksuite

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/adk-codemode/codemode/internal/host/engine"
	"github.com/adk-codemode/codemode/transport"
)

// runCodeTests are what execute_code does when its sandbox fails it, when
// its turn ends while it starts, and once the plugin is closed, as a flow
// calling the tool sees it.
var runCodeTests = []test{
	{"VersionMismatchDiscardsTurn", testVersionMismatchDiscardsTurn},
	{"LostSandboxTellsTheModel", testLostSandboxTellsTheModel},
	{"ClosedPluginRefusesCode", testClosedPluginRefusesCode},
	{"TurnReleasedWhileResolvingDoesNotPanic", testTurnReleasedWhileResolvingDoesNotPanic},
}

// testVersionMismatchDiscardsTurn: a sandbox of another protocol version
// fails the call with the version error, and the sandbox is closed.
func testVersionMismatchDiscardsTurn(t *testing.T, l Line) {
	b := &cannedBackend{execs: []error{&transport.VersionError{Sandbox: 1, Host: 2}}}
	f := start(t, l, Setup{NoPlugin: true, Config: Config{Backend: b}})
	_, err := f.RunCode(t.Context(), "x")
	var ve *transport.VersionError
	if !errors.As(err, &ve) {
		t.Fatalf("Run: %v, want a *transport.VersionError", err)
	}
	if _, closed := b.counts(); closed != 1 {
		t.Errorf("closed %d sandboxes, want 1", closed)
	}
}

// testLostSandboxTellsTheModel: a sandbox lost while the code may have
// run reaches the model as execute_code's result, not as a tool error:
// stderr says what may have happened, and the sandbox is dropped.
func testLostSandboxTellsTheModel(t *testing.T, l Line) {
	b := &cannedBackend{execs: []error{&transport.ConnectionError{Stage: transport.Unknown, Err: errors.New("socket closed")}}}
	f := start(t, l, Setup{NoPlugin: true, Config: Config{Backend: b}})
	got, err := f.RunCode(t.Context(), "x")
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	stderr, _ := got["stderr"].(string)
	opened, closed := b.counts()
	if got["stdout"] != "" || !strings.Contains(stderr, "It may or may not have run") || opened != 1 || closed != 1 {
		t.Errorf("result %v after %d opened and %d closed sandboxes; want the model told the code may have run, once, and the sandbox dropped", got, opened, closed)
	}
}

// testClosedPluginRefusesCode: once closed, the plugin runs no code.
func testClosedPluginRefusesCode(t *testing.T, l Line) {
	f := start(t, l, Setup{NoPlugin: true, Config: Config{Backend: failingBackend{}}})
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.RunCode(t.Context(), "print(1)"); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("Run after Close: %v, want ErrClosed", err)
	}
}

// testTurnReleasedWhileResolvingDoesNotPanic: with toolsets, execute_code
// resolved the surface on one turn and then ran on another, looked up
// again: a turn released in between (as AfterAgent, after-run or the idle
// reaper may do at any time from another goroutine) left the second
// without a surface, and opening its sandbox dereferenced nil.
func testTurnReleasedWhileResolvingDoesNotPanic(t *testing.T, l Line) {
	var f *fixture
	var once sync.Once
	released := false
	late := Toolset{Name: "Late", Resolve: func() []Tool {
		once.Do(func() { f.ReleaseTurns(); released = true })
		return nil
	}}
	b := &cannedBackend{res: transport.Result{Stdout: "ok\n"}}
	f = start(t, l, Setup{NoPlugin: true, Toolsets: []Toolset{late}, Config: Config{Backend: b}})
	// A panic here would end the test binary, and every test after this
	// one with it: it is this test's failure.
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("execute_code panicked: %v", r)
		}
	}()
	out, err := f.RunCode(t.Context(), "x")
	if err != nil {
		t.Fatal(err)
	}
	if !released {
		t.Fatal("the toolset was never resolved, so no turn was released while it was")
	}
	if out["stdout"] != "ok\n" {
		t.Errorf("stdout = %q", out["stdout"])
	}
}
