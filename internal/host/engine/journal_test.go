package engine

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/adk-codemode/codemode/transport"
)

// TestJournalReplays records a turn's calls, reads the record back as
// another process would, and answers the same calls from it: in another
// order within a block (threads), with values, errors and a result kept by
// reference; then the replay catches up and a call runs for real.
func TestJournalReplays(t *testing.T) {
	var j Journal
	big := strings.Repeat("x", MaxJournalValueBytes+1)
	for _, c := range []struct {
		block int
		tool  string
		args  map[string]any
		res   transport.ToolResult
		ref   string
	}{
		{0, "get_weather", map[string]any{"city": "Paris"}, transport.ToolResult{Value: map[string]any{"temp_c": json.Number("18")}}, ""},
		{0, "get_weather", map[string]any{"city": "Oslo"}, transport.ToolResult{Value: map[string]any{"temp_c": json.Number("4")}}, ""},
		{1, "fetch", map[string]any{"id": 1.0}, transport.ToolResult{Value: big}, "report.json"},
		{1, "delete", map[string]any{"path": "a"}, transport.ToolResult{Err: &transport.ToolError{Type: "HTTPStatusError", Message: "gone", StatusCode: 410, Body: map[string]any{"why": "gone"}}}, ""},
	} {
		if !j.Record(c.block, c.tool, c.args, c.res, c.ref) {
			t.Fatalf("%s was not recorded", c.tool)
		}
	}
	blocks := []string{"w = get_weather(...)", "fetch(...); delete(...); delete(...)"}
	pending := &PendingCall{Block: 1, Tool: "delete", Args: strings.Repeat("0", 64), CallID: "codemode-c-4"}
	data, err := j.Marshal(blocks, pending)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := ReadJournal(data)
	if err != nil {
		t.Fatal(err)
	}
	r := rec.Journal
	if diff := cmp.Diff(j.Entries(), r.Entries()); diff != "" {
		t.Fatalf("read back (-wrote +read):\n%s", diff)
	}
	if !cmp.Equal(rec.Blocks, blocks) || !cmp.Equal(rec.Pending, pending) {
		t.Errorf("read back blocks %q and pending %+v", rec.Blocks, rec.Pending)
	}
	answer := func(block int, tool string, args map[string]any) (transport.ToolResult, string, bool) {
		t.Helper()
		res, ref, done, err := r.Answer(block, tool, args)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		return res, ref, done
	}
	// Oslo's call comes first this time, as it may from another thread.
	if res, _, done := answer(0, "get_weather", map[string]any{"city": "Oslo"}); !done || !cmp.Equal(res.Value, map[string]any{"temp_c": json.Number("4")}) {
		t.Errorf("Oslo: %v, answered %v", res, done)
	}
	if res, _, done := answer(0, "get_weather", map[string]any{"city": "Paris"}); !done || !cmp.Equal(res.Value, map[string]any{"temp_c": json.Number("18")}) {
		t.Errorf("Paris: %v, answered %v", res, done)
	}
	if _, ref, done := answer(1, "fetch", map[string]any{"id": 1.0}); !done || ref != "report.json" {
		t.Errorf("fetch: ref %q, answered %v; want the artifact of the large result", ref, done)
	}
	res, _, done := answer(1, "delete", map[string]any{"path": "a"})
	want := &transport.ToolError{Type: "HTTPStatusError", Message: "gone", StatusCode: 410, Body: map[string]any{"why": "gone"}}
	if !done || !cmp.Equal(res.Err, want) {
		t.Errorf("delete: %+v, answered %v; want %+v", res.Err, done, want)
	}
	// An integer beyond float64's precision comes back whole.
	var k Journal
	k.Record(0, "id", nil, transport.ToolResult{Value: int64(9007199254740993)}, "")
	if res, _, _, err := k.Answer(0, "id", nil); err != nil || res.Value != json.Number("9007199254740993") {
		t.Errorf("a large integer came back as %#v (%v)", res.Value, err)
	}
	// Caught up: the next call is the one to run for real, such as the
	// approved call the block paused on.
	if _, _, done := answer(1, "delete", map[string]any{"path": "b"}); done {
		t.Error("a call past the record was answered from it")
	}
}

// TestJournalDivergence: code that, run again, makes a call the record
// does not hold while calls of its block are left stops with a
// DivergenceError that says what replay requires.
func TestJournalDivergence(t *testing.T) {
	var j Journal
	j.Record(0, "send_money", map[string]any{"amount": 5.0}, transport.ToolResult{Value: "sent"}, "")
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"send_money", map[string]any{"amount": 6.0}},
		{"record", map[string]any{"amount": 5.0}},
	} {
		_, _, _, err := j.Answer(0, c.tool, c.args)
		var de *DivergenceError
		if !errors.As(err, &de) || de.Tool != c.tool || de.Recorded != 1 {
			t.Errorf("%s(%v): %v, want a DivergenceError", c.tool, c.args, err)
			continue
		}
		for _, want := range []string{"run again to resume it in a process that did not hold it", "same tool calls with the same arguments", "nothing more of the block was run"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the divergence does not say %q: %s", want, err)
			}
		}
	}
}

