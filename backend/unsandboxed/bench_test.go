//go:build linux

package unsandboxed_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/adk-codemode/codemode/backend/unsandboxed"
	"github.com/adk-codemode/codemode/transport"
)

func BenchmarkPrint(b *testing.B) {
	s, err := (&unsandboxed.Backend{}).Open(context.Background(), transport.SessionConfig{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for b.Loop() {
		if _, err := s.Exec(context.Background(), transport.Block{Code: "print(1)"}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkToolCall(b *testing.B) {
	s, err := (&unsandboxed.Backend{}).Open(context.Background(), transport.SessionConfig{Tools: transport.ToolHandlerFunc(func(ctx context.Context, c transport.ToolCall) transport.ToolResult {
		return transport.ToolResult{}
	})})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ResetTimer()
	r, err := s.Exec(context.Background(), transport.Block{Code: fmt.Sprintf("from codemode_runtime import call\nfor i in range(%d): call('noop', {})", b.N)})
	if err != nil || r.ExitCode != 0 {
		b.Fatal(err, r.Stderr)
	}
}
