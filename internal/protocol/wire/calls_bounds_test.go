package wire

import (
	"context"
	"errors"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/transport"
)

// heapAfterGC returns the live heap after a full collection.
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestCallTimeoutReleasesContext: a finished call with a timeout leaves
// nothing registered with the session's context. Each call used to leave
// a context of about 114 bytes behind until the session ended.
func TestCallTimeoutReleasesContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := NewCalls(ctx, transport.SessionConfig{Tools: transport.ToolHandlerFunc(func(ctx context.Context, call transport.ToolCall) transport.ToolResult {
		return transport.ToolResult{}
	})})
	reply := func(*ToolResultFrame) error { return nil }
	call := func(timeoutMS int64) {
		run := c.Start(&ToolCallFrame{ID: "c1", Name: "noop", TimeoutMS: timeoutMS}, reply)
		if run == nil {
			t.Fatal("call refused")
		}
		run()
	}
	for range 1000 { // warm up
		call(60_000)
	}
	const n = 100_000
	before := heapAfterGC()
	for range n {
		call(60_000)
	}
	after := heapAfterGC()
	// 100,000 leaked contexts take about 11 MB; allow a quarter of that.
	if after > before && after-before > 3<<20 {
		t.Errorf("the heap grew by %d bytes (%d per call) over %d finished calls with a timeout", after-before, (after-before)/n, n)
	}
}

// TestCallCancelAndTimeout: Cancel ends a call's context with and without
// a timeout of its own, and a timeout ends it too.
func TestCallCancelAndTimeout(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan string, 4)
	c := NewCalls(ctx, transport.SessionConfig{Tools: transport.ToolHandlerFunc(func(ctx context.Context, call transport.ToolCall) transport.ToolResult {
		started <- call.ID
		<-ctx.Done()
		return transport.ToolResult{}
	})})
	for _, tc := range []struct {
		id        string
		timeoutMS int64
		cancel    bool
		wantType  string // of the error in the result; "" means OK
	}{
		{"plain", 0, true, ""},
		{"timed", 600_000, true, ""},
		{"expires", 20, false, "TimeoutError"},
	} {
		results := make(chan *ToolResultFrame, 2)
		run := c.Start(&ToolCallFrame{ID: tc.id, Name: "wait", TimeoutMS: tc.timeoutMS}, func(f *ToolResultFrame) error {
			results <- f
			return nil
		})
		if run == nil {
			t.Fatalf("%s: refused", tc.id)
		}
		go run()
		<-started
		if tc.cancel {
			c.Cancel(tc.id)
		}
		select {
		case r := <-results:
			got := ""
			if r.Error != nil {
				got = r.Error.Type
			}
			if got != tc.wantType {
				t.Errorf("%s: result %+v, want error type %q", tc.id, r, tc.wantType)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: the call did not end", tc.id)
		}
	}
}

// TestCallsRefusalsBounded: refusals to a sandbox that does not read take
// one goroutine, not one each, and a bounded queue; past it Err says so.
func TestCallsRefusalsBounded(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := NewCalls(ctx, transport.SessionConfig{})
	unblock := make(chan struct{})
	writing, delivered := make(chan struct{}, 1), make(chan string, 1)
	reply := func(f *ToolResultFrame) error {
		select {
		case writing <- struct{}{}:
		default:
		}
		<-unblock // the sandbox does not read
		select {
		case delivered <- f.ID:
		default:
		}
		return nil
	}
	base := runtime.NumGoroutine()
	c.Start(&ToolCallFrame{ID: "", Name: "x"}, reply)
	<-writing
	for range 5000 {
		if run := c.Start(&ToolCallFrame{ID: "", Name: "x"}, reply); run != nil {
			t.Fatal("a call with an empty id was admitted")
		}
		if runtime.NumGoroutine()-base > 1000 {
			break
		}
	}
	if g := runtime.NumGoroutine() - base; g > 10 {
		t.Errorf("%d goroutines after refusing calls to a sandbox that does not read", g)
	}
	if err := c.Err(); err == nil || !strings.Contains(err.Error(), "does not read") {
		t.Errorf("Err() = %v, want the sandbox named as not reading", err)
	}
	close(unblock)
	select {
	case <-delivered:
	case <-time.After(20 * time.Second):
		t.Fatal("a queued refusal was not sent once the sandbox read")
	}
}

