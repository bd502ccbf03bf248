package mcpcommand_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/adk-codemode/codemode/internal/testsupport/npmtest"
	"github.com/adk-codemode/codemode/toolset/mcpcommand"
)

// everything returns a transport for the MCP reference server over stdio.
func everything(t *testing.T) *mcpcommand.Transport {
	t.Helper()
	tr := &mcpcommand.Transport{
		Args: []string{"node", npmtest.Everything(t), "stdio"},
		// Its gzip tool fetches URLs: allow it no domain.
		Env:               append(os.Environ(), "GZIP_ALLOWED_DOMAINS=invalid"),
		TerminateDuration: time.Second,
	}
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

func echo(ctx context.Context, cs *mcp.ClientSession, msg string) error {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": msg}})
	if err != nil {
		return err
	}
	if len(res.Content) == 0 || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, msg) {
		return errors.New("echo answered something else")
	}
	return nil
}

// TestRestartAfterTheServerIsKilled kills a real server by its PID: a call
// on the dead connection fails saying the process was killed, and the
// next connection starts a fresh process whose calls work, as ADK's
// mcptoolset reconnects.
func TestRestartAfterTheServerIsKilled(t *testing.T) {
	tr := everything(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "mcpcommand-test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := echo(ctx, cs, "first"); err != nil {
		t.Fatal(err)
	}
	pid := tr.Pid()
	if pid <= 0 {
		t.Fatalf("Pid() = %d with a server running", pid)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err = echo(ctx, cs, "on the dead connection")
	if err == nil {
		t.Fatal("a call reached a killed server")
	}
	if !strings.Contains(err.Error(), "signal: killed") || !strings.Contains(err.Error(), "index.js stdio") {
		t.Errorf("the call's error %q does not say that the server (node ... index.js stdio) was killed", err)
	}
	_ = cs.Close()

	cs, err = c.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("reconnect: %v", err)
	}
	defer cs.Close()
	if again := tr.Pid(); again <= 0 || again == pid {
		t.Errorf("Pid() = %d after the reconnect; want a fresh process, not %d", again, pid)
	}
	if err := echo(ctx, cs, "second"); err != nil {
		t.Fatalf("a call after the restart: %v", err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if tr.Pid() != 0 {
		t.Error("a process runs after Close")
	}
	if _, err := tr.Connect(ctx); !errors.Is(err, mcpcommand.ErrClosed) {
		t.Errorf("Connect after Close: %v, want ErrClosed", err)
	}
}

// TestStartFailureSaysWhy: a server that exits at once, and one that
// cannot be started, give errors that name the cause.
func TestStartFailureSaysWhy(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "mcpcommand-test", Version: "1"}, nil)
	tr := &mcpcommand.Transport{Args: []string{"/bin/sh", "-c", "echo 'settings.json is missing' >&2; exit 3"}}
	defer tr.Close()
	_, err := c.Connect(ctx, tr, nil)
	if err == nil || !strings.Contains(err.Error(), "exited with status 3") || !strings.Contains(err.Error(), "settings.json is missing") {
		t.Errorf("a server that exits at once: %v; want its status and its standard error", err)
	}
	missing := &mcpcommand.Transport{Args: []string{"/nonexistent/mcp-server"}}
	_, err = c.Connect(ctx, missing, nil)
	if err == nil || !strings.Contains(err.Error(), `start the MCP server "/nonexistent/mcp-server"`) {
		t.Errorf("a server that cannot start: %v", err)
	}
	if _, err := (&mcpcommand.Transport{}).Connect(ctx); err == nil || !strings.Contains(err.Error(), "Args is empty") {
		t.Errorf("no command: %v", err)
	}
}
