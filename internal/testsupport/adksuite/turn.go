package adksuite

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/adk-codemode/codemode/backend/warm"
	"github.com/adk-codemode/codemode/transport"
)

// turnTests are a turn's behaviours: code calls tools, the request
// carries the block, callbacks apply, state lives for the turn, blocks
// are serialised, invocations isolated and sandboxes released.
var turnTests = []test{
	{"ToolCallFromCode", testToolCallFromCode},
	{"RequestCarriesBlockAndTool", testRequestCarriesBlockAndTool},
	{"DisableBlock", testDisableBlock},
	{"CallbacksApplyToCallsFromCode", testCallbacksApplyToCallsFromCode},
	{"StateDeltaReachesSession", testStateDeltaReachesSession},
	{"StateKeptWithinTurnOnly", testStateKeptWithinTurnOnly},
	{"ParallelCallsSerialised", testParallelCallsSerialised},
	{"ConcurrentInvocationsIsolated", testConcurrentInvocationsIsolated},
	{"ReleasedWhenTurnEnds", testReleasedWhenTurnEnds},
	{"IdleReaperClosesForgottenSession", testIdleReaperClosesForgottenSession},
	{"CloseLeavesNoProcess", testCloseLeavesNoProcess},
	{"ToolErrorsInPython", testToolErrorsInPython},
	{"CodeTooLong", testCodeTooLong},
	{"PooledBackend", testPooledBackend},
}

func testToolCallFromCode(t *testing.T, l Line) {
	m := NewScript().On("weather?",
		Exec(`from tools import get_weather, convert_temperature
w = get_weather(city="Paris")
f = convert_temperature(value=w["temp_c"], unit="F")
print(w["city"], w["temp_c"], f["value"])`),
		Say("done"))
	f := start(t, l, Setup{Tools: WeatherTools(), Model: m})
	out := Outputs(f.turn("s1", "weather?"))
	want := []map[string]any{{"stdout": "Paris 18 64.4\n", "stderr": "", "output_files": []string{}}}
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("execute_code results (-want +got):\n%s", diff)
	}
}

// SystemText is the text of a request's system instruction.
func SystemText(req Request) string {
	var si strings.Builder
	if req.Config != nil && req.Config.SystemInstruction != nil {
		for _, p := range req.Config.SystemInstruction.Parts {
			si.WriteString(p.Text)
		}
	}
	return si.String()
}

// Declared are the names of the functions a request declares.
func Declared(req Request) []string {
	var out []string
	if req.Config == nil {
		return nil
	}
	for _, gt := range req.Config.Tools {
		for _, d := range gt.FunctionDeclarations {
			out = append(out, d.Name)
		}
	}
	return out
}

func testRequestCarriesBlockAndTool(t *testing.T, l Line) {
	m := NewScript().On("hi", Say("hello"))
	f := start(t, l, Setup{Tools: WeatherTools(), Model: m})
	f.turn("s1", "hi")
	reqs := m.Requests()
	if len(reqs) != 1 {
		t.Fatalf("got %d model requests, want 1", len(reqs))
	}
	req := reqs[0]
	if !slices.Contains(req.Runnable, ToolName) || !req.CodeTool {
		t.Errorf("request tools: %v (the plugin's code tool: %v), want the plugin's execute_code runnable", req.Runnable, req.CodeTool)
	}
	if diff := cmp.Diff([]string{ToolName}, Declared(req)); diff != "" {
		t.Errorf("declared tools (-want +got):\n%s", diff)
	}
	text := SystemText(req)
	for _, want := range []string{"You are a helpful assistant.", "<code-mode>", "<python-version>", "def get_weather(", "def convert_temperature(", "</code-mode>"} {
		if !strings.Contains(text, want) {
			t.Errorf("system instruction lacks %q:\n%s", want, text)
		}
	}
}

