package codemode

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/backend/warm"
	"github.com/adk-codemode/codemode/transport"
	"github.com/google/go-cmp/cmp"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
)

func TestToolCallFromCode(t *testing.T) {
	m := newScript().on("weather?",
		run(`from tools import get_weather, convert_temperature
w = get_weather(city="Paris")
f = convert_temperature(value=w["temp_c"], unit="F")
print(w["city"], w["temp_c"], f["value"])`),
		say("done"))
	f := newFixture(t, m, fixtureConfig{cfg: Config{Tools: weatherTools(t)}})
	out := outputs(f.turn(t.Context(), "s1", "weather?"))
	want := []map[string]any{{"stdout": "Paris 18 64.4\n", "stderr": "", "output_files": []string{}}}
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("execute_code results (-want +got):\n%s", diff)
	}
}

func TestRequestCarriesBlockAndTool(t *testing.T) {
	m := newScript().on("hi", say("hello"))
	f := newFixture(t, m, fixtureConfig{cfg: Config{Tools: weatherTools(t)}})
	f.turn(t.Context(), "s1", "hi")
	reqs := m.requests()
	if len(reqs) != 1 {
		t.Fatalf("got %d model requests, want 1", len(reqs))
	}
	req := reqs[0]
	if _, ok := req.Tools[ToolName].(*execTool); !ok {
		t.Errorf("request tools: %v, want execute_code runnable", req.Tools)
	}
	var declared []string
	for _, gt := range req.Config.Tools {
		for _, d := range gt.FunctionDeclarations {
			declared = append(declared, d.Name)
		}
	}
	if diff := cmp.Diff([]string{ToolName}, declared); diff != "" {
		t.Errorf("declared tools (-want +got):\n%s", diff)
	}
	var si strings.Builder
	for _, p := range req.Config.SystemInstruction.Parts {
		si.WriteString(p.Text)
	}
	text := si.String()
	for _, want := range []string{"You are a helpful assistant.", "<code-mode>", "<python-version>", "def get_weather(", "def convert_temperature(", "</code-mode>"} {
		if !strings.Contains(text, want) {
			t.Errorf("system instruction lacks %q:\n%s", want, text)
		}
	}
}

func TestDisableBlock(t *testing.T) {
	m := newScript().on("hi", say("hello"))
	f := newFixture(t, m, fixtureConfig{cfg: Config{Tools: weatherTools(t), DisableBlock: true}})
	f.turn(t.Context(), "s1", "hi")
	req := m.requests()[0]
	for _, p := range req.Config.SystemInstruction.Parts {
		if strings.Contains(p.Text, "<code-mode>") {
			t.Errorf("the block is in the system instruction with DisableBlock set:\n%s", p.Text)
		}
	}
	d := req.Config.Tools[0].FunctionDeclarations[0]
	for _, want := range []string{"list the modules", "from tools import search, describe"} {
		if !strings.Contains(d.Description, want) {
			t.Errorf("execute_code description does not tell how to discover the tools (no %q): %q", want, d.Description)
		}
	}
}

