package adksuite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"google.golang.org/genai"

	eng "github.com/adk-codemode/codemode/internal/host/engine"
)

// approvalTests are the approval of calls from code: a block pauses for a
// person's answer and resumes, is denied, expires, or is lost on restart;
// and its tool calls keep ids of their own across the pauses.
var approvalTests = []test{
	{"ApprovalApprove", testApprovalApprove},
	{"ApprovalDeny", testApprovalDeny},
	{"ApprovalTwoInOneBlockKeepsState", testApprovalTwoInOneBlockKeepsState},
	{"ApprovalThreadsQueued", testApprovalThreadsQueued},
	{"ApprovalExpires", testApprovalExpires},
	{"ApprovalTwoSessions", testApprovalTwoSessions},
	{"ApprovalLostOnRestart", testApprovalLostOnRestart},
	{"ApprovalWaitIsNotRunTime", testApprovalWaitIsNotRunTime},
	{"ApprovalRefusesEscalation", testApprovalRefusesEscalation},
	{"ApprovalWithoutPlugin", testApprovalWithoutPlugin},
	{"ApprovalCallDuringPauseWaits", testApprovalCallDuringPauseWaits},
	{"ApprovalCallIDsNeverRepeat", testApprovalCallIDsNeverRepeat},
	{"TimeoutMessage", testTimeoutMessage},
}

// approvalModel runs the code given for each user message, and after an
// execute_code result replies with a text that quotes its stdout.
type approvalModel struct {
	code map[string]string
}

var _ Model = approvalModel{}

func (m approvalModel) Reply(_ context.Context, req Request) (*genai.Content, error) {
	if len(req.Contents) == 0 {
		return nil, errors.New("approval model: empty request")
	}
	last := req.Contents[len(req.Contents)-1]
	for _, p := range last.Parts {
		if p.FunctionResponse != nil {
			stdout, _ := p.FunctionResponse.Response["stdout"].(string)
			return genai.NewContentFromText("seen: "+stdout, genai.RoleModel), nil
		}
		if p.Text != "" {
			code, ok := m.code[p.Text]
			if !ok {
				return nil, fmt.Errorf("approval model: no code for %q", p.Text)
			}
			return &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{
				Name: ToolName, Args: map[string]any{"code": code},
			}}}}, nil
		}
	}
	return nil, errors.New("approval model: nothing to answer")
}

// approvalEffects counts what the tools did, by label.
type approvalEffects struct {
	mu sync.Mutex
	n  map[string]int
	// confirmed lists the invocations in which a before-tool callback saw
	// a call carrying an approval.
	confirmed []string
}

func newApprovalEffects() *approvalEffects { return &approvalEffects{n: map[string]int{}} }

func (s *approvalEffects) add(label string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n[label]++
}

func (s *approvalEffects) count(label string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[label]
}

// String describes the side effects for a failure's message.
func (s *approvalEffects) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprint(s.n)
}

// approvalTools are record (a plain side effect), delete_file (always
// needs confirmation) and send_money (asks through RequestConfirmation
// with a payload).
func approvalTools(fx *approvalEffects) []Tool {
	return []Tool{
		{
			Name: "record", Description: "Record a label.",
			Params: object(map[string]*jsonschema.Schema{"label": str("")}),
			Run: func(_ Call, a map[string]any) (map[string]any, error) {
				label, _ := a["label"].(string)
				fx.add(label)
				return map[string]any{"recorded": label}, nil
			},
		},
		{
			Name: "delete_file", Description: "Delete a file.", Confirm: true,
			Params: object(map[string]*jsonschema.Schema{"path": str("")}),
			Run: func(c Call, a map[string]any) (map[string]any, error) {
				path, _ := a["path"].(string)
				fx.add("delete:" + path)
				if err := c.SetState("deleted_"+path, true); err != nil {
					return nil, err
				}
				return map[string]any{"deleted": path}, nil
			},
		},
		{
			Name: "send_money", Description: "Send money.",
			Params: object(map[string]*jsonschema.Schema{"amount": {Type: "integer"}}),
			Run: func(c Call, a map[string]any) (map[string]any, error) {
				f, _ := a["amount"].(float64)
				amount := int(f)
				if c.Confirmation() == nil {
					return nil, c.RequestConfirmation(fmt.Sprintf("Send %d euros?", amount), map[string]any{"amount": amount})
				}
				fx.add(fmt.Sprintf("send:%d", amount))
				return map[string]any{"sent": amount}, nil
			},
		},
	}
}

