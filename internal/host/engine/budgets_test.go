package engine

import (
	"strings"
	"testing"

	"github.com/adk-codemode/codemode/transport"
)

// TestSpendRefusesPastEachBudget charges calls against each per-block
// budget: the call past it is refused with BudgetExceeded naming it, and
// the note lists each budget that refused, with how many, in order.
func TestSpendRefusesPastEachBudget(t *testing.T) {
	b := Budgets{ToolCalls: 3, ToolCallsPerTool: map[string]int{"slack.send": 1}, ResultBytes: 10}
	var s Spend
	if _, ok := s.Charge(b, "send", "slack.send"); !ok {
		t.Fatal("the first call to slack.send was refused")
	}
	res, ok := s.Charge(b, "send", "slack.send")
	if ok || res.Err == nil || res.Err.Type != BudgetType || !strings.Contains(res.Err.Message, "budget of 1 calls to slack.send") {
		t.Fatalf("the second call to slack.send: %+v, %v; want BudgetExceeded for its per-tool budget", res.Err, ok)
	}
	if _, ok := s.Charge(b, "get", "get"); !ok {
		t.Fatal("a call to another tool was refused")
	}
	result := transport.ToolResult{Value: "0123456789abc"}
	got := s.Receive(b, "get", result, ResultSize(b, result))
	if got.Err == nil || !strings.Contains(got.Err.Message, "is 15 bytes, more than the 10 left") {
		t.Fatalf("a 15-byte result against 10 bytes: %+v; want it withheld", got)
	}
	if _, ok := s.Charge(b, "get", "get"); ok {
		t.Fatal("a call after the result bytes ran out was made")
	}
	note := s.Note(b)
	want := `[Budget: Budgets.ToolCallsPerTool["slack.send"] (1 refused), Budgets.ResultBytes (2 refused) ran out in this block`
	if !strings.HasPrefix(note, want) {
		t.Errorf("note %q, want it to start %q", note, want)
	}
	var fresh Spend
	for range 3 {
		if _, ok := fresh.Charge(b, "get", "get"); !ok {
			t.Fatal("a call within ToolCalls was refused")
		}
	}
	if res, ok := fresh.Charge(b, "get", "get"); ok || !strings.Contains(res.Err.Message, "budget of 3 tool calls ran out (3 made)") {
		t.Errorf("the fourth call: %+v, %v; want ToolCalls to refuse it", res.Err, ok)
	}
	fresh.Egress(2048, true)
	if n := fresh.Note(Budgets{EgressBytes: 1024}); !strings.Contains(n, "Budgets.EgressBytes (1,024 bytes) ran out in this block after 2,048 bytes") {
		t.Errorf("egress note %q", n)
	}
	if n := (&Spend{}).Note(b); n != "" {
		t.Errorf("a block that spent nothing has the note %q", n)
	}
}

// TestSpendNoBudgets admits every call and result when no budget is set.
func TestSpendNoBudgets(t *testing.T) {
	var s Spend
	for range 1000 {
		if _, ok := s.Charge(Budgets{}, "t", "t"); !ok {
			t.Fatal("a call was refused with no budget set")
		}
	}
	big := transport.ToolResult{Value: strings.Repeat("x", 1<<20)}
	if n := ResultSize(Budgets{}, big); n != 0 {
		t.Errorf("ResultSize with no budget = %d; want 0, without encoding the value", n)
	}
	if r := s.Receive(Budgets{}, "t", big, 0); r.Err != nil {
		t.Fatalf("a result was withheld with no budget set: %v", r.Err)
	}
}
