package server

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/adk-codemode/codemode/internal/protocol/wire"
)

// TestRunnerProtocolMatchesWire holds the runner's protocol constants
// against the wire package: the version it announces and every frame kind
// it reads or writes.
func TestRunnerProtocolMatchesWire(t *testing.T) {
	consts := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^(PROTOCOL_VERSION|KIND_[A-Z_]+) = (.+)$`).FindAllStringSubmatch(RunnerSource(), -1) {
		consts[m[1]] = m[2]
	}
	if got, want := consts["PROTOCOL_VERSION"], strconv.Itoa(wire.ProtocolVersion); got != want {
		t.Errorf("runner.py PROTOCOL_VERSION = %q, want %s (wire.ProtocolVersion)", got, want)
	}
	want := map[string]string{
		"KIND_READY":       wire.KindReady,
		"KIND_RUN":         wire.KindRun,
		"KIND_TOOL_CALL":   wire.KindToolCall,
		"KIND_TOOL_RESULT": wire.KindToolResult,
		"KIND_DONE":        wire.KindDone,
		"KIND_INTERRUPT":   wire.KindInterrupt,
	}
	for name, kind := range want {
		if got := consts[name]; got != strconv.Quote(kind) {
			t.Errorf("runner.py %s = %s, want %q", name, got, kind)
		}
	}
	for name := range consts {
		if _, ok := want[name]; !ok && name != "PROTOCOL_VERSION" {
			t.Errorf("runner.py defines %s, which this test does not check against the wire package", name)
		}
	}
	// Every frame the runner builds names its kind by constant.
	for _, m := range regexp.MustCompile(`"kind": "([a-z_]+)"`).FindAllStringSubmatch(RunnerSource(), -1) {
		for _, kind := range want {
			if m[1] == kind {
				t.Errorf(`runner.py builds a frame with the literal kind %q: use its KIND_ constant`, m[1])
			}
		}
	}
}
