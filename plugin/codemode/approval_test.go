package codemode

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	eng "github.com/adk-codemode/codemode/internal/host/engine"

	"google.golang.org/genai"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/artifact"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/adk/v2/tool/toolconfirmation"
)

// approvalModel runs the code given for each user message, and after an
// execute_code result replies with a text that quotes its stdout.
type approvalModel struct {
	mu    sync.Mutex
	code  map[string]string
	calls int
}

func (m *approvalModel) Name() string { return "approval-script" }

func (m *approvalModel) GenerateContent(_ context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		m.mu.Lock()
		m.calls++
		m.mu.Unlock()
		if len(req.Contents) == 0 {
			yield(nil, fmt.Errorf("approval model: empty request"))
			return
		}
		last := req.Contents[len(req.Contents)-1]
		for _, p := range last.Parts {
			if p.FunctionResponse != nil {
				stdout, _ := p.FunctionResponse.Response["stdout"].(string)
				yield(&model.LLMResponse{Content: genai.NewContentFromText("seen: "+stdout, genai.RoleModel), TurnComplete: true}, nil)
				return
			}
			if p.Text != "" {
				code, ok := m.code[p.Text]
				if !ok {
					yield(nil, fmt.Errorf("approval model: no code for %q", p.Text))
					return
				}
				yield(&model.LLMResponse{Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{
					Name: ToolName, Args: map[string]any{"code": code},
				}}}}, TurnComplete: true}, nil)
				return
			}
		}
		yield(nil, fmt.Errorf("approval model: nothing to answer"))
	}
}

// sideEffects counts what the tools did, by label.
type sideEffects struct {
	mu sync.Mutex
	n  map[string]int
	// confirmed lists the invocations in which a before-tool callback saw
	// a call carrying an approval.
	confirmed []string
}

func (s *sideEffects) add(label string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n[label]++
}

func (s *sideEffects) count(label string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[label]
}

