package mcpserver

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestProtocolRevisions: a client of the 2026-07-28 revision, which has no
// protocol sessions, and one of the revision before it both keep their
// variables across execute calls: over a connection (stdio, here in
// memory) the connection is the session, whatever the revision; over
// streamable HTTP the server keeps sessions (codemode mcp --http's
// stateful handler), to which a 2026-07-28 client falls back, as the MCP
// Go SDK negotiates it. A stateless HTTP handler would lose them (see
// docs/mcp-server.md), so the server is never served that way.
func TestProtocolRevisions(t *testing.T) {
	s := newTestServer(t, Config{})
	keeps := func(t *testing.T, cs *mcp.ClientSession) {
		t.Helper()
		if text, isErr := callTool(t, t.Context(), cs, ExecuteTool, map[string]any{"code": "x = 41"}); isErr {
			t.Fatalf("first block: %s", text)
		}
		if text, _ := callTool(t, t.Context(), cs, ExecuteTool, map[string]any{"code": "print(x + 1)"}); text != "42\n" {
			t.Errorf("the second block saw %q: the variable was not kept", text)
		}
	}
	for _, rev := range []string{"2026-07-28", "2025-11-25"} {
		t.Run("connection/"+rev, func(t *testing.T) {
			ct, st := mcp.NewInMemoryTransports()
			if _, err := s.MCP().Connect(t.Context(), st, nil); err != nil {
				t.Fatal(err)
			}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "rev", Version: "1"}, nil).Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: rev})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if got := cs.InitializeResult().ProtocolVersion; got != rev {
				t.Errorf("negotiated %q, want %q", got, rev)
			}
			keeps(t, cs)
		})
		t.Run("http/"+rev, func(t *testing.T) {
			srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.MCP() }, nil))
			defer srv.Close()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "rev", Version: "1"}, nil).Connect(t.Context(),
				&mcp.StreamableClientTransport{Endpoint: srv.URL}, &mcp.ClientSessionOptions{ProtocolVersion: rev})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if cs.ID() == "" || strings.HasPrefix(cs.InitializeResult().ProtocolVersion, "2026") {
				t.Errorf("negotiated %q with session %q: want a revision with sessions", cs.InitializeResult().ProtocolVersion, cs.ID())
			}
			keeps(t, cs)
		})
	}
}
