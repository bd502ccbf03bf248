package unsandboxed_test

import (
	"context"
	"testing"

	"github.com/adk-codemode/codemode/transport"
	"github.com/adk-codemode/codemode/transport/unsandboxed"
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