// approvalTools are record (a plain side effect), delete_file (always
// needs confirmation) and send_money (asks through ctx.RequestConfirmation
// with a payload).
func approvalTools(t *testing.T, fx *sideEffects) []tool.Tool {
	t.Helper()
	record, err := functiontool.New(functiontool.Config{Name: "record", Description: "Record a label."},
		func(_ agent.Context, a struct {
			Label string `json:"label"`
		}) (map[string]any, error) {
			fx.add(a.Label)
			return map[string]any{"recorded": a.Label}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	del, err := functiontool.New(functiontool.Config{Name: "delete_file", Description: "Delete a file.", RequireConfirmation: true},
		func(ctx agent.Context, a struct {
			Path string `json:"path"`
		}) (map[string]any, error) {
			fx.add("delete:" + a.Path)
			if err := ctx.State().Set("deleted_"+a.Path, true); err != nil {
				return nil, err
			}
			return map[string]any{"deleted": a.Path}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	send, err := functiontool.New(functiontool.Config{Name: "send_money", Description: "Send money."},
		func(ctx agent.Context, a struct {
			Amount int `json:"amount"`
		}) (map[string]any, error) {
			if ctx.ToolConfirmation() == nil {
				return nil, ctx.RequestConfirmation(fmt.Sprintf("Send %d euros?", a.Amount), map[string]any{"amount": a.Amount})
			}
			fx.add(fmt.Sprintf("send:%d", a.Amount))
			return map[string]any{"sent": a.Amount}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return []tool.Tool{record, del, send}
}

func newApprovalFixture(t *testing.T, fx *sideEffects, code map[string]string, cfg Config, svc session.Service) *fixture {
	t.Helper()
	return newApprovalFixtureWith(t, fx, code, cfg, fixtureConfig{sessions: svc})
}

func newApprovalFixtureWith(t *testing.T, fx *sideEffects, code map[string]string, cfg Config, fc fixtureConfig) *fixture {
	t.Helper()
	cfg.Tools = approvalTools(t, fx)
	before := func(ctx agent.Context, tl tool.Tool, _ map[string]any) (map[string]any, error) {
		if ctx.ToolConfirmation() != nil {
			fx.mu.Lock()
			fx.confirmed = append(fx.confirmed, tl.Name()+"@"+ctx.InvocationID())
			fx.mu.Unlock()
		}
		return nil, nil
	}
	fc.cfg, fc.model = cfg, &approvalModel{code: code}
	fc.agent.BeforeToolCallbacks = append(fc.agent.BeforeToolCallbacks, before)
	return newFixture(t, nil, fc)
}

// confirmationRequest is an adk_request_confirmation call among events.
type confirmationCall struct {
	id         string
	invocation string
	original   *genai.FunctionCall
	conf       toolconfirmation.ToolConfirmation
}

func confirmationCalls(t *testing.T, evs []*session.Event) []confirmationCall {
	t.Helper()
	var out []confirmationCall
	for _, ev := range evs {
		if ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			fc := p.FunctionCall
			if fc == nil || fc.Name != toolconfirmation.FunctionCallName {
				continue
			}
			orig, err := toolconfirmation.OriginalCallFrom(fc)
			if err != nil {
				t.Fatalf("confirmation request without its original call: %v", err)
			}
			var conf toolconfirmation.ToolConfirmation
			b, err := json.Marshal(fc.Args["toolConfirmation"])
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &conf); err != nil {
				t.Fatalf("toolConfirmation %s: %v", b, err)
			}
			out = append(out, confirmationCall{id: fc.ID, invocation: ev.InvocationID, original: orig, conf: conf})
		}
	}
	return out
}

// onlyConfirmation returns the one confirmation request among events.
func onlyConfirmation(t *testing.T, evs []*session.Event) confirmationCall {
	t.Helper()
	cs := confirmationCalls(t, evs)
	if len(cs) != 1 {
		t.Fatalf("%d confirmation requests, want 1; events:\n%s", len(cs), describeEvents(evs))
	}
	return cs[0]
}

// answer sends the person's answer to a confirmation request.
func (f *fixture) answer(ctx context.Context, sid string, c confirmationCall, confirmed bool) []*session.Event {
	f.t.Helper()
	msg := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
		ID: c.id, Name: toolconfirmation.FunctionCallName, Response: map[string]any{"confirmed": confirmed},
	}}}}
	var evs []*session.Event
	for ev, err := range f.runner.Run(ctx, "user", sid, msg, agent.RunConfig{}) {
		if err != nil {
			f.t.Fatalf("answer %s: %v", c.id, err)
		}
		evs = append(evs, ev)
	}
	return evs
}

func describeEvents(evs []*session.Event) string {
	var sb strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&sb, "- %s:", ev.Author)
		if ev.Content != nil {
			for _, p := range ev.Content.Parts {
				switch {
				case p.FunctionCall != nil:
					fmt.Fprintf(&sb, " call %s(%s)", p.FunctionCall.Name, p.FunctionCall.ID)
				case p.FunctionResponse != nil:
					b, _ := json.Marshal(p.FunctionResponse.Response)
					fmt.Fprintf(&sb, " response %s(%s) %s", p.FunctionResponse.Name, p.FunctionResponse.ID, b)
				case p.Text != "":
					fmt.Fprintf(&sb, " text %q", p.Text)
				}
			}
		}
		sb.WriteByte('\n')
	}
	return sb.String()
}

// lastOutput is the last execute_code result among events.
func lastOutput(t *testing.T, evs []*session.Event) map[string]any {
	t.Helper()
	outs := outputs(evs)
	if len(outs) == 0 {
		t.Fatalf("no execute_code result; events:\n%s", describeEvents(evs))
	}
	return outs[len(outs)-1]
}

func finalText(evs []*session.Event) string {
	for i := len(evs) - 1; i >= 0; i-- {
		if c := evs[i].Content; c != nil && c.Role == genai.RoleModel {
			for _, p := range c.Parts {
				if p.Text != "" {
					return p.Text
				}
			}
		}
	}
	return ""
}

