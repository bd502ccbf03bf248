package adksuite

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/adk-codemode/codemode/backend/jail"
	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
	"github.com/adk-codemode/codemode/transport"
)

// test is one behaviour of the suite.
type test struct {
	name string
	run  func(t *testing.T, l Line)
}

// groups are the suite's behaviours, by file.
var groups = [][]test{
	turnTests,
	approvalTests,
	artifactTests,
	limitTests,
	observeTests,
	catalogTests,
	geminiTests,
	interruptTests,
	configTests,
	runCodeTests,
	durableTests,
}

// Run runs every behaviour of the suite on l, each as a subtest named
// for it.
func Run(t *testing.T, l Line) {
	for _, g := range groups {
		for _, tc := range g {
			t.Run(tc.name, func(t *testing.T) { tc.run(t, l) })
		}
	}
}

// fixture is an Agent started for one test, with its script.
type fixture struct {
	Agent
	t      *testing.T
	script *Script
}

// start starts s on l: with the jail as the backend unless s names one,
// and an empty script unless s has a model.
func start(t *testing.T, l Line, s Setup) *fixture {
	t.Helper()
	if s.Config.Backend == nil {
		s.Config.Backend = Backend(t)
	}
	if s.Model == nil {
		s.Model = NewScript()
	}
	sc, _ := s.Model.(*Script)
	return &fixture{Agent: l.Start(t, s), t: t, script: sc}
}

// turn runs one user message in session sid and returns its events.
func (f *fixture) turn(sid, msg string) []Event {
	f.t.Helper()
	return f.send(sid, genai.NewContentFromText(msg, genai.RoleUser))
}

// send runs one invocation for msg in session sid and returns its events.
func (f *fixture) send(sid string, msg *genai.Content) []Event {
	f.t.Helper()
	evs, err := f.Send(f.t.Context(), sid, msg)
	if err != nil {
		f.t.Fatalf("run: %v", err)
	}
	return evs
}

// state reads key of session sid's state.
func (f *fixture) state(sid, key string) (any, bool) {
	f.t.Helper()
	v, ok, err := f.State(f.t.Context(), sid, key)
	if err != nil {
		f.t.Fatal(err)
	}
	return v, ok
}

// Outputs returns the execute_code results among events, in order.
func Outputs(evs []Event) []map[string]any {
	var out []map[string]any
	for _, ev := range evs {
		if ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			if p.FunctionResponse != nil && p.FunctionResponse.Name == ToolName {
				out = append(out, p.FunctionResponse.Response)
			}
		}
	}
	return out
}

// Backend returns the jail; where namespaces are unavailable it skips
// the test, or fails it under CODEMODE_REQUIRE_ALL=1 (see hostcap).
func Backend(t testing.TB) transport.Backend {
	t.Helper()
	b := &jail.Backend{}
	jailOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s, err := b.Open(ctx, transport.SessionConfig{})
		if err == nil {
			_ = s.Close()
		}
		jailErr = err
	})
	if errors.Is(jailErr, jail.ErrUnsupported) {
		hostcap.Missing(t, hostcap.UserNS, jailErr)
	}
	if jailErr != nil {
		t.Fatalf("the jail does not start: %v", jailErr)
	}
	return b
}

var (
	jailOnce sync.Once
	jailErr  error
)

// Eventually polls cond until it holds or a generous deadline passes.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