// TestClientRefusalsToSandboxNotReading: a remote sandbox that floods the
// host with bad tool calls and never reads does not make the host start a
// goroutine for each; the session ends with an error that says why.
func TestClientRefusalsToSandboxNotReading(t *testing.T) {
	base := runtime.NumGoroutine()
	host, sb := net.Pipe()
	defer sb.Close()
	wrote := make(chan int, 1)
	go func() {
		c := NewConn(sb, sb, sb, 0)
		ready(c)
		n := 0
		defer func() { wrote <- n }()
		for ; n < 20_000; n++ {
			if c.Write(&ToolCallFrame{ID: "", Name: "x", Args: map[string]any{}}) != nil {
				return
			}
			if n%100 == 0 && runtime.NumGoroutine()-base > 2000 {
				return // enough to fail; the race detector allows 8128
			}
		}
	}()
	s, err := NewClient(t.Context(), NewConn(host, host, host, 0), transport.SessionConfig{}, ClientOptions{ReadyTimeout: readyTimeout})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var n int
	select {
	case n = <-wrote:
	case <-time.After(60 * time.Second):
		t.Fatal("the sandbox's writes neither ended nor failed")
	}
	if g := runtime.NumGoroutine() - base; g > 100 {
		t.Fatalf("%d goroutines after %d tool calls from a sandbox that does not read", g, n)
	}
	deadline := time.Now().Add(20 * time.Second)
	for s.Err() == nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), "does not read") {
		t.Fatalf("Err() = %v after %d tool calls, want the session ended because the sandbox does not read", err, n)
	}
	_, err = s.Exec(t.Context(), transport.Block{Code: "x"})
	var ce *transport.ConnectionError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "does not read") {
		t.Errorf("Exec: %v, want a ConnectionError saying the sandbox does not read", err)
	}
}

// TestClientRefusalsReachReadingSandbox: with the writer in between, a
// sandbox that reads still gets every refusal and every result.
func TestClientRefusalsReachReadingSandbox(t *testing.T) {
	const bad, good = 300, 50
	got := make(chan map[string]int, 1)
	s, err := fakeSandbox(t, func(c *Conn) {
		ready(c)
		go func() {
			for range bad {
				_ = c.Write(&ToolCallFrame{ID: strings.Repeat("x", 129), Name: "t", Args: map[string]any{}})
			}
			for i := range good {
				_ = c.Write(&ToolCallFrame{ID: "ok" + string(rune('A'+i)), Name: "t", Args: map[string]any{}})
			}
		}()
		count := map[string]int{}
		for range bad + good {
			f, err := c.Read()
			if err != nil {
				break
			}
			r := f.(*ToolResultFrame)
			if r.OK {
				count["ok"]++
			} else {
				count[r.Error.Type]++
			}
		}
		got <- count
		_, _ = c.Read() // keep the session up until the host ends it
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	select {
	case count := <-got:
		if count["ok"] != good || count["ProtocolError"] != bad {
			t.Errorf("results %v, want %d ok and %d ProtocolError", count, good, bad)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the sandbox did not get its results")
	}
	if err := s.Err(); err != nil {
		t.Errorf("session ended: %v", err)
	}
}

// TestClientBoundsSandboxErrorTexts: error texts that come from the
// sandbox are cut to a bounded length wherever they end up.
func TestClientBoundsSandboxErrorTexts(t *testing.T) {
	huge := strings.Repeat("e", 1<<20)
	_, err := fakeSandbox(t, func(c *Conn) { _ = c.Write(&ErrorFrame{Message: huge}) })
	if err == nil || len(err.Error()) > 8<<10 {
		t.Errorf("start error of %d bytes, want at most 8 KiB", len(errText(err)))
	}

	s, err := fakeSandbox(t, func(c *Conn) {
		ready(c)
		if _, err := c.Read(); err != nil {
			return
		}
		// A number too long for exit_code: the JSON decoder quotes it.
		_ = c.WriteLine([]byte(`{"kind":"done","id":"b1","exit_code":` + strings.Repeat("9", 1<<20) + "}\n"))
		time.Sleep(time.Second)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.Exec(t.Context(), transport.Block{Code: "x"})
	if err == nil || len(err.Error()) > 8<<10 {
		t.Errorf("Exec error of %d bytes, want at most 8 KiB", len(errText(err)))
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
