package mcpserver

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"

	"github.com/adk-codemode/codemode/plugin/codemode"
)

type transferArgs struct {
	Amount int `json:"amount"`
}

// approvalServer serves a tool that needs a person's approval.
func approvalServer(t *testing.T) *Server {
	t.Helper()
	transfer, err := functiontool.New(functiontool.Config{Name: "transfer", Description: "Send money.", RequireConfirmation: true},
		func(_ agent.Context, a transferArgs) (map[string]any, error) {
			return map[string]any{"sent": a.Amount}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return newTestServer(t, Config{CodeMode: codemode.Config{Tools: []tool.Tool{transfer}}})
}

// elicitingClient connects a client that answers every elicitation with
// answer, and records the messages it was asked.
func elicitingClient(t *testing.T, s *Server, answer *mcp.ElicitResult) (*mcp.ClientSession, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var asked []string
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			asked = append(asked, req.Params.Message)
			mu.Unlock()
			return answer, nil
		},
	})
	ct, st := mcp.NewInMemoryTransports()
	if _, err := s.MCP().Connect(t.Context(), st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := c.Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), asked...)
	}
}

const transferCode = `from tools import transfer, ToolDeniedError
before = "kept"
try:
    print("sent", transfer(amount=5)["sent"])
except ToolDeniedError as e:
    print("denied")
print(before)`

func TestApprovalByElicitation(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer *mcp.ElicitResult
		want   string
	}{
		{"approve", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, "sent 5\nkept\n"},
		{"decline", &mcp.ElicitResult{Action: "decline"}, "denied\nkept\n"},
		{"accept without approving", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": false}}, "denied\nkept\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, asked := elicitingClient(t, approvalServer(t), tc.answer)
			text, isErr := callTool(t, t.Context(), cs, ExecuteTool, map[string]any{"code": transferCode})
			if isErr || text != tc.want {
				t.Errorf("execute: got (error %v) %q, want %q", isErr, text, tc.want)
			}
			if q := asked(); len(q) != 1 || !strings.Contains(q[0], "transfer") {
				t.Errorf("the client was asked %q, want one question naming the tool", q)
			}
			// The block resumed in the same sandbox: its state stays.
			text, _ = callTool(t, t.Context(), cs, ExecuteTool, map[string]any{"code": "print(before)"})
			if text != "kept\n" {
				t.Errorf("after the approval: %q, want the variable kept", text)
			}
		})
	}
}

func TestApprovalWithoutElicitation(t *testing.T) {
	cs := connect(t, approvalServer(t))
	text, isErr := callTool(t, t.Context(), cs, ExecuteTool, map[string]any{"code": transferCode})
	if isErr || !strings.HasPrefix(text, "denied\nkept\n") || !strings.Contains(text, "does not support elicitation") {
		t.Errorf("execute: got (error %v) %q, want the call declined, saying why", isErr, text)
	}
}

// TestApprovalNeverAnswered: a client that gets the question and calls
// execute again without answering has the paused call declined, and the
// new code runs; a retry with a state that names nothing is refused.
func TestApprovalNeverAnswered(t *testing.T) {
	s := approvalServer(t)
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
		},
	})
	ct, st := mcp.NewInMemoryTransports()
	if _, err := s.MCP().Connect(t.Context(), st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := c.Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: ExecuteTool, Arguments: map[string]any{"code": transferCode}})
	if err != nil {
		t.Fatal(err)
	}
	ask, ok := res.InputRequests[approvalInput].(*mcp.ElicitParams)
	if !res.NeedsInput() || !ok || res.RequestState == "" || !strings.Contains(ask.Message, "transfer") {
		t.Fatalf("want a question naming the tool and a request state, got %+v", res)
	}
	text, isErr := callTool(t, t.Context(), cs, ExecuteTool, map[string]any{"code": "print(before)"})
	if isErr || text != "kept\n" {
		t.Errorf("a new call while the block awaits approval: got (error %v) %q, want it declined, its variables kept", isErr, text)
	}
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: ExecuteTool, Arguments: map[string]any{"code": "print(1)"}, RequestState: "forged"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "names no block awaiting approval") {
		t.Errorf("a forged request state: want an error, got %+v", res)
	}
}