func TestCallbacksApplyToCallsFromCode(t *testing.T) {
	var mu sync.Mutex
	var seen []string // function call ids seen by the plugin
	policy, err := plugin.New(plugin.Config{
		Name: "policy",
		BeforeToolCallback: func(ctx agent.Context, t tool.Tool, args map[string]any) (map[string]any, error) {
			mu.Lock()
			seen = append(seen, t.Name()+" "+ctx.FunctionCallID())
			mu.Unlock()
			if t.Name() == "get_weather" && args["city"] == "Oslo" {
				return nil, errors.New("Oslo is off limits")
			}
			return nil, nil
		},
		AfterToolCallback: func(ctx agent.Context, t tool.Tool, args, result map[string]any, err error) (map[string]any, error) {
			if t.Name() == "convert_temperature" && err == nil {
				return map[string]any{"value": result["value"], "unit": "F", "rewritten_by": "plugin"}, nil
			}
			return nil, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	agentCfg := llmagent.Config{
		BeforeToolCallbacks: []llmagent.BeforeToolCallback{
			func(ctx agent.Context, t tool.Tool, args map[string]any) (map[string]any, error) {
				if t.Name() == "get_weather" && args["city"] == "Paris" && args["veto"] == nil {
					return nil, nil
				}
				if t.Name() == "remember" {
					return map[string]any{"vetoed_by": "agent"}, nil
				}
				return nil, nil
			},
		},
		AfterToolCallbacks: []llmagent.AfterToolCallback{
			func(ctx agent.Context, t tool.Tool, args, result map[string]any, err error) (map[string]any, error) {
				if t.Name() == "get_weather" && err == nil {
					result["temp_c"] = 99.0
					return result, nil
				}
				return nil, nil
			},
		},
	}
	m := newScript().on("go",
		run(`from tools import get_weather, convert_temperature, remember, ToolError
print("paris", get_weather(city="Paris")["temp_c"])
try:
    get_weather(city="Oslo")
except ToolError as e:
    print("oslo", e)
print("convert", convert_temperature(value=0, unit="F"))
print("remember", remember(key="k", value="v"))`),
		say("done"))
	f := newFixture(t, m, fixtureConfig{cfg: Config{Tools: weatherTools(t)}, agent: agentCfg, plugins: []*plugin.Plugin{policy}})
	evs := f.turn(t.Context(), "s1", "go")
	out := outputs(evs)
	if len(out) != 1 {
		t.Fatalf("got %d execute_code results, want 1", len(out))
	}
	want := strings.Join([]string{
		"paris 99",                           // the agent's after-tool rewrite
		"oslo ToolError: Oslo is off limits", // the plugin's before-tool veto
		"convert {'rewritten_by': 'plugin', 'unit': 'F', 'value': 32}", // the plugin's after-tool rewrite
		"remember {'vetoed_by': 'agent'}",                              // the agent's before-tool veto
		"",
	}, "\n")
	if diff := cmp.Diff(want, out[0]["stdout"]); diff != "" {
		t.Errorf("stdout (-want +got):\n%s\nstderr: %s", diff, out[0]["stderr"])
	}
	// The vetoed remember call changed no state.
	resp, err := f.sessions.Get(t.Context(), &session.GetRequest{AppName: "test", UserID: "user", SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := resp.Session.State().Get("k"); err == nil {
		t.Errorf("state k = %v after a vetoed call, want unset", v)
	}
	// Each call from code got a synthetic id derived from execute_code's.
	var execID string
	for _, ev := range evs {
		for _, fc := range ev.Content.Parts {
			if fc.FunctionCall != nil {
				execID = fc.FunctionCall.ID
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	var wantSeen []string
	for i, name := range []string{"get_weather", "get_weather", "convert_temperature", "remember"} {
		wantSeen = append(wantSeen, fmt.Sprintf("%s codemode-%s-%d", name, execID, i+1))
	}
	// The plugin also sees execute_code itself, first.
	if diff := cmp.Diff(append([]string{ToolName + " " + execID}, wantSeen...), seen); diff != "" {
		t.Errorf("calls seen by the plugin (-want +got):\n%s", diff)
	}
}

func TestStateDeltaReachesSession(t *testing.T) {
	m := newScript().on("store",
		run(`from tools import remember
print(remember(key="favourite", value="tea"))`),
		say("stored"))
	f := newFixture(t, m, fixtureConfig{cfg: Config{Tools: weatherTools(t)}})
	evs := f.turn(t.Context(), "s1", "store")
	var delta map[string]any
	for _, ev := range evs {
		for _, p := range ev.Content.Parts {
			if p.FunctionResponse != nil && p.FunctionResponse.Name == ToolName {
				delta = ev.Actions.StateDelta
			}
		}
	}
	if diff := cmp.Diff(map[string]any{"favourite": "tea"}, delta); diff != "" {
		t.Errorf("execute_code event state delta (-want +got):\n%s", diff)
	}
	resp, err := f.sessions.Get(t.Context(), &session.GetRequest{AppName: "test", UserID: "user", SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := resp.Session.State().Get("favourite")
	if err != nil || got != "tea" {
		t.Errorf("session state favourite = %v, %v; want tea", got, err)
	}
}

func TestStateKeptWithinTurnOnly(t *testing.T) {
	m := newScript().
		on("first", run(`x = 41`), run(`print(x + 1)`), say("ok")).
		on("second", run(`print("x" in globals())`), say("ok"))
	f := newFixture(t, m, fixtureConfig{cfg: Config{Tools: weatherTools(t)}})
	var got []any
	for _, o := range outputs(f.turn(t.Context(), "s1", "first")) {
		got = append(got, o["stdout"])
	}
	for _, o := range outputs(f.turn(t.Context(), "s1", "second")) {
		got = append(got, o["stdout"])
	}
	if diff := cmp.Diff([]any{"", "42\n", "False\n"}, got); diff != "" {
		t.Errorf("stdout of the blocks (-want +got):\n%s", diff)
	}
}

func TestParallelCallsSerialised(t *testing.T) {
	var mu sync.Mutex
	var marks []string
	mark, err := functiontool.New(functiontool.Config{Name: "mark", Description: "Record a label."},
		func(_ agent.Context, a struct {
			Label string `json:"label"`
		}) (map[string]any, error) {
			mu.Lock()
			marks = append(marks, a.Label)
			mu.Unlock()
			return map[string]any{}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	block := func(name string) string {
		return fmt.Sprintf(`import time
from tools import mark
mark(label="start %[1]s")
time.sleep(0.3)
mark(label="end %[1]s")
print(%[1]q)`, name)
	}
	m := newScript().on("both", run(block("a"), block("b")), say("ok"))
	f := newFixture(t, m, fixtureConfig{cfg: Config{Tools: []tool.Tool{mark}}})
	out := outputs(f.turn(t.Context(), "s1", "both"))
	if len(out) != 2 {
		t.Fatalf("got %d results, want 2", len(out))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(marks) != 4 || marks[0][len("start "):] != marks[1][len("end "):] ||
		!strings.HasPrefix(marks[0], "start ") || !strings.HasPrefix(marks[1], "end ") ||
		!strings.HasPrefix(marks[2], "start ") || !strings.HasPrefix(marks[3], "end ") {
		t.Errorf("blocks interleaved: %q", marks)
	}
}

func TestConcurrentInvocationsIsolated(t *testing.T) {
	arrived := make(chan string, 2)
	release := make(chan struct{})
	meet, err := functiontool.New(functiontool.Config{Name: "meet", Description: "Wait for the other invocation."},
		func(ctx agent.Context, a struct {
			Who string `json:"who"`
		}) (map[string]any, error) {
			arrived <- a.Who
			select {
			case <-release:
				return map[string]any{"met": true}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
	if err != nil {
		t.Fatal(err)
	}
	script := func(who string) []step {
		return []step{
			run(fmt.Sprintf(`from tools import meet
secret = %q
meet(who=%q)`, who, who)),
			run(`print(secret)`),
			say("ok"),
		}
	}
	m := newScript().on("alice", script("alice")...).on("bob", script("bob")...).on("warm up", say("ok"))
	f := newFixture(t, m, fixtureConfig{cfg: Config{Tools: []tool.Tool{meet}}})
	// ADK Go v2.2's runner sets its root agent's mode, unsynchronised, on
	// its first run: one turn alone first keeps that race out of the test.
	f.turn(t.Context(), "session-warm-up", "warm up")
	go func() {
		// Both invocations hold a live sandbox at once before either goes on.
		<-arrived
		<-arrived
		close(release)
	}()
	results := make(map[string]any)
	var wg sync.WaitGroup
	var rmu sync.Mutex
	for _, who := range []string{"alice", "bob"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := outputs(f.turn(t.Context(), "session-"+who, who))
			rmu.Lock()
			results[who] = out[len(out)-1]["stdout"]
			rmu.Unlock()
		}()
	}
	wg.Wait()
	if diff := cmp.Diff(map[string]any{"alice": "alice\n", "bob": "bob\n"}, results); diff != "" {
		t.Errorf("second block's stdout per invocation (-want +got):\n%s", diff)
	}
}

func TestReleasedWhenTurnEnds(t *testing.T) {
	alive := make(chan []string, 1)
	probe, err := functiontool.New(functiontool.Config{Name: "probe", Description: "Report the sandbox processes."},
		func(agent.Context, struct{}) (map[string]any, error) {
			alive <- sandboxProcesses()
			return map[string]any{}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	m := newScript().on("go", run(`from tools import probe
probe()`), say("ok"))
	f := newFixture(t, m, fixtureConfig{cfg: Config{Tools: []tool.Tool{probe}}})
	f.turn(t.Context(), "s1", "go")
	if procs := <-alive; len(procs) == 0 {
		t.Fatalf("no sandbox process while the code ran")
	}
	if n := f.hooks.turnCount(); n != 0 {
		t.Errorf("%d turns left after the turn ended, want 0", n)
	}
	eventually(t, "no sandbox process is left", func() bool { return len(sandboxProcesses()) == 0 })
}

func TestIdleReaperClosesForgottenSession(t *testing.T) {
	m := newScript().on("go", run(`x = 1`), say("ok"))
	// Only the before-model hook: nothing ends the turn but the reaper.
	f := newFixture(t, m, fixtureConfig{cfg: Config{IdleTimeout: 200 * time.Millisecond}, noPlugin: true})
	f.turn(t.Context(), "s1", "go")
	eventually(t, "the reaper closes the turn", func() bool { return f.hooks.turnCount() == 0 })
	eventually(t, "no sandbox process is left", func() bool { return len(sandboxProcesses()) == 0 })
}

func TestCloseLeavesNoProcess(t *testing.T) {
	m := newScript().on("go", run(`x = 1`), say("ok"))
	f := newFixture(t, m, fixtureConfig{cfg: Config{IdleTimeout: time.Hour}, noPlugin: true})
	f.turn(t.Context(), "s1", "go")
	if n := f.hooks.turnCount(); n != 1 {
		t.Fatalf("%d turns before Close, want 1", n)
	}
	if len(sandboxProcesses()) == 0 {
		t.Fatalf("no sandbox process before Close")
	}
	if err := f.hooks.Close(); err != nil {
		t.Fatal(err)
	}
	if procs := sandboxProcesses(); len(procs) != 0 {
		t.Errorf("processes left after Close: %v", procs)
	}
	if n := f.hooks.turnCount(); n != 0 {
		t.Errorf("%d turns left after Close", n)
	}
	// A closed plugin refuses new code.
	_, err := f.hooks.e.tool[1].Run(fakeToolContext(t.Context()), map[string]any{"code": "print(1)"})
	if !errors.Is(err, ErrClosed) {
		t.Errorf("Run after Close: %v, want ErrClosed", err)
	}
}

func TestToolErrorsInPython(t *testing.T) {
	// A tool that asks for confirmation pauses the block (approval_test.go);
	// one that asks for an agent transfer is still refused.
	confirm, err := functiontool.New(functiontool.Config{Name: "hand_off", Description: "Hand the conversation to another agent."},
		func(ctx agent.Context, _ struct{}) (map[string]any, error) {
			ctx.Actions().TransferToAgent = "billing"
			return map[string]any{"handed": true}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	tools := append(weatherTools(t), confirm)
	m := newScript().on("go", run(`from tools import get_weather, hand_off, ToolError
for call in (lambda: get_weather(city="Atlantis"), lambda: get_weather(city=3), lambda: hand_off()):
    try:
        call()
    except ToolError as e:
        print(e.type, "|", e.message.splitlines()[0])
import tools, codemode_runtime
try:
    codemode_runtime.call("no_such_tool", {})
except ToolError as e:
    print(e.type)
`), say("ok"))
	f := newFixture(t, m, fixtureConfig{cfg: Config{Tools: tools}})
	out := outputs(f.turn(t.Context(), "s1", "go"))
	want := strings.Join([]string{
		`ToolError | unknown city "Atlantis"`,
		`ValidationError | invalid arguments for tool "get_weather":`,
		`UnsupportedToolActionError | tool "hand_off" cannot be called from code: it requested agent transfer; call it directly instead of from code`,
		`ToolNotFound`,
		"",
	}, "\n")
	if diff := cmp.Diff(want, out[0]["stdout"]); diff != "" {
		t.Errorf("stdout (-want +got):\n%s\nstderr:\n%s", diff, out[0]["stderr"])
	}
}

func TestCodeTooLong(t *testing.T) {
	h, err := newAgentHooks(Config{MaxCodeChars: 10, Backend: failingBackend{}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	got, err := h.e.tool[1].Run(fakeToolContext(t.Context()), map[string]any{"code": strings.Repeat("x", 1234)})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"stdout": "", "stderr": "Code exceeds maximum allowed length (1,234 > 10 chars).", "output_files": []string{}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
}

// recordingBackend remembers the sessions it opened, in order, and which
// of them ran code.
type recordingBackend struct {
	transport.Backend
	mu       sync.Mutex
	sessions []*recordingSession
}

type recordingSession struct {
	transport.Session
	mu   sync.Mutex
	code []string
}

func (s *recordingSession) Exec(ctx context.Context, b transport.Block) (*transport.Result, error) {
	s.mu.Lock()
	s.code = append(s.code, b.Code)
	s.mu.Unlock()
	return s.Session.Exec(ctx, b)
}

// ran reports whether the session ran a block containing substr.
func (s *recordingSession) ran(substr string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.ContainsFunc(s.code, func(c string) bool { return strings.Contains(c, substr) })
}

// Err passes the pool's liveness check through.
func (s *recordingSession) Err() error {
	if e, ok := s.Session.(interface{ Err() error }); ok {
		return e.Err()
	}
	return nil
}

func (b *recordingBackend) Open(ctx context.Context, cfg transport.SessionConfig) (transport.Session, error) {
	s, err := b.Backend.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	rs := &recordingSession{Session: s}
	b.mu.Lock()
	b.sessions = append(b.sessions, rs)
	b.mu.Unlock()
	return rs, nil
}

// TestPooledBackend runs turns in sandboxes that a warm.Pool started
// ahead: each turn gets a fresh one with its own tool calls answered, and
// nothing of the turn before.
func TestPooledBackend(t *testing.T) {
	rec := &recordingBackend{Backend: testBackend(t)}
	pool := &warm.Pool{Backend: rec, Size: 1}
	defer pool.Close()
	m := newScript().
		on("first", run(`from tools import get_weather
x = get_weather(city="Paris")["temp_c"]
print(x)`), say("ok")).
		on("second", run(`from tools import get_weather
print("x" in globals(), get_weather(city="Oslo")["city"])`), say("ok"))
	f := newFixture(t, m, fixtureConfig{cfg: Config{Tools: weatherTools(t), Backend: pool}})
	var got []any
	for _, o := range outputs(f.turn(t.Context(), "s1", "first")) {
		got = append(got, o["stdout"])
	}
	// The pool fills with this agent's tools package in the background.
	for deadline := time.Now().Add(60 * time.Second); pool.Ready() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the pool did not fill")
		}
	}
	rec.mu.Lock()
	before := len(rec.sessions)
	rec.mu.Unlock()
	for _, o := range outputs(f.turn(t.Context(), "s1", "second")) {
		got = append(got, o["stdout"])
	}
	if diff := cmp.Diff([]any{"18\n", "False Oslo\n"}, got); diff != "" {
		t.Errorf("stdout of the blocks (-want +got):\n%s", diff)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	// The second turn ran in a sandbox that was started before it began,
	// and not in the one its first turn used; no sandbox started since ran
	// anything (those are refills).
	second := slices.IndexFunc(rec.sessions, func(s *recordingSession) bool { return s.ran("Oslo") })
	if second < 0 || second >= before || rec.sessions[second].ran("Paris") {
		t.Errorf("the second turn ran in session %d of %d, opened before it: %d", second, len(rec.sessions), before)
	}
	for i, s := range rec.sessions[before:] {
		if s.ran("") {
			t.Errorf("session %d, opened after the second turn began, ran code", before+i)
		}
	}
}