const approveCode = `from tools import record, send_money
record(label="before")
x = 41
r = send_money(amount=5)
x += 1
print("after", x, r)
record(label="after")
`

func TestApprovalApprove(t *testing.T) {
	fx := &sideEffects{n: map[string]int{}}
	f := newApprovalFixture(t, fx, map[string]string{"pay": approveCode}, Config{}, nil)
	ctx := t.Context()
	evs := f.turn(ctx, "s1", "pay")
	c := onlyConfirmation(t, evs)
	// The request is ADK's own, for the execute_code call: the hint and
	// payload are the inner tool's.
	if c.original.Name != ToolName || c.original.Args["code"] != approveCode {
		t.Errorf("original call %s(%v), want execute_code with the code", c.original.Name, c.original.Args)
	}
	var execID string
	for _, ev := range evs {
		for _, fc := range functionCalls(ev) {
			if fc.Name == ToolName {
				execID = fc.ID
			}
		}
	}
	if c.original.ID != execID || execID == "" {
		t.Errorf("original call id %q, want the execute_code call's %q", c.original.ID, execID)
	}
	// The tool's payload is its own, so the block's code is at the end
	// of the hint.
	wantHint := fmt.Sprintf("The code of execute_code call %s calls the tool send_money with {\"amount\":5}. Send 5 euros?\n\nThe block's code:\n%s", execID, approveCode)
	if c.conf.Hint != wantHint || fmt.Sprint(c.conf.Payload) != "map[amount:5]" || c.conf.Confirmed {
		t.Errorf("toolConfirmation %+v, want the hint %q and the tool's payload, unconfirmed", c.conf, wantHint)
	}
	paused := lastOutput(t, evs)
	if aw, _ := paused["awaiting_approval"].(map[string]any); aw["tool"] != "send_money" {
		t.Errorf("paused result %v, want it to name send_money", paused)
	}
	if fx.count("before") != 1 || fx.count("send:5") != 0 {
		t.Fatalf("before the answer: %v", fx.n)
	}
	if len(sandboxProcesses()) == 0 {
		t.Fatal("the paused block's sandbox was closed at the end of the invocation")
	}

	evs = f.answer(ctx, "s1", c, true)
	out := lastOutput(t, evs)
	if got, want := out["stdout"], "after 42 {'sent': 5}\n"; got != want {
		t.Errorf("stdout %q, want %q; stderr %q", got, want, out["stderr"])
	}
	if got := finalText(evs); got != "seen: after 42 {'sent': 5}\n" {
		t.Errorf("the model's reply %q, want it to have seen the block's output", got)
	}
	for _, label := range []string{"before", "send:5", "after"} {
		if n := fx.count(label); n != 1 {
			t.Errorf("%s ran %d times, want once", label, n)
		}
	}
	// The approved call went through the agent's callbacks, in the
	// invocation that carried the answer.
	if len(fx.confirmed) != 1 || fx.confirmed[0] != "send_money@"+evs[0].InvocationID {
		t.Errorf("approved calls seen by the before-tool callback: %v, want send_money in invocation %s", fx.confirmed, evs[0].InvocationID)
	}
	eventually(t, "the sandbox closes after the resumed invocation", func() bool { return len(sandboxProcesses()) == 0 })
}

func functionCalls(ev *session.Event) []*genai.FunctionCall {
	var out []*genai.FunctionCall
	if ev.Content == nil {
		return nil
	}
	for _, p := range ev.Content.Parts {
		if p.FunctionCall != nil {
			out = append(out, p.FunctionCall)
		}
	}
	return out
}

