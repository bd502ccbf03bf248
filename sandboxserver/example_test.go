//go:build linux

package sandboxserver_test

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/adk-codemode/codemode/sandboxserver"
	"github.com/adk-codemode/codemode/transport"
)

// A session over a pair of pipes: Serve is the sandbox's end, Connect the
// host's, and the tool the code calls runs on the host. (The generated
// tools package, which a session's Files carry, wraps the same call.)
func ExampleConnect() {
	work, err := os.MkdirTemp("", "workspace-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(work)
	hostR, sandboxW := io.Pipe()
	sandboxR, hostW := io.Pipe()
	go func() {
		_ = sandboxserver.Serve(context.Background(), sandboxR, sandboxW, sandboxserver.Config{Python: "/usr/bin/python3", Workdir: work})
		sandboxW.Close()
	}()

	stream := struct {
		io.Reader
		io.WriteCloser
	}{hostR, hostW}
	tools := transport.ToolHandlerFunc(func(_ context.Context, call transport.ToolCall) transport.ToolResult {
		name, _ := call.Args["name"].(string)
		return transport.ToolResult{Value: map[string]any{"greeting": "hello, " + name}}
	})
	s, err := sandboxserver.Connect(context.Background(), stream, transport.SessionConfig{Tools: tools}, sandboxserver.ConnectOptions{})
	if err != nil {
		panic(err)
	}
	defer s.Close()
	r, err := s.Exec(context.Background(), transport.Block{
		Code: "from codemode_runtime import call\nprint(call('greet', {'name': 'sandbox'})['greeting'])",
	})
	if err != nil {
		panic(err)
	}
	fmt.Print(r.Stdout)
	// Output: hello, sandbox
}
