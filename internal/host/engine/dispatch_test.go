package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/transport"
)

// fakeExec is an adapter's execute_code call: the effects its tool calls
// landed.
type fakeExec struct {
	mu      sync.Mutex
	effects []string
}

func (e *fakeExec) land(what string) {
	e.mu.Lock()
	e.effects = append(e.effects, what)
	e.mu.Unlock()
}

func (e *fakeExec) landed() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.effects...)
}

// runningBlock launches a block whose code waits until release is
// closed, so that tool calls can be dispatched for it.
func runningBlock(t *testing.T) *Block {
	t.Helper()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	return Launch{Code: "x", Run: func(ctx context.Context, _ transport.Block, _ *RunClock) (*transport.Result, transport.Session, error) {
		<-release
		return &transport.Result{}, nil, nil
	}}.Start(t.Context())
}

func testDispatch(exec *fakeExec, call func(ctx context.Context, st *SurfaceTool[string], id string, ctl *CallControl, conf *Confirmation) (transport.ToolResult, *ApprovalRequest)) Dispatch[string, *fakeExec] {
	return Dispatch[string, *fakeExec]{
		Abandoned: new(atomic.Int64),
		Current:   func() (*fakeExec, string, bool) { return exec, "exec-1", true },
		Call: func(ctx context.Context, e *fakeExec, st *SurfaceTool[string], id string, _ map[string]any, ctl *CallControl, conf *Confirmation) (transport.ToolResult, *ApprovalRequest) {
			return call(ctx, st, id, ctl, conf)
		},
	}
}

// TestDispatchTimeout: a call past its timeout is answered with a
// TimeoutError at once, even if the tool ignores its context; its effects
// landing later are dropped, and it counts as abandoned until it returns.
func TestDispatchTimeout(t *testing.T) {
	exec := &fakeExec{}
	release, returned := make(chan struct{}), make(chan struct{})
	d := testDispatch(exec, func(ctx context.Context, st *SurfaceTool[string], id string, ctl *CallControl, _ *Confirmation) (transport.ToolResult, *ApprovalRequest) {
		defer close(returned)
		<-release // a tool that does not watch ctx
		if !ctl.Complete(func() { exec.land("late") }) {
			return transport.Errorf("TimeoutError", "abandoned"), nil
		}
		return transport.ToolResult{Value: "done"}, nil
	})
	d.ToolTimeout = 50 * time.Millisecond
	st := &SurfaceTool[string]{Name: "slow", Code: "slow"}
	res := d.Run(t.Context(), runningBlock(t), st, "", transport.ToolCall{Name: "slow"})
	if res.Err == nil || res.Err.Type != "TimeoutError" {
		t.Fatalf("res = %+v, want a TimeoutError", res)
	}
	if n := d.Abandoned.Load(); n != 1 {
		t.Errorf("%d calls abandoned while the tool runs, want 1", n)
	}
	close(release)
	<-returned
	for deadline := time.Now().Add(10 * time.Second); d.Abandoned.Load() != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the abandoned call is still counted after it returned")
		}
	}
	if got := exec.landed(); len(got) != 0 {
		t.Errorf("an abandoned call's effects landed: %v", got)
	}
}

// TestDispatchOnTime: a call within its timeout lands its effects, and
// its id numbers it among the block's calls.
func TestDispatchOnTime(t *testing.T) {
	exec := &fakeExec{}
	var ids []string
	d := testDispatch(exec, func(ctx context.Context, st *SurfaceTool[string], id string, ctl *CallControl, _ *Confirmation) (transport.ToolResult, *ApprovalRequest) {
		ids = append(ids, id)
		ctl.Complete(func() { exec.land(id) })
		return transport.ToolResult{Value: "ok"}, nil
	})
	d.ToolTimeout = time.Minute
	f := runningBlock(t)
	st := &SurfaceTool[string]{Name: "t", Code: "t"}
	for range 2 {
		if res := d.Run(t.Context(), f, st, "", transport.ToolCall{Name: "t"}); res.Err != nil || res.Value != "ok" {
			t.Fatalf("res = %+v", res)
		}
	}
	if got := exec.landed(); len(got) != 2 || got[0] != "codemode-exec-1-1" || got[1] != "codemode-exec-1-2" {
		t.Errorf("effects %v, want both calls' under their ids", got)
	}
}

