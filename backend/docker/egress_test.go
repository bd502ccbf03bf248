package docker_test

import (
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/adk-codemode/codemode/backend/docker"
	"github.com/adk-codemode/codemode/egress"
	"github.com/adk-codemode/codemode/internal/testsupport/loopback"
	"github.com/adk-codemode/codemode/transport"
	"github.com/adk-codemode/codemode/transport/transporttest"
)

// TestEgressReachesAllowedHostsOnly runs the egress suite
// (transporttest.RunEgress) on a container, then checks what is Docker's
// own: the backend describes and meters the policy, the container has no
// network interface but loopback and the proxy's directory mounted
// read-only, and the directory is gone once the session is closed.
func TestEgressReachesAllowedHostsOnly(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where the backend makes the proxy's directory
	var b *docker.Backend
	var s transport.Session
	transporttest.RunEgress(t, func(t *testing.T, policy *egress.Policy) transport.Session {
		b = engine(t, docker.Config{Egress: policy})
		var err error
		if s, err = b.Open(t.Context(), transport.SessionConfig{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
	if !b.MetersEgress() || !strings.Contains(b.DescribeNetwork(), "api.test:") {
		t.Errorf("MetersEgress %v, DescribeNetwork %q: want the allowed host named", b.MetersEgress(), b.DescribeNetwork())
	}
	if out := ok(t, s, "import socket; print(sorted(n for _, n in socket.if_nameindex()))"); out != "['lo']\n" {
		t.Errorf("the container's interfaces: %q", out)
	}
	enf, err := b.Enforced(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(enf.Binds) != 1 || !strings.HasSuffix(enf.Binds[0], ":/run/codemode-egress:ro") || enf.NetworkMode != "none" {
		t.Errorf("Enforced: binds %v, network %q; want the proxy's directory read-only and no network", enf.Binds, enf.NetworkMode)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "codemode-egress-*")); len(left) > 0 {
		t.Errorf("the proxy's directories are left after Close: %v", left)
	}
}

// TestEgressNeedsALocalEngine: an engine reached over TCP cannot mount the
// proxy's socket, and a session with egress is refused, saying so.
func TestEgressNeedsALocalEngine(t *testing.T) {
	b, err := docker.New(docker.Config{Host: "tcp://127.0.0.1:1", Egress: &egress.Policy{Allow: []string{"api.example.com:443"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	_, err = b.Open(t.Context(), transport.SessionConfig{})
	if err == nil || !strings.Contains(err.Error(), "Unix socket") {
		t.Fatalf("Open with egress on a TCP engine: %v; want it refused, saying why", err)
	}
}

// TestEgressRefusesLoopbackByDefault: an allowed name that resolves to a
// loopback address is refused unless the policy's AllowAddresses names it.
func TestEgressRefusesLoopbackByDefault(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	p := strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port)
	b := engine(t, docker.Config{Egress: &egress.Policy{
		Allow:    []string{"api.test:" + p},
		Resolver: loopback.Names("api.test"),
		Logger:   slog.New(slog.DiscardHandler),
	}})
	s := open(t, b)
	out := ok(t, s, `
import urllib.request, urllib.error
try:
    urllib.request.urlopen("http://api.test:`+p+`/x", timeout=30)
    print("REACHED")
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode())`)
	if !strings.HasPrefix(out, "403 ") || hits.Load() != 0 {
		t.Fatalf("an allowed name on a loopback address: %q (server hits %d)", out, hits.Load())
	}
}