func TestApprovalDeny(t *testing.T) {
	fx := &sideEffects{n: map[string]int{}}
	code := `from tools import record, delete_file, ToolDeniedError, ToolError
record(label="before")
try:
    delete_file(path="a.txt")
except ToolDeniedError as e:
    print("denied", isinstance(e, ToolError), e.type)
record(label="after")
`
	f := newApprovalFixture(t, fx, map[string]string{"rm": code}, Config{}, nil)
	ctx := t.Context()
	c := onlyConfirmation(t, f.turn(ctx, "s1", "rm"))
	if !strings.Contains(c.conf.Hint, `calls the tool delete_file with {"path":"a.txt"}`) || !strings.Contains(c.conf.Hint, "approve or reject the tool call delete_file()") {
		t.Errorf("hint %q, want ours, naming the call from code, then functiontool's", c.conf.Hint)
	}
	// functiontool asks with no payload: the request carries the call's
	// facts instead.
	if p, _ := c.conf.Payload.(map[string]any); p["tool"] != "delete_file" || fmt.Sprint(p["args"]) != "map[path:a.txt]" || p["execute_code_call"] != c.original.ID ||
		p["code"] != code || p["code_truncated"] != nil {
		t.Errorf("payload %#v, want the tool, its arguments, the execute_code call %s and the block's code", c.conf.Payload, c.original.ID)
	}
	if strings.Contains(c.conf.Hint, "The block's code") {
		t.Errorf("hint %q repeats the code that the payload carries", c.conf.Hint)
	}
	out := lastOutput(t, f.answer(ctx, "s1", c, false))
	if got, want := out["stdout"], "denied True ToolDeniedError\n"; got != want {
		t.Errorf("stdout %q, want %q; stderr %q", got, want, out["stderr"])
	}
	if fx.count("delete:a.txt") != 0 || fx.count("before") != 1 || fx.count("after") != 1 {
		t.Errorf("side effects %v, want before and after once and no delete", fx.n)
	}
}

