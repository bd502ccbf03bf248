package engine

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/transport"
)

// fakeSandbox opens fakeSessions whose Execs fail with errs, in order,
// then run; each open after the first takes reopen.
type fakeSandbox struct {
	mu        sync.Mutex
	errs      []error
	reopen    time.Duration
	opened    int
	discarded int
	closed    bool
}

func (s *fakeSandbox) Session(ctx context.Context) (transport.Session, bool, error) {
	s.mu.Lock()
	s.opened++
	n := s.opened
	s.mu.Unlock()
	if n > 1 && s.reopen > 0 {
		select {
		case <-time.After(s.reopen):
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
	return &fakeSession{s: s}, true, nil
}

func (s *fakeSandbox) Discard(transport.Session) {
	s.mu.Lock()
	s.discarded++
	s.mu.Unlock()
}

func (s *fakeSandbox) Closed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

type fakeSession struct{ s *fakeSandbox }

func (f *fakeSession) Environment() transport.Environment { return transport.Environment{} }
func (f *fakeSession) Exec(ctx context.Context, blk transport.Block) (*transport.Result, error) {
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	if len(f.s.errs) > 0 {
		err := f.s.errs[0]
		f.s.errs = f.s.errs[1:]
		return nil, err
	}
	return &transport.Result{Stdout: "ran " + blk.Code}, nil
}
func (f *fakeSession) ReadFile(context.Context, string) ([]byte, error) { return nil, nil }
func (f *fakeSession) Close() error                                     { return nil }

// TestRunBlockClasses: a block that was never sent runs once more in a
// fresh sandbox; one that may have run, or ran, is not run again, and the
// model is told which; a lost sandbox is dropped.
func TestRunBlockClasses(t *testing.T) {
	lost := errors.New("socket closed")
	conn := func(st transport.Stage) error { return &transport.ConnectionError{Stage: st, Err: lost} }
	for _, tc := range []struct {
		name       string
		errs       []error
		wantStdout string
		wantStage  string // the LostError's, or "" for none
		wantMsg    string // in what the model is told
		wantOpened int
	}{
		{"not run is retried once", []error{conn(transport.NotRun)}, "ran x", "", "", 2},
		{"not run twice", []error{conn(transport.NotRun), conn(transport.NotRun)}, "", "not_run", "could not be reached, so the code did not run", 2},
		{"unknown is not retried", []error{conn(transport.Unknown)}, "", "unknown", "It may or may not have run", 1},
		{"ran is not retried", []error{conn(transport.Ran)}, "", "ran", "The code ran, but the connection to the sandbox was lost", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sb := &fakeSandbox{errs: tc.errs}
			res, _, err := RunBlock(t.Context(), sb, Budgets{}, transport.Block{Code: "x"}, nil)
			var le *LostError
			switch {
			case tc.wantStage == "" && err != nil:
				t.Fatalf("RunBlock: %v", err)
			case tc.wantStage == "" && res.Stdout != tc.wantStdout:
				t.Errorf("stdout %q, want %q", res.Stdout, tc.wantStdout)
			case tc.wantStage != "" && (!errors.As(err, &le) || le.Stage != tc.wantStage || !strings.Contains(le.Msg, tc.wantMsg)):
				t.Errorf("err = %v, want a LostError of stage %s telling the model %q", err, tc.wantStage, tc.wantMsg)
			}
			if sb.opened != tc.wantOpened || sb.discarded != len(tc.errs) {
				t.Errorf("opened %d, discarded %d sandboxes; want %d and %d", sb.opened, sb.discarded, tc.wantOpened, len(tc.errs))
			}
		})
	}
}

// TestRunBlockOnAFreshSandboxSaysSo: code that ran again in a fresh
// sandbox after the turn's was lost tells the model its state is gone.
func TestRunBlockOnAFreshSandboxSaysSo(t *testing.T) {
	sb := &fakeSandbox{errs: []error{&transport.ConnectionError{Stage: transport.NotRun, Err: errors.New("gone")}}}
	// The first sandbox was not fresh: earlier blocks used it.
	notFresh := sandboxFunc{sb, func(n int) bool { return n > 1 }}
	res, _, err := RunBlock(t.Context(), notFresh, Budgets{}, transport.Block{Code: "x"}, nil)
	if err != nil || !strings.Contains(res.Stderr, "ran in a fresh sandbox") {
		t.Fatalf("RunBlock = %+v, %v; want stderr saying the code ran in a fresh sandbox", res, err)
	}
}

// sandboxFunc is a fakeSandbox whose n-th session is fresh as fresh says.
type sandboxFunc struct {
	*fakeSandbox
	fresh func(n int) bool
}

func (s sandboxFunc) Session(ctx context.Context) (transport.Session, bool, error) {
	sess, _, err := s.fakeSandbox.Session(ctx)
	return sess, s.fresh(s.opened), err
}

// TestRunBlockClosed: once Code Mode is closed, a lost sandbox ends the
// block with ErrClosed, not a message to the model.
func TestRunBlockClosed(t *testing.T) {
	sb := &fakeSandbox{errs: []error{&transport.ConnectionError{Stage: transport.Unknown, Err: errors.New("closed")}}, closed: true}
	if _, _, err := RunBlock(t.Context(), sb, Budgets{}, transport.Block{Code: "x"}, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("err = %v, want ErrClosed", err)
	}
}

// TestRetryDoesNotRunTheClock: the time a fresh sandbox takes to start,
// after the turn's was lost before the code was sent, does not count
// against the block's run time, as no sandbox's start does.
func TestRetryDoesNotRunTheClock(t *testing.T) {
	sb := &fakeSandbox{errs: []error{&transport.ConnectionError{Stage: transport.NotRun, Err: errors.New("lost")}}, reopen: 600 * time.Millisecond}
	f := Launch{Code: "x", Timeout: 300 * time.Millisecond, Run: func(ctx context.Context, blk transport.Block, clock *RunClock) (*transport.Result, transport.Session, error) {
		return RunBlock(ctx, sb, Budgets{}, blk, clock)
	}}.Start(t.Context())
	if req := f.Follow(t.Context()); req != nil {
		t.Fatalf("the block paused at %+v", req)
	}
	if res, _, err := f.Outcome(); err != nil || res.Stdout != "ran x" {
		t.Fatalf("Outcome = %+v, %v; want the code run once the fresh sandbox started", res, err)
	}
}

// approvalRun is code that makes one tool call which asks for approval,
// then, approved, runs for run (or until its context ends): what the
// adapters' tool calls do with the block. The block is handed to it by
// Attach.
func approvalRun(blockOf func() *Block, run time.Duration) RunFunc {
	return func(ctx context.Context, blk transport.Block, clock *RunClock) (*transport.Result, transport.Session, error) {
		clock.Start()
		f := blockOf()
		call := context.Background() // a tool call's own context, which the block's end does not end
		if res, ok := f.Enter(call); !ok {
			return &transport.Result{Stdout: "refused: " + res.Err.Message}, nil, nil
		}
		req := NewApprovalRequest("delete_file", f.NextCallID("exec-1"), map[string]any{"path": "a"}, Confirmation{Hint: "sure?", Confirmed: true})
		f.Leave() // the call returned with its request
		conf, res, ok := f.Ask(call, req)
		if !ok {
			return &transport.Result{Stdout: "not run: " + res.Err.Message}, nil, nil
		}
		defer f.Leave()
		if !conf.Confirmed {
			return &transport.Result{Stdout: "denied"}, nil, nil
		}
		select {
		case <-time.After(run):
			return &transport.Result{Stdout: "deleted"}, nil, nil
		case <-ctx.Done():
			return &transport.Result{Stdout: "stopped: " + context.Cause(ctx).Error()}, nil, nil
		}
	}
}

// TestBlockPausesForApproval: a call that asks for approval pauses the
// block once no call is in flight; other calls wait while it is paused;
// the answer resumes it, and the time it waited does not count against
// its run time.
func TestBlockPausesForApproval(t *testing.T) {
	for _, tc := range []struct {
		name    string
		confirm bool
		want    string
	}{
		{"approved", true, "deleted"},
		{"denied", false, "denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var attached *Block // set before the block's goroutine starts
			f := Launch{
				Code: "delete('a')", Timeout: 500 * time.Millisecond,
				Attach: func(b *Block) { attached = b },
				Run:    approvalRun(func() *Block { return attached }, 10*time.Millisecond),
			}.Start(t.Context())
			req := f.Follow(t.Context())
			if req == nil || req.Tool != "delete_file" || req.CallID != "codemode-exec-1-1" || req.Code != "delete('a')" || req.Conf.Hint != "sure?" || req.Conf.Confirmed {
				t.Fatalf("Follow = %+v, want the paused call with the block's code, not yet confirmed", req)
			}
			// Paused: a tool call waits, and gives up when its caller does.
			ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
			defer cancel()
			if res, ok := f.Enter(ctx); ok || res.Err == nil || res.Err.Type != "TimeoutError" {
				t.Errorf("a call while paused: %+v, %v; want it held, then cancelled", res, ok)
			}
			// Longer than the run time allowed: the wait does not count.
			time.Sleep(700 * time.Millisecond)
			f.Answer(Confirmation{Confirmed: tc.confirm})
			if again := f.Follow(t.Context()); again != nil {
				t.Fatalf("the block paused again at %+v", again)
			}
			if res, _, err := f.Outcome(); err != nil || res.Stdout != tc.want {
				t.Fatalf("Outcome = %+v, %v; want %q", res, err, tc.want)
			}
			if id := f.NextCallID("exec-2"); id != "codemode-exec-2-2" {
				t.Errorf("the next call's id is %s: calls are numbered across execute_code calls", id)
			}
		})
	}
}

