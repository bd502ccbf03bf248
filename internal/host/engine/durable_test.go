package engine

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/adk-codemode/codemode/transport"
)

// TestRecordSavedLoadedSpent: a paused turn's record is saved under the
// execute_code call, read back whole, and once spent reads as nothing to
// resume.
func TestRecordSavedLoadedSpent(t *testing.T) {
	ctx := t.Context()
	s := memStore{}
	var log TurnLog
	log.AddBlock("x = 1")
	seq := log.AddBlock("pay()")
	log.Journal.Record(0, "record", map[string]any{"label": "one"}, transport.ToolResult{Value: "ok"}, "")
	f := &Block{seq: seq}
	req := NewApprovalRequest("send_money", "codemode-c-2", map[string]any{"amount": 5.0}, Confirmation{})
	expires := time.Now().Add(time.Hour)
	if err := SaveRecord(ctx, s, &log, "adk-call-1", f, req, expires); err != nil {
		t.Fatal(err)
	}
	if rec, err := LoadRecord(ctx, s, "adk-other"); rec != nil || err != nil {
		t.Errorf("the record of another call: %v, %v", rec, err)
	}
	rec, err := LoadRecord(ctx, s, "adk-call-1")
	if err != nil || rec == nil {
		t.Fatalf("LoadRecord: %v, %v", rec, err)
	}
	digest, _ := ArgsDigest(req.Args)
	want := &PendingCall{Block: 1, Tool: "send_money", Args: digest, CallID: "codemode-c-2", Expires: expires.UnixMilli()}
	if !cmp.Equal(rec.Blocks, []string{"x = 1", "pay()"}) || !cmp.Equal(rec.Pending, want) || rec.Journal.Len() != 1 {
		t.Errorf("read back %q, %+v, %d calls", rec.Blocks, rec.Pending, rec.Journal.Len())
	}
	if err := SpendRecord(ctx, s, rec, "adk-call-1"); err != nil {
		t.Fatal(err)
	}
	if rec, err := LoadRecord(ctx, s, "adk-call-1"); rec == nil || rec.Pending != nil || err != nil {
		t.Errorf("a spent record: %+v, %v; want one with no call pending", rec, err)
	}
	// Past its wait, a record resumes nothing.
	if err := SaveRecord(ctx, s, &log, "adk-call-3", f, req, time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if rec, err := LoadRecord(ctx, s, "adk-call-3"); rec != nil || err != nil {
		t.Errorf("an expired record: %v, %v; want nothing to resume", rec, err)
	}
	log.Journal.overflowed = true
	if err := SaveRecord(ctx, s, &log, "adk-call-2", f, req, expires); err == nil {
		t.Error("an overflowed record was saved")
	}
}

// TestReplayTakesThePendingCallOnce: the pending call is the one of its
// block, tool and arguments, and only the first time it comes; then the
// block's calls are live.
func TestReplayTakesThePendingCallOnce(t *testing.T) {
	r := &Replay{Journal: &Journal{}, Pending: PendingCall{Block: 1, Tool: "pay", Args: "d"}}
	if r.Live(0) || r.Live(1) || !r.Live(2) {
		t.Error("before the pending call, only blocks after its block are live")
	}
	if r.take(0, "pay", "d") || r.take(1, "pay", "e") || r.take(1, "other", "d") {
		t.Error("a call that is not the pending one was taken for it")
	}
	if !r.take(1, "pay", "d") || r.take(1, "pay", "d") {
		t.Error("the pending call was not taken once")
	}
	if !r.Live(1) {
		t.Error("after its pending call, the block is live")
	}
}
