package codemode

import (
	"context"
	"iter"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
)

// budgetTools are count, which counts its runs in ran and returns a short
// result, and fetch, which counts its runs in ran and returns a result of
// about 1,000 bytes.
func budgetTools(t *testing.T, ran *atomic.Int64) []tool.Tool {
	t.Helper()
	count, err := functiontool.New(functiontool.Config{Name: "count", Description: "Count a call."},
		func(agent.Context, struct{}) (map[string]any, error) { return map[string]any{"n": ran.Add(1)}, nil })
	if err != nil {
		t.Fatal(err)
	}
	fetch, err := functiontool.New(functiontool.Config{Name: "fetch", Description: "Fetch a page."},
		func(agent.Context, struct{}) (map[string]any, error) {
			ran.Add(1)
			return map[string]any{"page": strings.Repeat("x", 990)}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return []tool.Tool{count, fetch}
}

// TestBudgets: each budget stops the block's calls at its limit; the calls
// past it are not made (the side-effect counter says so), the code gets
// BudgetExceeded, which is a ToolError, and the block's result names the
// budget that ran out.
func TestBudgets(t *testing.T) {
	const loop = `from tools import count, fetch, BudgetExceeded, ToolError
done = 0
try:
    for i in range(10):
        %s
        done += 1
except BudgetExceeded as e:
    print("stopped after", done, isinstance(e, ToolError), e.type)
    print(e.message)`
	for _, tc := range []struct {
		name    string
		budgets Budgets
		call    string
		done    int    // calls that returned to the code
		ran     int64  // calls that ran on the host
		message string // in BudgetExceeded's message
		note    string // in the block's stderr
	}{
		{"calls", Budgets{ToolCalls: 3}, "count()", 3, 3, "the block's budget of 3 tool calls ran out (3 made); the call to count was not made", "Budgets.ToolCalls (1 refused)"},
		{"per tool", Budgets{ToolCallsPerTool: map[string]int{"count": 4}}, "count()", 4, 4, "the block's budget of 4 calls to count ran out (4 made)", `Budgets.ToolCallsPerTool["count"] (1 refused)`},
		{"per tool other tool free", Budgets{ToolCallsPerTool: map[string]int{"fetch": 1}}, "count()", 10, 10, "", ""},
		{"result bytes", Budgets{ResultBytes: 2500}, "fetch()", 2, 3, "the result of fetch is 1,001 bytes, more than the 498 left", "Budgets.ResultBytes (1 refused)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ran atomic.Int64
			m := newScript().on("go", run(strings.Replace(loop, "%s", tc.call, 1)), say("ok"))
			f := newFixture(t, m, fixtureConfig{cfg: Config{Tools: budgetTools(t, &ran), Budgets: tc.budgets}})
			out := outputs(f.turn(t.Context(), "s1", "go"))[0]
			stdout, _ := out["stdout"].(string)
			stderr, _ := out["stderr"].(string)
			if tc.message == "" {
				if stdout != "" || stderr != "" {
					t.Errorf("a budget of another tool stopped the block: %q %q", stdout, stderr)
				}
			} else {
				if want := "stopped after " + strconv.Itoa(tc.done) + " True BudgetExceeded\n"; !strings.HasPrefix(stdout, want) {
					t.Errorf("stdout %q, want it to start %q", stdout, want)
				}
				if !strings.Contains(stdout, tc.message) {
					t.Errorf("stdout %q lacks %q", stdout, tc.message)
				}
				if !strings.Contains(stderr, "[Budget: "+tc.note+" ran out in this block") {
					t.Errorf("stderr %q does not name the budget %s", stderr, tc.note)
				}
			}
			if got := ran.Load(); got != tc.ran {
				t.Errorf("the tools ran %d times, want %d", got, tc.ran)
			}
		})
	}
}

// TestBlocksPerTurn: past Budgets.BlocksPerTurn an execute_code call runs
// no code and tells the model to answer; the next turn runs again.
func TestBlocksPerTurn(t *testing.T) {
	var ran atomic.Int64
	steps := []step{run("from tools import count\ncount()"), run("from tools import count\ncount()"), run("from tools import count\ncount()"), say("ok")}
	m := newScript().on("go", steps...).on("again", run("from tools import count\ncount()"), say("ok"))
	f := newFixture(t, m, fixtureConfig{cfg: Config{Tools: budgetTools(t, &ran), Budgets: Budgets{BlocksPerTurn: 2}}})
	out := outputs(f.turn(t.Context(), "s1", "go"))
	if len(out) != 3 {
		t.Fatalf("%d execute_code results, want 3", len(out))
	}
	if got := out[2]["stderr"]; !strings.Contains(got.(string), "this turn has made 2 execute_code calls, the most Budgets.BlocksPerTurn allows") {
		t.Errorf("third block's stderr %q, want the budget named", got)
	}
	if ran.Load() != 2 {
		t.Errorf("count ran %d times, want 2", ran.Load())
	}
	wantClean(t, outputs(f.turn(t.Context(), "s1", "again"))[0])
	if ran.Load() != 3 {
		t.Errorf("count ran %d times after the next turn, want 3", ran.Load())
	}
}

// codeForever is a model that answers every request with execute_code,
// and counts the requests.
type codeForever struct{ calls atomic.Int64 }

func (m *codeForever) Name() string { return "code-forever" }

func (m *codeForever) GenerateContent(context.Context, *model.LLMRequest, bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		m.calls.Add(1)
		yield(&model.LLMResponse{Content: run("from tools import count\ncount()")(nil), TurnComplete: true}, nil)
	}
}