// TestBlockTimesOutWhileRunning: the clock stops the block, with a cause
// that says the time awaiting approval did not count.
func TestBlockTimesOutWhileRunning(t *testing.T) {
	var attached *Block
	f := Launch{
		Code: "delete('a')", Timeout: 200 * time.Millisecond,
		Attach: func(b *Block) { attached = b },
		Run:    approvalRun(func() *Block { return attached }, time.Minute),
	}.Start(t.Context())
	if req := f.Follow(t.Context()); req == nil {
		t.Fatal("the block did not pause")
	}
	f.Answer(Confirmation{Confirmed: true})
	if again := f.Follow(t.Context()); again != nil {
		t.Fatalf("the block paused again at %+v", again)
	}
	res, _, err := f.Outcome()
	if err != nil || !strings.Contains(res.Stdout, "ran for longer than 0.2s") || !strings.Contains(res.Stdout, "awaited approval does not count") {
		t.Fatalf("Outcome = %+v, %v; want the code stopped by its run time, the wait not counted", res, err)
	}
}

// TestBlockEndsBeforeTheAnswer: a block cancelled while it awaits an
// answer ends; the call that asked is not run.
func TestBlockEndsBeforeTheAnswer(t *testing.T) {
	var attached *Block
	f := Launch{
		Code: "delete('a')", Attach: func(b *Block) { attached = b },
		Run: approvalRun(func() *Block { return attached }, time.Millisecond),
	}.Start(t.Context())
	if req := f.Follow(t.Context()); req == nil {
		t.Fatal("the block did not pause")
	}
	f.Cancel(errors.New("no approval came in time"))
	if again := f.Follow(t.Context()); again != nil {
		t.Fatalf("the block paused again at %+v", again)
	}
	res, _, _ := f.Outcome()
	if res == nil || res.Stdout != "not run: tool delete_file was not run: no approval came in time" {
		t.Fatalf("Outcome = %+v; want the call not run, with the cause", res)
	}
}
