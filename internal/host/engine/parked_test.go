package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// pausedBlock launches a block paused at a request for approval, as
// approvalRun's code makes one, and returns it with the request.
func pausedBlock(t *testing.T) (*Block, *ApprovalRequest) {
	t.Helper()
	var attached *Block
	f := Launch{
		Code: "delete('a')", Attach: func(b *Block) { attached = b },
		Run: approvalRun(func() *Block { return attached }, time.Millisecond),
	}.Start(t.Context())
	req := f.Follow(t.Context())
	if req == nil {
		t.Fatal("the block did not pause")
	}
	return f, req
}

// stopped records the turns a Parked stopped.
type stopped struct {
	mu    sync.Mutex
	turns []string
}

func (s *stopped) stop(turn string) {
	s.mu.Lock()
	s.turns = append(s.turns, turn)
	s.mu.Unlock()
}

func (s *stopped) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.turns...)
}

// TestParkedTakeOnce: a parked block is taken once, by its session and
// call id; another session's answer, or a second one, finds nothing, and
// the model is told why.
func TestParkedTakeOnce(t *testing.T) {
	var st stopped
	r := NewParked(time.Minute, st.stop)
	f, req := pausedBlock(t)
	p := &ParkedBlock[string]{Session: "s1", CallID: "call-1", Turn: "turn-1", Block: f, Req: req}
	if !r.Park(p, true) {
		t.Fatal("Park refused")
	}
	if got, err := r.Take("s2", "call-1"); got != nil || err != nil {
		t.Errorf("another session took %+v, %v", got, err)
	}
	if got, err := r.Take("s1", "call-1"); got != p || err != nil {
		t.Fatalf("Take = %+v, %v; want the parked block", got, err)
	}
	if got, _ := r.Take("s1", "call-1"); got != nil {
		t.Error("a parked block was taken twice")
	}
	if msg := r.Unknown("s1", "call-1"); !strings.Contains(msg, "no longer holds that code") {
		t.Errorf("Unknown = %q", msg)
	}
	f.Answer(Confirmation{Confirmed: true})
	if f.Follow(t.Context()) != nil {
		t.Fatal("the block paused again")
	}
	if len(st.list()) != 0 {
		t.Errorf("turns stopped: %v", st.list())
	}
}

// TestParkedExpires: a block whose answer does not come in time is
// stopped with its turn; the model gets a notice once, in the next result
// of its session or as the answer that came too late.
func TestParkedExpires(t *testing.T) {
	var st stopped
	r := NewParked(100*time.Millisecond, st.stop)
	f, req := pausedBlock(t)
	r.Park(&ParkedBlock[string]{Session: "s1", CallID: "call-1", Turn: "turn-1", Block: f, Req: req}, true)
	if f.Follow(t.Context()) != nil {
		t.Fatal("the block paused again")
	}
	res, _, _ := f.Outcome()
	if res == nil || !strings.Contains(res.Stdout, "no approval came in time") {
		t.Fatalf("Outcome = %+v; want the call not run, for want of an answer", res)
	}
	for deadline := time.Now().Add(10 * time.Second); len(st.list()) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the expired block's turn was not stopped")
		}
	}
	if got := st.list(); len(got) != 1 || got[0] != "turn-1" {
		t.Errorf("turns stopped: %v", got)
	}
	if got, _ := r.Take("s1", "call-1"); got != nil {
		t.Error("an expired block was taken")
	}
	if msg := r.Unknown("s1", "call-1"); !strings.Contains(msg, "no answer came within 0.1s") || strings.HasPrefix(msg, "[") {
		t.Errorf("Unknown = %q; want the notice, unbracketed", msg)
	}
	if out := r.Notices("s1", "x"); out != "x" {
		t.Errorf("the notice was given twice: %q", out)
	}
}

