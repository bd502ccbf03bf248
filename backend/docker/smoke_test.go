package docker_test

import (
	"testing"
	"time"

	"github.com/adk-codemode/codemode/backend/docker"
	"github.com/adk-codemode/codemode/transport"
)

func TestSmoke(t *testing.T) {
	b := engine(t, docker.Config{})
	e, err := b.Enforced(t.Context())
	t.Logf("%+v %v", e, err)
	start := time.Now()
	s, err := b.Open(t.Context(), transport.SessionConfig{Files: map[string][]byte{"tools/__init__.py": []byte("x=5\n")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Log("open", time.Since(start))
	r, err := s.Exec(t.Context(), transport.Block{Code: "import tools, os; print(tools.x, os.getuid())"})
	t.Logf("%+v %v", r, err)
	start = time.Now()
	s.Close()
	t.Log("close", time.Since(start))
}