func TestApprovalTwoInOneBlockKeepsState(t *testing.T) {
	fx := &sideEffects{n: map[string]int{}}
	code := `from tools import record, delete_file
record(label="before")
done = []
for p in ("a", "b"):
    done.append(delete_file(path=p)["deleted"])
print("deleted", done)
`
	f := newApprovalFixture(t, fx, map[string]string{"rm": code}, Config{}, nil)
	ctx := t.Context()
	first := onlyConfirmation(t, f.turn(ctx, "s1", "rm"))
	evs := f.answer(ctx, "s1", first, true)
	second := onlyConfirmation(t, evs)
	if second.original.Name != ToolName || second.original.ID == first.original.ID {
		t.Errorf("second request's original call %s(%s), want a new execute_code call", second.original.Name, second.original.ID)
	}
	if fx.count("delete:a") != 1 || fx.count("delete:b") != 0 {
		t.Fatalf("after the first answer: %v", fx.n)
	}
	evs = f.answer(ctx, "s1", second, true)
	out := lastOutput(t, evs)
	if got, want := out["stdout"], "deleted ['a', 'b']\n"; got != want {
		t.Errorf("stdout %q, want %q; stderr %q", got, want, out["stderr"])
	}
	for _, label := range []string{"before", "delete:a", "delete:b"} {
		if n := fx.count(label); n != 1 {
			t.Errorf("%s ran %d times, want once", label, n)
		}
	}
	// The state the tools set landed in the session.
	resp, err := f.sessions.Get(ctx, &session.GetRequest{AppName: "test", UserID: "user", SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"deleted_a", "deleted_b"} {
		if v, err := resp.Session.State().Get(k); err != nil || v != true {
			t.Errorf("state %s = %v (%v), want true", k, v, err)
		}
	}
}

func TestApprovalThreadsQueued(t *testing.T) {
	fx := &sideEffects{n: map[string]int{}}
	code := `from concurrent.futures import ThreadPoolExecutor
from tools import delete_file
with ThreadPoolExecutor(2) as pool:
    got = sorted(pool.map(lambda p: delete_file(path=p)["deleted"], ["a", "b"]))
print("deleted", got)
`
	f := newApprovalFixture(t, fx, map[string]string{"rm": code}, Config{}, nil)
	ctx := t.Context()
	c := onlyConfirmation(t, f.turn(ctx, "s1", "rm"))
	evs := f.answer(ctx, "s1", c, true)
	c = onlyConfirmation(t, evs)
	if fx.count("delete:a")+fx.count("delete:b") != 1 {
		t.Fatalf("after the first answer: %v, want one delete", fx.n)
	}
	out := lastOutput(t, f.answer(ctx, "s1", c, true))
	if got, want := out["stdout"], "deleted ['a', 'b']\n"; got != want {
		t.Errorf("stdout %q, want %q; stderr %q", got, want, out["stderr"])
	}
	if fx.count("delete:a") != 1 || fx.count("delete:b") != 1 {
		t.Errorf("side effects %v, want each delete once", fx.n)
	}
}

func TestApprovalExpires(t *testing.T) {
	fx := &sideEffects{n: map[string]int{}}
	code := map[string]string{
		"rm":    "from tools import record, delete_file\nrecord(label='before')\ndelete_file(path='a')\n",
		"again": "print('next')",
	}
	f := newApprovalFixture(t, fx, code, Config{ApprovalTimeout: 200 * time.Millisecond}, nil)
	ctx := t.Context()
	c := onlyConfirmation(t, f.turn(ctx, "s1", "rm"))
	eventually(t, "the expired block's sandbox closes", func() bool { return len(sandboxProcesses()) == 0 })
	// The model hears of it on its next call in the session.
	out := lastOutput(t, f.turn(ctx, "s1", "again"))
	if stderr, _ := out["stderr"].(string); out["stdout"] != "next\n" || !strings.Contains(stderr, "no answer came within 0.2s") || !strings.Contains(stderr, "delete_file was not run") {
		t.Errorf("next call's result %v, want its output and a note on the expired block", out)
	}
	// A late answer resumes nothing and says so.
	out = lastOutput(t, f.answer(ctx, "s1", c, true))
	if stderr, _ := out["stderr"].(string); !strings.Contains(stderr, "no longer holds that code") {
		t.Errorf("late answer's result %v, want it to say the code is gone", out)
	}
	if fx.count("delete:a") != 0 || fx.count("before") != 1 {
		t.Errorf("side effects %v", fx.n)
	}
}

func TestApprovalTwoSessions(t *testing.T) {
	fx := &sideEffects{n: map[string]int{}}
	code := map[string]string{
		"a": "from tools import delete_file\nwho = 'a'\ntry:\n    delete_file(path=who)\n    print(who, 'deleted')\nexcept Exception as e:\n    print(who, type(e).__name__)\n",
		"b": "from tools import delete_file\nwho = 'b'\ntry:\n    delete_file(path=who)\n    print(who, 'deleted')\nexcept Exception as e:\n    print(who, type(e).__name__)\n",
	}
	f := newApprovalFixture(t, fx, code, Config{}, nil)
	ctx := t.Context()
	ca := onlyConfirmation(t, f.turn(ctx, "s1", "a"))
	cb := onlyConfirmation(t, f.turn(ctx, "s2", "b"))
	outB := lastOutput(t, f.answer(ctx, "s2", cb, false))
	outA := lastOutput(t, f.answer(ctx, "s1", ca, true))
	if outA["stdout"] != "a deleted\n" || outB["stdout"] != "b ToolDeniedError\n" {
		t.Errorf("outputs %q and %q, want a approved and b denied", outA["stdout"], outB["stdout"])
	}
	if fx.count("delete:a") != 1 || fx.count("delete:b") != 0 {
		t.Errorf("side effects %v", fx.n)
	}
}

func TestApprovalLostOnRestart(t *testing.T) {
	fx := &sideEffects{n: map[string]int{}}
	code := map[string]string{"rm": "from tools import record, delete_file\nrecord(label='before')\ndelete_file(path='a')\n"}
	svc := session.InMemoryService()
	f := newApprovalFixture(t, fx, code, Config{}, svc)
	ctx := t.Context()
	c := onlyConfirmation(t, f.turn(ctx, "s1", "rm"))
	if err := f.hooks.Close(); err != nil {
		t.Fatal(err)
	}
	if procs := sandboxProcesses(); len(procs) != 0 {
		t.Errorf("processes left after Close: %v", procs)
	}
	// The host comes back with a new plugin over the same sessions.
	g := newApprovalFixture(t, fx, code, Config{}, svc)
	out := lastOutput(t, g.answer(ctx, "s1", c, true))
	stderr, _ := out["stderr"].(string)
	if !strings.Contains(stderr, "no longer holds that code") || !strings.Contains(stderr, "was not run") {
		t.Errorf("result %v, want it to say the paused code is gone", out)
	}
	if fx.count("delete:a") != 0 || fx.count("before") != 1 {
		t.Errorf("side effects %v, want nothing run again and no delete", fx.n)
	}
}

// The time a block waits for approval does not count against its timeout.
func TestApprovalWaitIsNotRunTime(t *testing.T) {
	fx := &sideEffects{n: map[string]int{}}
	code := map[string]string{"rm": "from tools import delete_file\ndelete_file(path='a')\nprint('done')\n"}
	f := newApprovalFixture(t, fx, code, Config{Timeout: 3 * time.Second}, nil)
	ctx := t.Context()
	c := onlyConfirmation(t, f.turn(ctx, "s1", "rm"))
	// Longer than the timeout: a clock that ran while the block waited
	// would stop it.
	time.Sleep(3500 * time.Millisecond)
	out := lastOutput(t, f.answer(ctx, "s1", c, true))
	if out["stdout"] != "done\n" {
		t.Errorf("result %v, want the block to finish", out)
	}
}

// A tool that asks for confirmation together with an escalation is still
// refused, with the reason, and the block does not pause.
func TestApprovalRefusesEscalation(t *testing.T) {
	fx := &sideEffects{n: map[string]int{}}
	esc, err := functiontool.New(functiontool.Config{Name: "escalate", Description: "Escalate."},
		func(ctx agent.Context, _ struct{}) (map[string]any, error) {
			ctx.Actions().Escalate = true
			return nil, ctx.RequestConfirmation("Escalate?", nil)
		})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Tools: append(approvalTools(t, fx), esc)}
	code := "from tools import escalate, ToolError\ntry:\n    escalate()\nexcept ToolError as e:\n    print(e.type, '|', e.message)\n"
	f := newFixture(t, nil, fixtureConfig{cfg: cfg, model: &approvalModel{code: map[string]string{"go": code}}})
	evs := f.turn(t.Context(), "s1", "go")
	if cs := confirmationCalls(t, evs); len(cs) != 0 {
		t.Errorf("%d confirmation requests, want none", len(cs))
	}
	want := `UnsupportedToolActionError | tool "escalate" cannot be called from code: it requested escalation; call it directly instead of from code` + "\n"
	if got := lastOutput(t, evs)["stdout"]; got != want {
		t.Errorf("stdout %q, want %q", got, want)
	}
}