// TestParkedNotices: a notice reaches the next result of its session once.
func TestParkedNotices(t *testing.T) {
	var st stopped
	r := NewParked(50*time.Millisecond, st.stop)
	f, req := pausedBlock(t)
	r.Park(&ParkedBlock[string]{Session: "s1", CallID: "call-1", Turn: "turn-1", Block: f, Req: req}, true)
	for deadline := time.Now().Add(10 * time.Second); len(st.list()) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the block did not expire")
		}
	}
	if out := r.Notices("s2", ""); out != "" {
		t.Errorf("another session got %q", out)
	}
	if out := r.Notices("s1", "printed"); !strings.HasPrefix(out, "printed\n[The code of execute_code call call-1") {
		t.Errorf("Notices = %q", out)
	}
	if out := r.Notices("s1", ""); out != "" {
		t.Errorf("a notice was given twice: %q", out)
	}
}

// TestParkedContinuation: a block parked again after a resume is
// announced by the next model request of the invocation that resumed it,
// once, and then by the execute_code call that request makes, once.
func TestParkedContinuation(t *testing.T) {
	var st stopped
	r := NewParked(time.Minute, st.stop)
	f, req := pausedBlock(t)
	p := &ParkedBlock[string]{Session: "s1", CallID: "codemode-approval-1", Turn: "turn-1", Block: f, Req: req}
	r.Park(p, false)
	r.Continue(p, "inv-2")
	if got := r.Continuation("inv-1"); got != nil {
		t.Error("another invocation announced the block")
	}
	if got := r.Continuation("inv-2"); got != p {
		t.Fatalf("Continuation = %+v", got)
	}
	if got := r.Continuation("inv-2"); got != nil {
		t.Error("the block was announced twice")
	}
	if got := r.Announce("s1", "codemode-approval-1"); got != p {
		t.Fatalf("Announce = %+v", got)
	}
	if got := r.Announce("s1", "codemode-approval-1"); got != nil {
		t.Error("the request was put on two events")
	}
	r.Close()
	if f.Follow(t.Context()) != nil {
		t.Fatal("the block paused again")
	}
	if res, _, _ := f.Outcome(); res == nil || !strings.Contains(res.Stdout, ErrClosed.Error()) {
		t.Errorf("Outcome after Close = %+v; want the block stopped with ErrClosed", res)
	}
	if got := st.list(); len(got) != 1 {
		t.Errorf("turns stopped at Close: %v", got)
	}
	if _, err := r.Take("s1", "codemode-approval-1"); !errors.Is(err, ErrClosed) {
		t.Errorf("Take after Close: %v", err)
	}
	g, req2 := pausedBlock(t)
	if r.Park(&ParkedBlock[string]{Session: "s1", CallID: "c", Turn: "t", Block: g, Req: req2}, true) {
		t.Error("a block was parked after Close")
	}
	g.Cancel(context.Canceled)
}

// TestApprovalShowsBoundedCode: a long block's code reaches the person cut
// at a character's start, and says so, in the payload Code Mode makes and
// in the hint beside a tool's own payload.
func TestApprovalShowsBoundedCode(t *testing.T) {
	code := strings.Repeat("x", MaxShownCode-1) + "é" + strings.Repeat("y", 100)
	r := &ApprovalRequest{Tool: "delete_file", Args: map[string]any{"path": "a"}, Code: code}
	conf := r.Confirmation("call-1")
	p, _ := conf.Payload.(map[string]any)
	got, _ := p["code"].(string)
	if p["code_truncated"] != true || len(got) != MaxShownCode-1 || !strings.HasPrefix(code, got) || !utf8.ValidString(got) {
		t.Errorf("payload code of %d bytes (truncated %v), want the first %d, whole characters only", len(got), p["code_truncated"], MaxShownCode-1)
	}
	r.Conf.Payload = map[string]any{"own": true}
	conf = r.Confirmation("call-1")
	if fmt.Sprint(conf.Payload) != "map[own:true]" {
		t.Errorf("the tool's own payload became %v", conf.Payload)
	}
	if !strings.HasSuffix(conf.Hint, fmt.Sprintf("The block's code (its first %d bytes):\n%s", MaxShownCode-1, code[:MaxShownCode-1])) {
		t.Errorf("hint %q, want the code's first bytes at its end", conf.Hint[:min(len(conf.Hint), 200)])
	}
	r.Code = "print(1)"
	if conf = r.Confirmation("call-1"); !strings.HasSuffix(conf.Hint, "The block's code:\nprint(1)") {
		t.Errorf("hint %q, want the whole short code at its end", conf.Hint)
	}
}
