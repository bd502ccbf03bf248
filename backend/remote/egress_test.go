package remote_test

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/adk-codemode/codemode/backend/remote"
	"github.com/adk-codemode/codemode/egress"
	"github.com/adk-codemode/codemode/transport"
	"github.com/adk-codemode/codemode/transport/transporttest"
)

// egressOrigin is a loopback HTTP server that counts its requests.
func egressOrigin(t *testing.T) (port string, hits *atomic.Int64) {
	hits = new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprintf(w, "hello %s", r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	return strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port), hits
}

// testResolve makes the server's egress proxy resolve the test names to
// 127.0.0.1, and --egress-allow-address lets them reach it.
var testResolve = []string{"CODEMODE_SANDBOX_TEST_RESOLVE=api.test,other.test"}

// TestEgressJailed runs the egress suite (transporttest.RunEgress) on a
// session of a server started with --jail --egress: its code reaches the
// hosts on the allowlist through the server's own proxy, and nothing
// else; the backend that declares the same list names the hosts to the
// model, and the server logs its policy.
func TestEgressJailed(t *testing.T) {
	needJail(t)
	var s *server
	var allowed string
	transporttest.RunEgress(t, func(t *testing.T, policy *egress.Policy) transport.Session {
		allowed = strings.Join(policy.Allow, ",")
		s = startServer(t, testResolve, "--jail", "--egress", allowed, "--egress-allow-address", "127.0.0.0/8")
		b := newBackend(t, remote.Config{URL: s.URL(), Secret: testSecret, Egress: policy.Allow})
		if n := transport.NetworkOf(b); !strings.Contains(n, allowed) || !strings.Contains(n, "403") {
			t.Errorf("DescribeNetwork = %q: want the allowed host named", n)
		}
		sess, err := b.Open(t.Context(), transport.SessionConfig{})
		if err != nil {
			t.Fatalf("Open: %v\n%s", err, s.stderr())
		}
		t.Cleanup(func() { _ = sess.Close() })
		return sess
	})
	log := s.stderr()
	if !strings.Contains(log, "egress: code reaches only these hosts") || !strings.Contains(log, allowed) {
		t.Errorf("the server's log does not state its egress policy:\n%s", log)
	}
}

// TestEgressMismatchRefused: a session whose server enforces another
// allowlist than the backend declares, or none, is refused at Open with
// both lists named, before any code runs.
func TestEgressMismatchRefused(t *testing.T) {
	needJail(t)
	port, _ := egressOrigin(t)
	allowed := "api.test:" + port
	for name, tc := range map[string]struct {
		server   []string
		declared []string
		want     []string
	}{
		"another list":      {[]string{"--jail", "--egress", allowed, "--egress-allow-address", "127.0.0.1"}, []string{"other.test:" + port}, []string{"[" + allowed + "]", "[other.test:" + port + "]"}},
		"none declared":     {[]string{"--jail", "--egress", allowed, "--egress-allow-address", "127.0.0.1"}, nil, []string{"[" + allowed + "]", "declares [none]"}},
		"none enforced":     {[]string{"--jail"}, []string{allowed}, []string{"enforces the egress allowlist [none]", "[" + allowed + "]"}},
		"no jail, declared": {nil, []string{allowed}, []string{"[none]", "[" + allowed + "]"}},
	} {
		t.Run(name, func(t *testing.T) {
			s := startServer(t, testResolve, tc.server...)
			b := newBackend(t, remote.Config{URL: s.URL(), Secret: testSecret, Egress: tc.declared})
			sess, err := b.Open(t.Context(), transport.SessionConfig{})
			if err == nil {
				sess.Close()
				t.Fatal("Open succeeded: want the session refused")
			}
			var me *remote.EgressMismatchError
			if !errors.As(err, &me) {
				t.Fatalf("Open: %v: want an EgressMismatchError", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestEgressNeedsJail: --egress without --jail is refused at start, with
// why.
func TestEgressNeedsJail(t *testing.T) {
	_, err := launch(tempDir(t), nil, "--egress", "api.example.com:443")
	if err == nil || !strings.Contains(err.Error(), "--egress needs --jail") || !strings.Contains(err.Error(), "the container is the boundary") {
		t.Fatalf("launch: %v: want a refusal that says --egress needs --jail", err)
	}
}

// TestEgressTestResolverLoopbackOnly: the test resolver is refused by a
// server that listens on any address but loopback.
func TestEgressTestResolverLoopbackOnly(t *testing.T) {
	_, err := launch(tempDir(t), append(testResolve, "PORT=0"), "--jail", "--egress", "api.test:80", "--listen", "0.0.0.0:0")
	if err == nil || !strings.Contains(err.Error(), "for tests only") {
		t.Fatalf("launch: %v: want the test resolver refused off loopback", err)
	}
}
