package jail_test

import (
	"context"
	"fmt"
	"time"

	"github.com/adk-codemode/codemode/backend/jail"
	"github.com/adk-codemode/codemode/transport"
)

// A jailed session keeps its variables from one block to the next.
func ExampleBackend() {
	ctx := context.Background()
	s, err := (&jail.Backend{Config: jail.Config{MemoryBytes: 512 << 20}}).Open(ctx, transport.SessionConfig{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	for _, code := range []string{
		"import socket\nanswer = 6 * 7",
		"print(answer, socket.gethostname())",
	} {
		r, err := s.Exec(ctx, transport.Block{Code: code, Timeout: 30 * time.Second})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Print(r.Stdout)
	}
	// Output:
	// 42 sandbox
}