// Without the plugin, the hooks on the agent (hookSet.OnToolError among
// them) resume a paused block the same way, through two requests.
func TestApprovalWithoutPlugin(t *testing.T) {
	fx := &sideEffects{n: map[string]int{}}
	code := map[string]string{"rm": "from tools import delete_file\nn = 0\nfor p in ('a', 'b'):\n    delete_file(path=p)\n    n += 1\nprint('deleted', n)\n"}
	f := newApprovalFixtureWith(t, fx, code, Config{}, fixtureConfig{noPlugin: true})
	ctx := t.Context()
	c := onlyConfirmation(t, f.turn(ctx, "s1", "rm"))
	c = onlyConfirmation(t, f.answer(ctx, "s1", c, true))
	out := lastOutput(t, f.answer(ctx, "s1", c, true))
	if out["stdout"] != "deleted 2\n" || fx.count("delete:a") != 1 || fx.count("delete:b") != 1 {
		t.Errorf("result %v, side effects %v", out, fx.n)
	}
}

// A tool call another thread makes while the block is paused waits for
// the block to resume, then runs once.
func TestApprovalCallDuringPauseWaits(t *testing.T) {
	fx := &sideEffects{n: map[string]int{}}
	code := `import threading, time
from tools import record, delete_file
res = {}
th = threading.Thread(target=lambda: res.update(d=delete_file(path="a")))
th.start()
time.sleep(0.3)
print(record(label="during"))
th.join()
print(res)
`
	f := newApprovalFixture(t, fx, map[string]string{"go": code}, Config{}, nil)
	ctx := t.Context()
	c := onlyConfirmation(t, f.turn(ctx, "s1", "go"))
	// Answer after the main thread's call has most likely arrived; on a
	// slow machine it may come before the pause or after the answer,
	// which the assertions below accept as well.
	time.Sleep(time.Second)
	out := lastOutput(t, f.answer(ctx, "s1", c, true))
	if got, want := out["stdout"], "{'recorded': 'during'}\n{'d': {'deleted': 'a'}}\n"; got != want {
		t.Errorf("stdout %q, want %q; stderr %q", got, want, out["stderr"])
	}
	if fx.count("during") != 1 || fx.count("delete:a") != 1 {
		t.Errorf("side effects %v, want each once", fx.n)
	}
}