// lastText is the text of the invocation's last event with text.
func lastText(evs []*session.Event) string {
	for i := len(evs) - 1; i >= 0; i-- {
		if c := evs[i].Content; c != nil {
			for _, p := range c.Parts {
				if p.Text != "" {
					return p.Text
				}
			}
		}
	}
	return ""
}

// TestBudgetsBoundTheModel: a model that keeps asking for code is called
// at most BlocksPerTurn+2 times (the refusal is answered once more, then
// the plugin answers itself and the invocation ends), and at most
// ModelCallsPerTurn times when that is set; the next turn starts afresh.
func TestBudgetsBoundTheModel(t *testing.T) {
	for _, tc := range []struct {
		name    string
		budgets Budgets
		calls   int64 // model calls of one turn
		blocks  int64 // blocks that ran
		answer  string
	}{
		{"blocks", Budgets{BlocksPerTurn: 3}, 5, 3, "budget of 3 code blocks (Budgets.BlocksPerTurn)"},
		{"model calls", Budgets{ModelCallsPerTurn: 4}, 4, 4, "budget of 4 model calls (Budgets.ModelCallsPerTurn)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ran atomic.Int64
			m := &codeForever{}
			f := newFixture(t, nil, fixtureConfig{cfg: Config{Tools: budgetTools(t, &ran), Budgets: tc.budgets}, model: m})
			evs := f.turn(t.Context(), "s1", "go")
			if got := m.calls.Load(); got != tc.calls {
				t.Errorf("the model was called %d times, want %d", got, tc.calls)
			}
			if ran.Load() != tc.blocks {
				t.Errorf("%d blocks ran, want %d", ran.Load(), tc.blocks)
			}
			if got := lastText(evs); !strings.Contains(got, tc.answer) {
				t.Errorf("the turn ended with %q, want the plugin's answer naming %q", got, tc.answer)
			}
			// The next turn has budgets of its own.
			m.calls.Store(0)
			f.turn(t.Context(), "s1", "again")
			if got := m.calls.Load(); got != tc.calls {
				t.Errorf("the next turn called the model %d times, want %d", got, tc.calls)
			}
		})
	}
}