// startApproval starts s with the approval tools, a model that runs code
// for each user message, and an agent before-tool callback that notes
// the calls carrying an approval in fx.
func startApproval(t *testing.T, l Line, fx *approvalEffects, code map[string]string, s Setup) *fixture {
	t.Helper()
	s.Tools = append(approvalTools(fx), s.Tools...)
	s.Model = approvalModel{code: code}
	s.Callbacks.AgentBefore = func(c Call, tool string, _ map[string]any) (map[string]any, error) {
		if c.Confirmation() != nil {
			fx.mu.Lock()
			fx.confirmed = append(fx.confirmed, tool+"@"+c.InvocationID())
			fx.mu.Unlock()
		}
		return nil, nil
	}
	return start(t, l, s)
}

// approvalRequest is an adk_request_confirmation call among events.
type approvalRequest struct {
	id         string
	invocation string
	original   *genai.FunctionCall
	conf       Confirmation
}

// approvalRemarshal decodes v, a value of a call's arguments, into dst
// through JSON, whatever Go type the line left it as.
func approvalRemarshal(v, dst any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, dst); err != nil {
		return fmt.Errorf("%s: %w", b, err)
	}
	return nil
}

func approvalRequests(t *testing.T, evs []Event) []approvalRequest {
	t.Helper()
	var out []approvalRequest
	for _, ev := range evs {
		if ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			fc := p.FunctionCall
			if fc == nil || fc.Name != confirmationCallName {
				continue
			}
			orig, ok := fc.Args["originalFunctionCall"]
			if !ok {
				t.Fatalf("confirmation request without its original call: %v", fc.Args)
			}
			var original genai.FunctionCall
			if err := approvalRemarshal(orig, &original); err != nil {
				t.Fatalf("originalFunctionCall %v", err)
			}
			var conf Confirmation
			if err := approvalRemarshal(fc.Args["toolConfirmation"], &conf); err != nil {
				t.Fatalf("toolConfirmation %v", err)
			}
			out = append(out, approvalRequest{id: fc.ID, invocation: ev.InvocationID, original: &original, conf: conf})
		}
	}
	return out
}

// onlyApprovalRequest returns the one confirmation request among events.
func onlyApprovalRequest(t *testing.T, evs []Event) approvalRequest {
	t.Helper()
	cs := approvalRequests(t, evs)
	if len(cs) != 1 {
		t.Fatalf("%d confirmation requests, want 1; events:\n%s", len(cs), describeApprovalEvents(evs))
	}
	return cs[0]
}

// answerApproval sends the person's answer to a confirmation request.
func (f *fixture) answerApproval(sid string, c approvalRequest, confirmed bool) []Event {
	f.t.Helper()
	return f.send(sid, &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
		ID: c.id, Name: confirmationCallName, Response: map[string]any{"confirmed": confirmed},
	}}}})
}