// TestDispatchBudget: a call past the block's budget is refused without
// running.
func TestDispatchBudget(t *testing.T) {
	ran := 0
	d := testDispatch(&fakeExec{}, func(context.Context, *SurfaceTool[string], string, *CallControl, *Confirmation) (transport.ToolResult, *ApprovalRequest) {
		ran++
		return transport.ToolResult{Value: "ok"}, nil
	})
	d.Budgets = Budgets{ToolCalls: 1}
	f := runningBlock(t)
	st := &SurfaceTool[string]{Name: "t", Code: "t"}
	d.Run(t.Context(), f, st, "", transport.ToolCall{Name: "t"})
	res := d.Run(t.Context(), f, st, "", transport.ToolCall{Name: "t"})
	if res.Err == nil || res.Err.Type != BudgetType || ran != 1 {
		t.Errorf("the second call: %+v after %d runs; want it refused as %s, unrun", res, ran, BudgetType)
	}
}

// TestDispatchApproval: a call that asks for approval pauses the block;
// approved, it runs again with the answer; declined, the code gets
// ToolDeniedError and the tool does not run again.
func TestDispatchApproval(t *testing.T) {
	for _, tc := range []struct {
		name    string
		confirm bool
		want    string // the result's value or error type
	}{
		{"approved", true, "done"},
		{"declined", false, DeniedType},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runs []*Confirmation
			d := testDispatch(&fakeExec{}, func(_ context.Context, st *SurfaceTool[string], id string, _ *CallControl, conf *Confirmation) (transport.ToolResult, *ApprovalRequest) {
				runs = append(runs, conf)
				if conf == nil {
					return transport.ToolResult{}, NewApprovalRequest(st.Code, id, nil, Confirmation{Hint: "sure?"})
				}
				return transport.ToolResult{Value: "done"}, nil
			})
			f := runningBlock(t)
			got := make(chan transport.ToolResult, 1)
			go func() {
				got <- d.Run(context.Background(), f, &SurfaceTool[string]{Name: "rm", Code: "rm"}, "", transport.ToolCall{Name: "rm"})
			}()
			req := f.Follow(t.Context())
			if req == nil || req.Tool != "rm" || req.CallID != "codemode-exec-1-1" {
				t.Fatalf("Follow = %+v", req)
			}
			f.Answer(Confirmation{Confirmed: tc.confirm})
			res := <-got
			switch {
			case tc.confirm && (res.Err != nil || res.Value != "done" || len(runs) != 2 || runs[1] == nil || !runs[1].Confirmed):
				t.Errorf("res = %+v after runs %v; want the call run again with the approval", res, runs)
			case !tc.confirm && (res.Err == nil || res.Err.Type != tc.want || len(runs) != 1):
				t.Errorf("res = %+v after %d runs; want %s and no second run", res, len(runs), tc.want)
			}
		})
	}
}

// TestCallControl: a call is abandoned or completed, never both.
func TestCallControl(t *testing.T) {
	var running atomic.Int64
	c := &CallControl{}
	if !c.Complete(func() {}) || c.abandon(&running) || c.Abandoned() {
		t.Error("a completed call was abandoned")
	}
	c = &CallControl{}
	merged := false
	if !c.abandon(&running) || c.Complete(func() { merged = true }) || merged || !c.Abandoned() {
		t.Error("an abandoned call completed")
	}
	c.finish(&running)
	if running.Load() != 0 {
		t.Errorf("running = %d after the abandoned call finished", running.Load())
	}
}