func testDisableBlock(t *testing.T, l Line) {
	m := NewScript().On("hi", Say("hello"))
	f := start(t, l, Setup{Tools: WeatherTools(), Model: m, Config: Config{DisableBlock: true}})
	f.turn("s1", "hi")
	req := m.Requests()[0]
	if text := SystemText(req); strings.Contains(text, "<code-mode>") {
		t.Errorf("the block is in the system instruction with DisableBlock set:\n%s", text)
	}
	d := req.Config.Tools[0].FunctionDeclarations[0]
	for _, want := range []string{"list the modules", "from tools import search, describe"} {
		if !strings.Contains(d.Description, want) {
			t.Errorf("execute_code description does not tell how to discover the tools (no %q): %q", want, d.Description)
		}
	}
}

func testCallbacksApplyToCallsFromCode(t *testing.T, l Line) {
	var mu sync.Mutex
	var seen []string // function call ids seen by the plugin
	cb := Callbacks{
		PluginBefore: func(c Call, tool string, args map[string]any) (map[string]any, error) {
			mu.Lock()
			seen = append(seen, tool+" "+c.FunctionCallID())
			mu.Unlock()
			if tool == "get_weather" && args["city"] == "Oslo" {
				return nil, errors.New("Oslo is off limits")
			}
			return nil, nil
		},
		PluginAfter: func(_ Call, tool string, _, result map[string]any, err error) (map[string]any, error) {
			if tool == "convert_temperature" && err == nil {
				return map[string]any{"value": result["value"], "unit": "F", "rewritten_by": "plugin"}, nil
			}
			return nil, nil
		},
		AgentBefore: func(_ Call, tool string, _ map[string]any) (map[string]any, error) {
			if tool == "remember" {
				return map[string]any{"vetoed_by": "agent"}, nil
			}
			return nil, nil
		},
		AgentAfter: func(_ Call, tool string, _, result map[string]any, err error) (map[string]any, error) {
			if tool == "get_weather" && err == nil {
				result["temp_c"] = 99.0
				return result, nil
			}
			return nil, nil
		},
	}
	m := NewScript().On("go",
		Exec(`from tools import get_weather, convert_temperature, remember, ToolError
print("paris", get_weather(city="Paris")["temp_c"])
try:
    get_weather(city="Oslo")
except ToolError as e:
    print("oslo", e)
print("convert", convert_temperature(value=0, unit="F"))
print("remember", remember(key="k", value="v"))`),
		Say("done"))
	f := start(t, l, Setup{Tools: WeatherTools(), Model: m, Callbacks: cb})
	evs := f.turn("s1", "go")
	out := Outputs(evs)
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
	if v, ok := f.state("s1", "k"); ok {
		t.Errorf("state k = %v after a vetoed call, want unset", v)
	}
	// Each call from code got a synthetic id derived from execute_code's.
	var execID string
	for _, ev := range evs {
		for _, p := range ev.Content.Parts {
			if p.FunctionCall != nil {
				execID = p.FunctionCall.ID
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

func testStateDeltaReachesSession(t *testing.T, l Line) {
	m := NewScript().On("store",
		Exec(`from tools import remember
print(remember(key="favourite", value="tea"))`),
		Say("stored"))
	f := start(t, l, Setup{Tools: WeatherTools(), Model: m})
	evs := f.turn("s1", "store")
	var delta map[string]any
	for _, ev := range evs {
		for _, p := range ev.Content.Parts {
			if p.FunctionResponse != nil && p.FunctionResponse.Name == ToolName {
				delta = ev.StateDelta
			}
		}
	}
	if diff := cmp.Diff(map[string]any{"favourite": "tea"}, delta); diff != "" {
		t.Errorf("execute_code event state delta (-want +got):\n%s", diff)
	}
	if got, ok := f.state("s1", "favourite"); !ok || got != "tea" {
		t.Errorf("session state favourite = %v (set %v); want tea", got, ok)
	}
}

func testStateKeptWithinTurnOnly(t *testing.T, l Line) {
	m := NewScript().
		On("first", Exec(`x = 41`), Exec(`print(x + 1)`), Say("ok")).
		On("second", Exec(`print("x" in globals())`), Say("ok"))
	f := start(t, l, Setup{Tools: WeatherTools(), Model: m})
	var got []any
	for _, o := range Outputs(f.turn("s1", "first")) {
		got = append(got, o["stdout"])
	}
	for _, o := range Outputs(f.turn("s1", "second")) {
		got = append(got, o["stdout"])
	}
	if diff := cmp.Diff([]any{"", "42\n", "False\n"}, got); diff != "" {
		t.Errorf("stdout of the blocks (-want +got):\n%s", diff)
	}
}

func testParallelCallsSerialised(t *testing.T, l Line) {
	var mu sync.Mutex
	var marks []string
	mark := Tool{
		Name: "mark", Description: "Record a label.",
		Params: object(map[string]*jsonschema.Schema{"label": str("")}),
		Run: func(_ Call, a map[string]any) (map[string]any, error) {
			mu.Lock()
			marks = append(marks, a["label"].(string))
			mu.Unlock()
			return map[string]any{}, nil
		},
	}
	block := func(name string) string {
		return fmt.Sprintf(`import time
from tools import mark
mark(label="start %[1]s")
time.sleep(0.3)
mark(label="end %[1]s")
print(%[1]q)`, name)
	}
	m := NewScript().On("both", Exec(block("a"), block("b")), Say("ok"))
	f := start(t, l, Setup{Tools: []Tool{mark}, Model: m})
	out := Outputs(f.turn("s1", "both"))
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

func testConcurrentInvocationsIsolated(t *testing.T, l Line) {
	arrived := make(chan string, 2)
	release := make(chan struct{})
	meet := Tool{
		Name: "meet", Description: "Wait for the other invocation.",
		Params: object(map[string]*jsonschema.Schema{"who": str("")}),
		Run: func(c Call, a map[string]any) (map[string]any, error) {
			arrived <- a["who"].(string)
			select {
			case <-release:
				return map[string]any{"met": true}, nil
			case <-c.Done():
				return nil, c.Err()
			}
		},
	}
	script := func(who string) []Step {
		return []Step{
			Exec(fmt.Sprintf(`from tools import meet
secret = %q
meet(who=%q)`, who, who)),
			Exec(`print(secret)`),
			Say("ok"),
		}
	}
	m := NewScript().On("alice", script("alice")...).On("bob", script("bob")...).On("warm up", Say("ok"))
	f := start(t, l, Setup{Tools: []Tool{meet}, Model: m})
	// ADK Go v2.2's runner sets its root agent's mode, unsynchronised, on
	// its first run: one turn alone first keeps that race out of the test.
	f.turn("session-warm-up", "warm up")
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
		wg.Go(func() {
			out := Outputs(f.turn("session-"+who, who))
			rmu.Lock()
			results[who] = out[len(out)-1]["stdout"]
			rmu.Unlock()
		})
	}
	wg.Wait()
	if diff := cmp.Diff(map[string]any{"alice": "alice\n", "bob": "bob\n"}, results); diff != "" {
		t.Errorf("second block's stdout per invocation (-want +got):\n%s", diff)
	}
}

func testReleasedWhenTurnEnds(t *testing.T, l Line) {
	alive := make(chan []string, 1)
	probe := Tool{
		Name: "probe", Description: "Report the sandbox processes.",
		Run: func(Call, map[string]any) (map[string]any, error) {
			alive <- SandboxProcesses()
			return map[string]any{}, nil
		},
	}
	m := NewScript().On("go", Exec(`from tools import probe
probe()`), Say("ok"))
	f := start(t, l, Setup{Tools: []Tool{probe}, Model: m})
	f.turn("s1", "go")
	select {
	case procs := <-alive:
		if len(procs) == 0 {
			t.Fatalf("no sandbox process while the code ran")
		}
	default:
		t.Fatal("the probe never ran")
	}
	if n := f.OpenTurns(); n != 0 {
		t.Errorf("%d turns left after the turn ended, want 0", n)
	}
	Eventually(t, "no sandbox process is left", func() bool { return len(SandboxProcesses()) == 0 })
}

func testIdleReaperClosesForgottenSession(t *testing.T, l Line) {
	m := NewScript().On("go", Exec(`x = 1`), Say("ok"))
	// Only the before-model hook: nothing ends the turn but the reaper.
	f := start(t, l, Setup{Model: m, NoPlugin: true, Config: Config{IdleTimeout: 200 * time.Millisecond}})
	f.turn("s1", "go")
	Eventually(t, "the reaper closes the turn", func() bool { return f.OpenTurns() == 0 })
	Eventually(t, "no sandbox process is left", func() bool { return len(SandboxProcesses()) == 0 })
}

func testCloseLeavesNoProcess(t *testing.T, l Line) {
	m := NewScript().On("go", Exec(`x = 1`), Say("ok"))
	f := start(t, l, Setup{Model: m, NoPlugin: true, Config: Config{IdleTimeout: time.Hour}})
	f.turn("s1", "go")
	if n := f.OpenTurns(); n != 1 {
		t.Fatalf("%d turns before Close, want 1", n)
	}
	if len(SandboxProcesses()) == 0 {
		t.Fatalf("no sandbox process before Close")
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if procs := SandboxProcesses(); len(procs) != 0 {
		t.Errorf("processes left after Close: %v", procs)
	}
	if n := f.OpenTurns(); n != 0 {
		t.Errorf("%d turns left after Close", n)
	}
}

func testToolErrorsInPython(t *testing.T, l Line) {
	// A tool that asks for confirmation pauses the block (approval.go);
	// one that asks for an agent transfer is still refused.
	handOff := Tool{
		Name: "hand_off", Description: "Hand the conversation to another agent.",
		Run: func(c Call, _ map[string]any) (map[string]any, error) {
			c.TransferTo("billing")
			return map[string]any{"handed": true}, nil
		},
	}
	m := NewScript().On("go", Exec(`from tools import get_weather, hand_off, ToolError
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
`), Say("ok"))
	f := start(t, l, Setup{Tools: append(WeatherTools(), handOff), Model: m})
	out := Outputs(f.turn("s1", "go"))
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

func testCodeTooLong(t *testing.T, l Line) {
	m := NewScript().On("go", Exec(strings.Repeat("x", 1234)), Say("ok"))
	// No sandbox runs: the code is refused before one is opened.
	f := start(t, l, Setup{Model: m, Config: Config{MaxCodeChars: 10, Backend: &cannedBackend{}}})
	out := Outputs(f.turn("s1", "go"))
	want := []map[string]any{{"stdout": "", "stderr": "Code exceeds maximum allowed length (1,234 > 10 chars).", "output_files": []string{}}}
	if diff := cmp.Diff(want, out); diff != "" {
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

// testPooledBackend runs turns in sandboxes that a warm.Pool started
// ahead: each turn gets a fresh one with its own tool calls answered, and
// nothing of the turn before.
func testPooledBackend(t *testing.T, l Line) {
	rec := &recordingBackend{Backend: Backend(t)}
	pool := &warm.Pool{Backend: rec, Size: 1}
	defer func() { _ = pool.Close() }()
	m := NewScript().
		On("first", Exec(`from tools import get_weather
x = get_weather(city="Paris")["temp_c"]
print(x)`), Say("ok")).
		On("second", Exec(`from tools import get_weather
print("x" in globals(), get_weather(city="Oslo")["city"])`), Say("ok"))
	f := start(t, l, Setup{Tools: WeatherTools(), Model: m, Config: Config{Backend: pool}})
	var got []any
	for _, o := range Outputs(f.turn("s1", "first")) {
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
	for _, o := range Outputs(f.turn("s1", "second")) {
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
