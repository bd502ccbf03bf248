//go:build linux && amd64

package jail_test

import (
	"testing"
	"time"

	"github.com/adk-codemode/codemode/backend/jail"
	"github.com/adk-codemode/codemode/transport"
)

func TestZygoteSessionRuns(t *testing.T) {
	be := &jail.Backend{Zygote: true}
	t.Cleanup(func() {
		if err := be.Close(); err != nil {
			t.Error(err)
		}
	})
	for i := 0; i < 3; i++ {
		s, err := be.Open(t.Context(), transport.SessionConfig{})
		if err != nil {
			t.Fatal(err)
		}
		js := s.(*jail.Session)
		if err := js.Fallback(); err != nil {
			t.Fatalf("started cold: %v", err)
		}
		t.Logf("%s", js.Enforced())
		r, err := s.Exec(t.Context(), transport.Block{Code: "import os; print(os.getpid(), os.getuid())", Timeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%+v", r)
		s.Close()
	}
}
