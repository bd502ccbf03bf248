package jail_test

import (
	"context"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/backend/jail"
	"github.com/adk-codemode/codemode/backend/warm"
	"github.com/adk-codemode/codemode/transport"
)

func waitPool(t testing.TB, p *warm.Pool) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); p.Ready() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the pool did not fill")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestPool hands over a pre-started jail: its tools package is the one the
// session asked for, tool calls reach the handler given to Open, and
// nothing of an earlier session is in it.
func TestPool(t *testing.T) {
	p := &warm.Pool{Backend: &jail.Backend{}, Size: 1}
	defer p.Close()
	files := map[string][]byte{"tools/__init__.py": []byte(
		"from codemode_runtime import call\n\ndef hello(name):\n    return call('hello', {'name': name})\n")}
	tools := func(tag string) transport.ToolHandler {
		return transport.ToolHandlerFunc(func(ctx context.Context, c transport.ToolCall) transport.ToolResult {
			return transport.ToolResult{Value: tag + ":" + c.Args["name"].(string)}
		})
	}
	s1, err := p.Open(t.Context(), transport.SessionConfig{Files: files, Tools: tools("first")})
	if err != nil {
		t.Fatal(err)
	}
	r, err := s1.Exec(t.Context(), transport.Block{Code: "from tools import hello\nsecret = 42\nopen('left-behind', 'w').write('x')\nprint(hello('a'))"})
	if err != nil || r.Stdout != "first:a\n" {
		t.Fatalf("%v %+v", err, r)
	}
	s1.Close()
	waitPool(t, p)

	s2, err := p.Open(t.Context(), transport.SessionConfig{Files: files, Tools: tools("second")})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	r, err = s2.Exec(t.Context(), transport.Block{Code: "import os\nfrom tools import hello\nprint(hello('b'), 'secret' in globals(), os.listdir('.'))"})
	if err != nil || r.Stdout != "second:b False []\n" {
		t.Fatalf("pooled session: %v %+v", err, r)
	}
}

// BenchmarkSessionStartPooled opens sessions from a pool of one
// pre-started jail and, in the same loop, spawns the interpreter bare. The
// refill after each Open is waited for outside the timed part.
func BenchmarkSessionStartPooled(b *testing.B) {
	be := &jail.Backend{}
	p := &warm.Pool{Backend: be, Size: 1}
	defer p.Close()
	s, err := p.Open(context.Background(), transport.SessionConfig{})
	if err != nil {
		b.Skip(err)
	}
	s.Close()
	benchOpenVsBare(b, be, p, func() { waitPool(b, p) })
}