// TestApprovalCallIDsNeverRepeat: the tool calls of a block that pauses
// twice for approval, resuming first under the execute_code call ADK runs
// again and then under one the plugin makes for the second request, each
// get an id of their own, the same every time the one call runs (a call
// that asked for confirmation runs again with its id), and their results
// are saved once each, in one artifact per execute_code call, at version 1.
func TestApprovalCallIDsNeverRepeat(t *testing.T) {
	var mu sync.Mutex
	seen := map[string][]string{} // call id → what ran under it
	note := func(id, what string) {
		mu.Lock()
		defer mu.Unlock()
		seen[id] = append(seen[id], what)
	}
	fx := &sideEffects{n: map[string]int{}}
	tools := approvalTools(t, fx)
	before := func(ctx agent.Context, tl tool.Tool, args map[string]any) (map[string]any, error) {
		if tl.Name() != ToolName { // the calls from code, not execute_code's own
			note(ctx.FunctionCallID(), fmt.Sprintf("%s%v approved=%v", tl.Name(), args, ctx.ToolConfirmation() != nil))
		}
		return nil, nil
	}
	code := `from tools import record, send_money, delete_file
record(label="one")
record(label="two")
send_money(amount=5)
record(label="three")
delete_file(path="a")
record(label="four")
print("done")
`
	svc := artifact.InMemoryService()
	fc := fixtureConfig{cfg: Config{Tools: tools}, artifacts: svc, model: &approvalModel{code: map[string]string{"go": code}}}
	fc.agent.BeforeToolCallbacks = []llmagent.BeforeToolCallback{before}
	f := newFixture(t, nil, fc)
	ctx := t.Context()
	first := onlyConfirmation(t, f.turn(ctx, "s1", "go"))
	second := onlyConfirmation(t, f.answer(ctx, "s1", first, true))
	out := lastOutput(t, f.answer(ctx, "s1", second, true))
	if out["stdout"] != "done\n" {
		t.Fatalf("stdout %q, stderr %q", out["stdout"], out["stderr"])
	}

	// Every run of a tool is under its call's own id; the two that asked
	// for confirmation ran twice under theirs, once asking, once approved.
	want := map[string]int{"record": 4, "send_money": 2, "delete_file": 2}
	got := map[string]int{}
	for id, runs := range seen {
		if !strings.HasPrefix(id, "codemode-") {
			t.Errorf("call id %q: want a Code Mode id", id)
		}
		name := runs[0][:strings.Index(runs[0], "map[")]
		got[name] += len(runs)
		switch {
		case name == "record" && len(runs) != 1:
			t.Errorf("call id %s was given to %d calls: %v", id, len(runs), runs)
		case name != "record" && (len(runs) != 2 || !strings.HasSuffix(runs[0], "approved=false") || !strings.HasSuffix(runs[1], "approved=true")):
			t.Errorf("call id %s: %v, want the call asking and then approved, under the one id", id, runs)
		}
	}
	if !maps.Equal(got, want) || len(seen) != 6 {
		t.Errorf("runs by tool %v under %d ids, want %v under 6 (every call its own id): %v", got, len(seen), want, seen)
	}

	// The results are saved a part of the block at a time, each when its
	// execute_code call returned: every call's result once, under its own
	// id, and every artifact at version 1.
	resp, err := svc.List(ctx, &artifact.ListRequest{AppName: "test", UserID: "user", SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	var parts int
	saved := map[string]int{} // call id → times saved
	for _, name := range resp.FileNames {
		p := loadArtifactPart(t, svc, "s1", name, 0)
		if !IsToolResultArtifact(p) {
			continue
		}
		parts++
		rs, err := ReadToolResults(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) == 0 || name != eng.ToolResultsArtifactName(rs[0].CallID) {
			t.Errorf("artifact %s holds %d results, want at least one, named after the first", name, len(rs))
		}
		for _, r := range rs {
			saved[r.CallID]++
		}
		versions, err := svc.Versions(ctx, &artifact.VersionsRequest{AppName: "test", UserID: "user", SessionID: "s1", FileName: name})
		if err != nil {
			t.Fatal(err)
		}
		if len(versions.Versions) != 1 {
			t.Errorf("artifact %s has versions %v: two parts saved under one name", name, versions.Versions)
		}
	}
	for id := range seen {
		if saved[id] != 1 {
			t.Errorf("call %s: result saved %d times, want once", id, saved[id])
		}
	}
	if len(saved) != 6 || parts != 3 {
		t.Errorf("results of %d calls in %d artifacts, want the 6 calls in 3 (one per execute_code call)", len(saved), parts)
	}
}

// A timeout is said once, names the limit, and mentions approval only when
// the block awaited one; the note says that the variables are kept,
// without speaking of turns (the MCP server has none).
func TestTimeoutMessage(t *testing.T) {
	fx := &sideEffects{n: map[string]int{}}
	code := map[string]string{
		"sleep": "x = 1\nimport time\ntime.sleep(30)\n",
		"rm":    "from tools import delete_file\ndelete_file(path='a')\nimport time\ntime.sleep(30)\n",
	}
	f := newApprovalFixture(t, fx, code, Config{Timeout: time.Second}, nil)
	ctx := t.Context()
	check := func(name, stderr string, approval bool) {
		t.Helper()
		if n := strings.Count(stderr, "ran for longer than 1s"); n != 1 {
			t.Errorf("%s: the timeout said %d times in %q, want once", name, n, stderr)
		}
		if strings.Contains(stderr, "approval") != approval {
			t.Errorf("%s: approval mentioned: %v, want %v: %q", name, !approval, approval, stderr)
		}
		if !strings.Contains(stderr, "variables and files are kept for the next block") || strings.Contains(stderr, "turn") {
			t.Errorf("%s: the note %q should say the variables are kept, and not speak of turns", name, stderr)
		}
	}
	out := lastOutput(t, f.turn(ctx, "s1", "sleep"))
	stderr, _ := out["stderr"].(string)
	check("no approval", stderr, false)

	c := onlyConfirmation(t, f.turn(ctx, "s2", "rm"))
	out = lastOutput(t, f.answer(ctx, "s2", c, true))
	stderr, _ = out["stderr"].(string)
	check("after an approval", stderr, true)
}
