package docker_test

import (
	"context"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/backend/docker"
	"github.com/adk-codemode/codemode/backend/warm"
	"github.com/adk-codemode/codemode/transport"
)

// TestPool hands over a container started ahead: it has the tools package
// the session asked for, its calls reach the handler given to Open, and
// nothing of another session is in it.
func TestPool(t *testing.T) {
	p := &warm.Pool{Backend: engine(t, docker.Config{}), Size: 1}
	defer p.Close()
	files := map[string][]byte{"tools/__init__.py": []byte(
		"from codemode_runtime import call\n\ndef hello(name):\n    return call('hello', {'name': name})\n")}
	tools := func(tag string) transport.ToolHandler {
		return transport.ToolHandlerFunc(func(ctx context.Context, c transport.ToolCall) transport.ToolResult {
			return transport.ToolResult{Value: tag + ":" + c.Args["name"].(string)}
		})
	}
	for i, tag := range []string{"first", "second"} {
		s, err := p.Open(t.Context(), transport.SessionConfig{Files: files, Tools: tools(tag)})
		if err != nil {
			t.Fatal(err)
		}
		r, err := s.Exec(t.Context(), transport.Block{Code: "import os\nfrom tools import hello\nprint(hello('x'), sorted(os.listdir('/workspace')))\nopen('/workspace/mark', 'w').close()", Timeout: 30 * time.Second})
		if err != nil || r.Stdout != tag+":x []\n" {
			t.Fatalf("session %d: %v %+v", i, err, r)
		}
		_ = s.Close()
		if i == 0 {
			for deadline := time.Now().Add(60 * time.Second); p.Ready() == 0; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the pool did not refill")
				}
			}
		}
	}
}
