package adksuite

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/genai"
)

// durableTests are blocks paused for approval that resume in another
// process (Config.Durable): after a restart, with every tool call made
// before the pause answered from the turn's record and run once.
var durableTests = []test{
	{"DurableResumesAfterRestart", testDurableResumesAfterRestart},
	{"DurableDeclinedAfterRestart", testDurableDeclinedAfterRestart},
	{"DurableResumesInPlace", testDurableResumesInPlace},
	{"DurableReplayDiverges", testDurableReplayDiverges},
}

// durableBlocks is a turn of two blocks: the first calls a tool and sets
// a variable and a file; the second reads them, calls a tool, pays (which
// waits for approval), and goes on.
var durableBlocks = []string{
	`from tools import record
record(label="one")
y = 7
open("note.txt", "w").write("kept")
print("block one done")`,
	`from tools import record, send_money
record(label="two")
r = send_money(amount=5, artifact_name="receipt")
print("after", y, open("note.txt").read(), r)
record(label="three")`,
}

// durableModel runs the blocks it is given in turn for the message "go",
// then replies with a text quoting the last block's stdout.
type durableModel struct{ blocks []string }

func (m durableModel) Reply(_ context.Context, req Request) (*genai.Content, error) {
	if len(req.Contents) == 0 {
		return nil, errors.New("durable model: empty request")
	}
	run := func(code string) *genai.Content {
		return &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{
			Name: ToolName, Args: map[string]any{"code": code},
		}}}}
	}
	for _, p := range req.Contents[len(req.Contents)-1].Parts {
		switch {
		case p.Text == "go":
			return run(m.blocks[0]), nil
		case p.FunctionResponse != nil && p.FunctionResponse.Name == ToolName:
			stdout, _ := p.FunctionResponse.Response["stdout"].(string)
			for i, marker := range []string{"block one done"} {
				if strings.Contains(stdout, marker) && i+1 < len(m.blocks) {
					return run(m.blocks[i+1]), nil
				}
			}
			return genai.NewContentFromText("seen: "+stdout, genai.RoleModel), nil
		}
	}
	return nil, errors.New("durable model: nothing to answer")
}

// startDurable starts a durable agent with the approval tools, an
// artifact service (or the services of prev), and blocks for "go".
func startDurable(t *testing.T, l Line, fx *approvalEffects, blocks []string, prev Agent) *fixture {
	t.Helper()
	return start(t, l, Setup{
		Tools: approvalTools(fx), Model: durableModel{blocks}, Artifacts: prev == nil, ServicesOf: prev,
		Config: Config{Durable: true},
	})
}

// testDurableResumesAfterRestart: the process that held the paused block
// is gone; a new one gets the answer, runs the turn's blocks again with
// the calls made before the pause answered from the record, runs the
// approved call, and the block ends with the output it would have had;
// each tool ran once.
func testDurableResumesAfterRestart(t *testing.T, l Line) {
	fx := newApprovalEffects()
	a := startDurable(t, l, fx, durableBlocks, nil)
	c := onlyApprovalRequest(t, a.turn("s1", "go"))
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b := startDurable(t, l, fx, durableBlocks, a.Agent)
	evs := b.answerApproval("s1", c, true)
	out := lastApprovalOutput(t, evs)
	if out["stdout"] != "after 7 kept {'sent': 5}\n" || out["stderr"] != "" {
		t.Errorf("the resumed block's result %v, want the output it would have had", out)
	}
	if got := approvalFinalText(evs); got != "seen: after 7 kept {'sent': 5}\n" {
		t.Errorf("the model's reply %q, want it to quote the resumed block", got)
	}
	for _, label := range []string{"one", "two", "send:5", "three"} {
		if n := fx.count(label); n != 1 {
			t.Errorf("%s ran %d times, want once; all: %v", label, n, fx)
		}
	}
	// The same answer again finds nothing to resume, and runs nothing.
	again := lastApprovalOutput(t, b.answerApproval("s1", c, true))
	if stderr, _ := again["stderr"].(string); !strings.Contains(stderr, "nothing ran again") || fx.count("send:5") != 1 {
		t.Errorf("the answer given twice: %v, sent %d times", again, fx.count("send:5"))
	}
}

// testDurableDeclinedAfterRestart: declined after a restart, the call is
// not run, the code gets ToolDeniedError, and nothing before it runs twice.
func testDurableDeclinedAfterRestart(t *testing.T, l Line) {
	fx := newApprovalEffects()
	blocks := []string{durableBlocks[0], `from tools import send_money, ToolError
try:
    send_money(amount=5)
except ToolError as e:
    print(e.type, y)`}
	a := startDurable(t, l, fx, blocks, nil)
	c := onlyApprovalRequest(t, a.turn("s1", "go"))
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b := startDurable(t, l, fx, blocks, a.Agent)
	out := lastApprovalOutput(t, b.answerApproval("s1", c, false))
	if out["stdout"] != "ToolDeniedError 7\n" {
		t.Errorf("result %v, want the code to get ToolDeniedError", out)
	}
	if fx.count("send:5") != 0 || fx.count("one") != 1 {
		t.Errorf("side effects %v, want no payment and the first block's call once", fx)
	}
}

// testDurableResumesInPlace: with Durable set, a process that still holds
// the paused block resumes it as always.
func testDurableResumesInPlace(t *testing.T, l Line) {
	fx := newApprovalEffects()
	a := startDurable(t, l, fx, durableBlocks, nil)
	c := onlyApprovalRequest(t, a.turn("s1", "go"))
	out := lastApprovalOutput(t, a.answerApproval("s1", c, true))
	if out["stdout"] != "after 7 kept {'sent': 5}\n" {
		t.Errorf("result %v", out)
	}
	// The answer given again to another process resumes nothing there.
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b := startDurable(t, l, fx, durableBlocks, a.Agent)
	again := lastApprovalOutput(t, b.answerApproval("s1", c, true))
	if stderr, _ := again["stderr"].(string); !strings.Contains(stderr, "nothing ran again") {
		t.Errorf("the answer given again elsewhere: %v", again)
	}
	for _, label := range []string{"one", "two", "send:5", "three"} {
		if n := fx.count(label); n != 1 {
			t.Errorf("%s ran %d times, want once", label, n)
		}
	}
}

// testDurableReplayDiverges: code whose calls depend on something that
// changes between runs stops, when it is run again to resume it, at the
// first call the record does not hold: the model is told why, and
// neither that call nor the approved one runs.
func testDurableReplayDiverges(t *testing.T, l Line) {
	fx := newApprovalEffects()
	blocks := []string{`import random
from tools import record, send_money
record(label=str(random.random()))
send_money(amount=5)
print("paid")`}
	a := startDurable(t, l, fx, blocks, nil)
	c := onlyApprovalRequest(t, a.turn("s1", "go"))
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b := startDurable(t, l, fx, blocks, a.Agent)
	out := lastApprovalOutput(t, b.answerApproval("s1", c, true))
	stderr, _ := out["stderr"].(string)
	for _, want := range []string{"run again to resume it in a process that did not hold it", "same tool calls with the same arguments", "nothing more of the block was run"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("the result does not say %q: %v", want, out)
		}
	}
	fx.mu.Lock()
	kinds := len(fx.n)
	fx.mu.Unlock()
	if fx.count("send:5") != 0 || kinds != 1 {
		t.Errorf("side effects %v, want only the first run's record", fx)
	}
}