// TestJournalBounds: a journal stops at its bounds and says so, and a
// result too large to hold that was not saved elsewhere ends it too.
func TestJournalBounds(t *testing.T) {
	var j Journal
	if j.Record(0, "big", nil, transport.ToolResult{Value: strings.Repeat("x", MaxJournalValueBytes+1)}, "") {
		t.Error("a result neither held nor saved was recorded")
	}
	if !j.Overflowed() || j.Record(0, "small", nil, transport.ToolResult{Value: 1}, "") {
		t.Error("the journal went on after it could not record a call")
	}
	var k Journal
	n := 0
	for k.Record(0, "t", map[string]any{"i": n}, transport.ToolResult{Value: strings.Repeat("y", 1000)}, "") {
		n++
	}
	if data, err := k.Marshal([]string{"t()"}, nil); err != nil || len(data) > MaxJournalBytes || !k.Overflowed() || n == 0 {
		t.Errorf("after %d calls: %d bytes, overflowed %v, %v", n, len(data), k.Overflowed(), err)
	}
	if _, err := ReadJournal([]byte(strings.Repeat(" ", MaxJournalBytes+1))); err == nil {
		t.Error("a journal larger than the bound was read")
	}
}

// TestReadJournalRefuses: what another process left in storage is
// checked before a replay trusts it.
func TestReadJournalRefuses(t *testing.T) {
	digest := strings.Repeat("ab", 32)
	for _, bad := range []string{
		``,
		`{"version":2,"blocks":[],"entries":[]}`,
		`{"version":1,"blocks":[],"entries":[{"block":0,"tool":"t","args":"` + digest + `","value":1}]}`,
		`{"version":1,"blocks":["x"],"entries":[],"pending":{"block":1,"tool":"t","args":"` + digest + `","call_id":"c"}}`,
		`{"version":1,"blocks":["x"],"entries":[],"pending":{"block":0,"tool":"t","args":"` + digest + `","call_id":""}}`,
		`{"version":1,"blocks":["x"],"entries":[],"extra":1}`,
		`{"version":1,"blocks":["x"],"entries":[]} {}`,
		`{"version":1,"blocks":["x"],"entries":[{"block":-1,"tool":"t","args":"` + digest + `","value":1}]}`,
		`{"version":1,"blocks":["x"],"entries":[{"block":0,"tool":"","args":"` + digest + `","value":1}]}`,
		`{"version":1,"blocks":["x"],"entries":[{"block":0,"tool":"t","args":"abc","value":1}]}`,
		`{"version":1,"blocks":["x"],"entries":[{"block":0,"tool":"t","args":"` + strings.Repeat("zz", 32) + `","value":1}]}`,
		`{"version":1,"blocks":["x"],"entries":[{"block":0,"tool":"t","args":"` + digest + `"}]}`,
		`{"version":1,"blocks":["x"],"entries":[{"block":0,"tool":"t","args":"` + digest + `","value":1,"value_ref":"a"}]}`,
		`{"version":1,"blocks":["x"],"entries":[{"block":0,"tool":"t","args":"` + digest + `","error":{"type":"","message":"m"}}]}`,
	} {
		if _, err := ReadJournal([]byte(bad)); err == nil {
			t.Errorf("ReadJournal(%s) took it", bad)
		}
	}
}

func FuzzReadJournal(f *testing.F) {
	var j Journal
	j.Record(0, "t", map[string]any{"a": 1}, transport.ToolResult{Value: []any{1.0, "x"}}, "")
	j.Record(1, "u", nil, transport.ToolResult{Err: &transport.ToolError{Type: "ToolError", Message: "no"}}, "")
	data, err := j.Marshal([]string{"t(a=1)", "u()"}, &PendingCall{Block: 1, Tool: "v", Args: strings.Repeat("1", 64), CallID: "c"})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte(`{"version":1,"blocks":[],"entries":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, err := ReadJournal(data)
		if err != nil {
			return
		}
		r := rec.Journal
		// What was read is answerable and writes back as it was read.
		for _, e := range r.Entries() {
			if _, _, _, err := r.Answer(e.Block, e.Tool, nil); err != nil {
				var de *DivergenceError
				if !errors.As(err, &de) {
					t.Fatalf("Answer: %v", err)
				}
			}
		}
		again, err := r.Marshal(rec.Blocks, rec.Pending)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ReadJournal(again); err != nil {
			t.Fatalf("a journal read back does not read again: %v", err)
		}
	})
}
