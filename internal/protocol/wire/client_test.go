package wire

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/transport"
)

// fakeSandbox runs script on the sandbox end of a pipe while a Client
// talks to the other end.
func fakeSandbox(t *testing.T, script func(c *Conn)) (*Client, error) {
	t.Helper()
	host, sb := net.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		script(NewConn(sb, sb, sb, 0))
		sb.Close()
	}()
	t.Cleanup(func() { host.Close(); <-done })
	return NewClient(t.Context(), NewConn(host, host, host, 0), transport.SessionConfig{
		Tools: transport.ToolHandlerFunc(func(ctx context.Context, c transport.ToolCall) transport.ToolResult {
			return transport.ToolResult{Value: c.Name}
		}),
	}, ClientOptions{ReadyTimeout: readyTimeout})
}

// readyTimeout is generous: under a loaded machine a goroutine may wait
// long; only TestClientReadyTimeout lowers it.
var readyTimeout = 30 * time.Second

func ready(c *Conn) {
	_ = c.Write(&ReadyFrame{ProtocolVersion: ProtocolVersion, PythonVersion: "3.11.2"})
}

func TestClientRejectsOtherVersion(t *testing.T) {
	_, err := fakeSandbox(t, func(c *Conn) { _ = c.Write(&ReadyFrame{ProtocolVersion: ProtocolVersion + 1}) })
	var ve *transport.VersionError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v, want *transport.VersionError", err)
	}
}

func TestClientWantsReadyFirst(t *testing.T) {
	_, err := fakeSandbox(t, func(c *Conn) { _ = c.Write(&DoneFrame{ID: "b1"}) })
	if !errors.Is(err, ErrProtocol) {
		t.Fatalf("err = %v, want a protocol error", err)
	}
	_, err = fakeSandbox(t, func(c *Conn) { _ = c.Write(&ErrorFrame{Message: "no python"}) })
	if err == nil || !strings.Contains(err.Error(), "no python") {
		t.Fatalf("err = %v, want the sandbox's start error", err)
	}
}

func TestClientReadyTimeout(t *testing.T) {
	readyTimeout = 500 * time.Millisecond
	defer func() { readyTimeout = 30 * time.Second }()
	_, err := fakeSandbox(t, func(c *Conn) { time.Sleep(3 * time.Second) })
	if err == nil || !strings.Contains(err.Error(), "did not become ready") {
		t.Fatalf("err = %v", err)
	}
}

// TestClientStages checks how far a block got when the sandbox goes away.
func TestClientStages(t *testing.T) {
	cases := []struct {
		name  string
		after func(c *Conn, run *RunFrame)
		want  transport.Stage
	}{
		{"no done", func(c *Conn, run *RunFrame) {}, transport.Unknown},
		{"done, no output", func(c *Conn, run *RunFrame) { _ = c.Write(&DoneFrame{ID: run.ID}) }, transport.Ran},
		{"host-only frame", func(c *Conn, run *RunFrame) { _ = c.Write(&RunFrame{ID: "x", Code: ""}); time.Sleep(time.Second) }, transport.Unknown},
		{"wrong block", func(c *Conn, run *RunFrame) { _ = c.Write(&DoneFrame{ID: "other"}); time.Sleep(time.Second) }, transport.Unknown},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := fakeSandbox(t, func(c *Conn) {
				ready(c)
				f, err := c.Read()
				if err != nil {
					return
				}
				tc.after(c, f.(*RunFrame))
			})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			_, err = s.Exec(t.Context(), transport.Block{Code: "x"})
			var ce *transport.ConnectionError
			if !errors.As(err, &ce) || ce.Stage != tc.want {
				t.Fatalf("err = %v, want a ConnectionError at stage %s", err, tc.want)
			}
		})
	}
	s, err := fakeSandbox(t, func(c *Conn) { ready(c) })
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err = s.Exec(t.Context(), transport.Block{Code: "x"})
	var ce *transport.ConnectionError
	if !errors.As(err, &ce) || ce.Stage != transport.NotRun {
		t.Fatalf("Exec after Close: err = %v, want stage not run", err)
	}
}

func TestClientValidatesToolCalls(t *testing.T) {
	results := make(chan *ToolResultFrame, 4)
	s, err := fakeSandbox(t, func(c *Conn) {
		ready(c)
		_ = c.Write(&ToolCallFrame{ID: "", Name: "t", Args: map[string]any{}})
		_ = c.Write(&ToolCallFrame{ID: strings.Repeat("x", 200), Name: "t", Args: map[string]any{}})
		_ = c.Write(&ToolCallFrame{ID: "ok", Name: "good", Args: map[string]any{}})
		for i := 0; i < 3; i++ {
			f, err := c.Read()
			if err != nil {
				return
			}
			results <- f.(*ToolResultFrame)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var oks, errs int
	for i := 0; i < 3; i++ {
		select {
		case r := <-results:
			if r.OK {
				oks++
				if r.ID != "ok" || r.Value != "good" {
					t.Errorf("good call answered %+v", r)
				}
			} else {
				errs++
				if r.Error == nil || r.Error.Type != "ProtocolError" {
					t.Errorf("bad call answered %+v", r)
				}
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no answer")
		}
	}
	if oks != 1 || errs != 2 {
		t.Errorf("%d ok, %d errors; want 1 and 2", oks, errs)
	}
}

// TestClientDropsFramesOfOtherBlocks: done and output frames that name a
// block other than the running one are dropped and counted, never taken
// for the running block's; a tool call of another block is refused.
func TestClientDropsFramesOfOtherBlocks(t *testing.T) {
	refusal := make(chan *ToolResultFrame, 1)
	s, err := fakeSandbox(t, func(c *Conn) {
		ready(c)
		f, err := c.Read()
		if err != nil {
			return
		}
		run := f.(*RunFrame)
		_ = c.Write(&ToolCallFrame{ID: "c1", Block: "b-old", Name: "probe", Args: map[string]any{}})
		if f, err := c.Read(); err == nil {
			refusal <- f.(*ToolResultFrame)
		}
		_ = c.Write(&DoneFrame{ID: "b-old", ExitCode: 9})
		_ = c.Write(&OutputFrame{ID: "b-old", Stdout: "stale"})
		_ = c.Write(&DoneFrame{ID: run.ID})
		_ = c.Write(&OutputFrame{ID: run.ID, Stdout: "mine"})
		_, _ = c.Read() // the shutdown
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := s.Exec(t.Context(), transport.Block{Code: "x"})
	if err != nil {
		t.Fatalf("Exec: %v", err)
	}
	if r.ExitCode != 0 || r.Stdout != "mine" {
		t.Errorf("result %+v: want the running block's own done and output", r)
	}
	if n := s.Dropped(); n != 2 {
		t.Errorf("Dropped() = %d, want 2", n)
	}
	res := <-refusal
	if res.Error == nil || !strings.Contains(res.Error.Message, `block "b-old"`) {
		t.Errorf("the other block's tool call got %+v, want a refusal that names its block", res)
	}
}