func describeApprovalEvents(evs []Event) string {
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

// lastApprovalOutput is the last execute_code result among events.
func lastApprovalOutput(t *testing.T, evs []Event) map[string]any {
	t.Helper()
	outs := Outputs(evs)
	if len(outs) == 0 {
		t.Fatalf("no execute_code result; events:\n%s", describeApprovalEvents(evs))
	}
	return outs[len(outs)-1]
}

func approvalFinalText(evs []Event) string {
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

func approvalFunctionCalls(ev Event) []*genai.FunctionCall {
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

const approvalPayCode = `from tools import record, send_money
record(label="before")
x = 41
r = send_money(amount=5)
x += 1
print("after", x, r)
record(label="after")
`

func testApprovalApprove(t *testing.T, l Line) {
	fx := newApprovalEffects()
	f := startApproval(t, l, fx, map[string]string{"pay": approvalPayCode}, Setup{})
	evs := f.turn("s1", "pay")
	c := onlyApprovalRequest(t, evs)
	// The request is ADK's own, for the execute_code call: the hint and
	// payload are the inner tool's.
	if c.original.Name != ToolName || c.original.Args["code"] != approvalPayCode {
		t.Errorf("original call %s(%v), want execute_code with the code", c.original.Name, c.original.Args)
	}
	var execID string
	for _, ev := range evs {
		for _, fc := range approvalFunctionCalls(ev) {
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
	wantHint := fmt.Sprintf("The code of execute_code call %s calls the tool send_money with {\"amount\":5}. Send 5 euros?\n\nThe block's code:\n%s", execID, approvalPayCode)
	if c.conf.Hint != wantHint || fmt.Sprint(c.conf.Payload) != "map[amount:5]" || c.conf.Confirmed {
		t.Errorf("toolConfirmation %+v, want the hint %q and the tool's payload, unconfirmed", c.conf, wantHint)
	}
	paused := lastApprovalOutput(t, evs)
	if aw, _ := paused["awaiting_approval"].(map[string]any); aw["tool"] != "send_money" {
		t.Errorf("paused result %v, want it to name send_money", paused)
	}
	if fx.count("before") != 1 || fx.count("send:5") != 0 {
		t.Fatalf("before the answer: %v", fx)
	}
	if len(SandboxProcesses()) == 0 {
		t.Fatal("the paused block's sandbox was closed at the end of the invocation")
	}

	evs = f.answerApproval("s1", c, true)
	out := lastApprovalOutput(t, evs)
	if got, want := out["stdout"], "after 42 {'sent': 5}\n"; got != want {
		t.Errorf("stdout %q, want %q; stderr %q", got, want, out["stderr"])
	}
	if got := approvalFinalText(evs); got != "seen: after 42 {'sent': 5}\n" {
		t.Errorf("the model's reply %q, want it to have seen the block's output", got)
	}
	for _, label := range []string{"before", "send:5", "after"} {
		if n := fx.count(label); n != 1 {
			t.Errorf("%s ran %d times, want once", label, n)
		}
	}
	// The approved call went through the agent's callbacks, in the
	// invocation that carried the answer.
	fx.mu.Lock()
	confirmed := fx.confirmed
	fx.mu.Unlock()
	if len(confirmed) != 1 || confirmed[0] != "send_money@"+evs[0].InvocationID {
		t.Errorf("approved calls seen by the before-tool callback: %v, want send_money in invocation %s", confirmed, evs[0].InvocationID)
	}
	Eventually(t, "the sandbox closes after the resumed invocation", func() bool { return len(SandboxProcesses()) == 0 })
}

func testApprovalDeny(t *testing.T, l Line) {
	fx := newApprovalEffects()
	code := `from tools import record, delete_file, ToolDeniedError, ToolError
record(label="before")
try:
    delete_file(path="a.txt")
except ToolDeniedError as e:
    print("denied", isinstance(e, ToolError), e.type)
record(label="after")
`
	f := startApproval(t, l, fx, map[string]string{"rm": code}, Setup{})
	c := onlyApprovalRequest(t, f.turn("s1", "rm"))
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
	out := lastApprovalOutput(t, f.answerApproval("s1", c, false))
	if got, want := out["stdout"], "denied True ToolDeniedError\n"; got != want {
		t.Errorf("stdout %q, want %q; stderr %q", got, want, out["stderr"])
	}
	if fx.count("delete:a.txt") != 0 || fx.count("before") != 1 || fx.count("after") != 1 {
		t.Errorf("side effects %v, want before and after once and no delete", fx)
	}
}

func testApprovalTwoInOneBlockKeepsState(t *testing.T, l Line) {
	fx := newApprovalEffects()
	code := `from tools import record, delete_file
record(label="before")
done = []
for p in ("a", "b"):
    done.append(delete_file(path=p)["deleted"])
print("deleted", done)
`
	f := startApproval(t, l, fx, map[string]string{"rm": code}, Setup{})
	first := onlyApprovalRequest(t, f.turn("s1", "rm"))
	evs := f.answerApproval("s1", first, true)
	second := onlyApprovalRequest(t, evs)
	if second.original.Name != ToolName || second.original.ID == first.original.ID {
		t.Errorf("second request's original call %s(%s), want a new execute_code call", second.original.Name, second.original.ID)
	}
	if fx.count("delete:a") != 1 || fx.count("delete:b") != 0 {
		t.Fatalf("after the first answer: %v", fx)
	}
	evs = f.answerApproval("s1", second, true)
	out := lastApprovalOutput(t, evs)
	if got, want := out["stdout"], "deleted ['a', 'b']\n"; got != want {
		t.Errorf("stdout %q, want %q; stderr %q", got, want, out["stderr"])
	}
	for _, label := range []string{"before", "delete:a", "delete:b"} {
		if n := fx.count(label); n != 1 {
			t.Errorf("%s ran %d times, want once", label, n)
		}
	}
	// The state the tools set landed in the session.
	for _, k := range []string{"deleted_a", "deleted_b"} {
		if v, ok := f.state("s1", k); !ok || v != true {
			t.Errorf("state %s = %v (set %v), want true", k, v, ok)
		}
	}
}

func testApprovalThreadsQueued(t *testing.T, l Line) {
	fx := newApprovalEffects()
	code := `from concurrent.futures import ThreadPoolExecutor
from tools import delete_file
with ThreadPoolExecutor(2) as pool:
    got = sorted(pool.map(lambda p: delete_file(path=p)["deleted"], ["a", "b"]))
print("deleted", got)
`
	f := startApproval(t, l, fx, map[string]string{"rm": code}, Setup{})
	c := onlyApprovalRequest(t, f.turn("s1", "rm"))
	evs := f.answerApproval("s1", c, true)
	c = onlyApprovalRequest(t, evs)
	if fx.count("delete:a")+fx.count("delete:b") != 1 {
		t.Fatalf("after the first answer: %v, want one delete", fx)
	}
	out := lastApprovalOutput(t, f.answerApproval("s1", c, true))
	if got, want := out["stdout"], "deleted ['a', 'b']\n"; got != want {
		t.Errorf("stdout %q, want %q; stderr %q", got, want, out["stderr"])
	}
	if fx.count("delete:a") != 1 || fx.count("delete:b") != 1 {
		t.Errorf("side effects %v, want each delete once", fx)
	}
}

func testApprovalExpires(t *testing.T, l Line) {
	fx := newApprovalEffects()
	code := map[string]string{
		"rm":    "from tools import record, delete_file\nrecord(label='before')\ndelete_file(path='a')\n",
		"again": "print('next')",
	}
	f := startApproval(t, l, fx, code, Setup{Config: Config{ApprovalTimeout: 200 * time.Millisecond}})
	c := onlyApprovalRequest(t, f.turn("s1", "rm"))
	Eventually(t, "the expired block's sandbox closes", func() bool { return len(SandboxProcesses()) == 0 })
	// The model hears of it on its next call in the session.
	out := lastApprovalOutput(t, f.turn("s1", "again"))
	if stderr, _ := out["stderr"].(string); out["stdout"] != "next\n" || !strings.Contains(stderr, "no answer came within 0.2s") || !strings.Contains(stderr, "delete_file was not run") {
		t.Errorf("next call's result %v, want its output and a note on the expired block", out)
	}
	// A late answer resumes nothing and says so.
	out = lastApprovalOutput(t, f.answerApproval("s1", c, true))
	if stderr, _ := out["stderr"].(string); !strings.Contains(stderr, "no longer holds that code") {
		t.Errorf("late answer's result %v, want it to say the code is gone", out)
	}
	if fx.count("delete:a") != 0 || fx.count("before") != 1 {
		t.Errorf("side effects %v", fx)
	}
}

func testApprovalTwoSessions(t *testing.T, l Line) {
	fx := newApprovalEffects()
	code := map[string]string{
		"a": "from tools import delete_file\nwho = 'a'\ntry:\n    delete_file(path=who)\n    print(who, 'deleted')\nexcept Exception as e:\n    print(who, type(e).__name__)\n",
		"b": "from tools import delete_file\nwho = 'b'\ntry:\n    delete_file(path=who)\n    print(who, 'deleted')\nexcept Exception as e:\n    print(who, type(e).__name__)\n",
	}
	f := startApproval(t, l, fx, code, Setup{})
	ca := onlyApprovalRequest(t, f.turn("s1", "a"))
	cb := onlyApprovalRequest(t, f.turn("s2", "b"))
	outB := lastApprovalOutput(t, f.answerApproval("s2", cb, false))
	outA := lastApprovalOutput(t, f.answerApproval("s1", ca, true))
	if outA["stdout"] != "a deleted\n" || outB["stdout"] != "b ToolDeniedError\n" {
		t.Errorf("outputs %q and %q, want a approved and b denied", outA["stdout"], outB["stdout"])
	}
	if fx.count("delete:a") != 1 || fx.count("delete:b") != 0 {
		t.Errorf("side effects %v", fx)
	}
}

func testApprovalLostOnRestart(t *testing.T, l Line) {
	fx := newApprovalEffects()
	code := map[string]string{"rm": "from tools import record, delete_file\nrecord(label='before')\ndelete_file(path='a')\n"}
	f := startApproval(t, l, fx, code, Setup{})
	c := onlyApprovalRequest(t, f.turn("s1", "rm"))
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if procs := SandboxProcesses(); len(procs) != 0 {
		t.Errorf("processes left after Close: %v", procs)
	}
	// The host comes back with a new plugin over the same sessions.
	g := startApproval(t, l, fx, code, Setup{ServicesOf: f.Agent})
	out := lastApprovalOutput(t, g.answerApproval("s1", c, true))
	stderr, _ := out["stderr"].(string)
	if !strings.Contains(stderr, "no longer holds that code") || !strings.Contains(stderr, "was not run") {
		t.Errorf("result %v, want it to say the paused code is gone", out)
	}
	if fx.count("delete:a") != 0 || fx.count("before") != 1 {
		t.Errorf("side effects %v, want nothing run again and no delete", fx)
	}
}

// testApprovalWaitIsNotRunTime: the time a block waits for approval does
// not count against its timeout.
func testApprovalWaitIsNotRunTime(t *testing.T, l Line) {
	fx := newApprovalEffects()
	code := map[string]string{"rm": "from tools import delete_file\ndelete_file(path='a')\nprint('done')\n"}
	f := startApproval(t, l, fx, code, Setup{Config: Config{Timeout: 3 * time.Second}})
	c := onlyApprovalRequest(t, f.turn("s1", "rm"))
	// Longer than the timeout: a clock that ran while the block waited
	// would stop it.
	time.Sleep(3500 * time.Millisecond)
	out := lastApprovalOutput(t, f.answerApproval("s1", c, true))
	if out["stdout"] != "done\n" {
		t.Errorf("result %v, want the block to finish", out)
	}
}

// testApprovalRefusesEscalation: a tool that asks for confirmation
// together with an escalation is still refused, with the reason, and the
// block does not pause.
func testApprovalRefusesEscalation(t *testing.T, l Line) {
	fx := newApprovalEffects()
	esc := Tool{
		Name: "escalate", Description: "Escalate.",
		Run: func(c Call, _ map[string]any) (map[string]any, error) {
			c.Escalate()
			return nil, c.RequestConfirmation("Escalate?", nil)
		},
	}
	code := "from tools import escalate, ToolError\ntry:\n    escalate()\nexcept ToolError as e:\n    print(e.type, '|', e.message)\n"
	f := start(t, l, Setup{Tools: append(approvalTools(fx), esc), Model: approvalModel{code: map[string]string{"go": code}}})
	evs := f.turn("s1", "go")
	if cs := approvalRequests(t, evs); len(cs) != 0 {
		t.Errorf("%d confirmation requests, want none", len(cs))
	}
	want := `UnsupportedToolActionError | tool "escalate" cannot be called from code: it requested escalation; call it directly instead of from code` + "\n"
	if got := lastApprovalOutput(t, evs)["stdout"]; got != want {
		t.Errorf("stdout %q, want %q", got, want)
	}
}

// testApprovalWithoutPlugin: without the plugin, the hooks on the agent
// (the on-tool-error hook among them) resume a paused block the same
// way, through two requests.
func testApprovalWithoutPlugin(t *testing.T, l Line) {
	fx := newApprovalEffects()
	code := map[string]string{"rm": "from tools import delete_file\nn = 0\nfor p in ('a', 'b'):\n    delete_file(path=p)\n    n += 1\nprint('deleted', n)\n"}
	f := startApproval(t, l, fx, code, Setup{NoPlugin: true})
	c := onlyApprovalRequest(t, f.turn("s1", "rm"))
	c = onlyApprovalRequest(t, f.answerApproval("s1", c, true))
	out := lastApprovalOutput(t, f.answerApproval("s1", c, true))
	if out["stdout"] != "deleted 2\n" || fx.count("delete:a") != 1 || fx.count("delete:b") != 1 {
		t.Errorf("result %v, side effects %v", out, fx)
	}
}

// testApprovalCallDuringPauseWaits: a tool call another thread makes
// while the block is paused waits for the block to resume, then runs
// once.
func testApprovalCallDuringPauseWaits(t *testing.T, l Line) {
	fx := newApprovalEffects()
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
	f := startApproval(t, l, fx, map[string]string{"go": code}, Setup{})
	c := onlyApprovalRequest(t, f.turn("s1", "go"))
	// Answer after the main thread's call has most likely arrived; on a
	// slow machine it may come before the pause or after the answer,
	// which the assertions below accept as well.
	time.Sleep(time.Second)
	out := lastApprovalOutput(t, f.answerApproval("s1", c, true))
	if got, want := out["stdout"], "{'recorded': 'during'}\n{'d': {'deleted': 'a'}}\n"; got != want {
		t.Errorf("stdout %q, want %q; stderr %q", got, want, out["stderr"])
	}
	if fx.count("during") != 1 || fx.count("delete:a") != 1 {
		t.Errorf("side effects %v, want each once", fx)
	}
}

// testApprovalCallIDsNeverRepeat: the tool calls of a block that pauses
// twice for approval, resuming first under the execute_code call ADK runs
// again and then under one the plugin makes for the second request, each
// get an id of their own, the same every time the one call runs (a call
// that asked for confirmation runs again with its id), and their results
// are saved once each, in one artifact per execute_code call, at version 1.
func testApprovalCallIDsNeverRepeat(t *testing.T, l Line) {
	var mu sync.Mutex
	seen := map[string][]string{} // call id → what ran under it
	note := func(id, what string) {
		mu.Lock()
		defer mu.Unlock()
		seen[id] = append(seen[id], what)
	}
	fx := newApprovalEffects()
	before := func(c Call, tool string, args map[string]any) (map[string]any, error) {
		if tool != ToolName { // the calls from code, not execute_code's own
			note(c.FunctionCallID(), fmt.Sprintf("%s%v approved=%v", tool, args, c.Confirmation() != nil))
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
	f := start(t, l, Setup{
		Tools: approvalTools(fx), Artifacts: true,
		Model:     approvalModel{code: map[string]string{"go": code}},
		Callbacks: Callbacks{AgentBefore: before},
	})
	first := onlyApprovalRequest(t, f.turn("s1", "go"))
	second := onlyApprovalRequest(t, f.answerApproval("s1", first, true))
	out := lastApprovalOutput(t, f.answerApproval("s1", second, true))
	if out["stdout"] != "done\n" {
		t.Fatalf("stdout %q, stderr %q", out["stdout"], out["stderr"])
	}

	mu.Lock()
	defer mu.Unlock()
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
	ctx := t.Context()
	names, err := f.ArtifactNames(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	var parts int
	saved := map[string]int{} // call id → times saved
	for _, name := range names {
		p, err := f.Artifact(ctx, "s1", name, 0)
		if err != nil {
			t.Fatalf("load artifact %q: %v", name, err)
		}
		rs, ok, err := f.ToolResults(p)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			continue
		}
		parts++
		if len(rs) == 0 || name != eng.ToolResultsArtifactName(rs[0].CallID) {
			t.Errorf("artifact %s holds %d results, want at least one, named after the first", name, len(rs))
		}
		for _, r := range rs {
			saved[r.CallID]++
		}
		versions, err := f.ArtifactVersions(ctx, "s1", name)
		if err != nil {
			t.Fatal(err)
		}
		if len(versions) != 1 {
			t.Errorf("artifact %s has versions %v: two parts saved under one name", name, versions)
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

// testTimeoutMessage: a timeout is said once, names the limit, and
// mentions approval only when the block awaited one; the note says that
// the variables are kept, without speaking of turns (the MCP server has
// none).
func testTimeoutMessage(t *testing.T, l Line) {
	fx := newApprovalEffects()
	code := map[string]string{
		"sleep": "x = 1\nimport time\ntime.sleep(30)\n",
		"rm":    "from tools import delete_file\ndelete_file(path='a')\nimport time\ntime.sleep(30)\n",
	}
	f := startApproval(t, l, fx, code, Setup{Config: Config{Timeout: time.Second}})
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
	out := lastApprovalOutput(t, f.turn("s1", "sleep"))
	stderr, _ := out["stderr"].(string)
	check("no approval", stderr, false)

	c := onlyApprovalRequest(t, f.turn("s2", "rm"))
	out = lastApprovalOutput(t, f.answerApproval("s2", c, true))
	stderr, _ = out["stderr"].(string)
	check("after an approval", stderr, true)
}
