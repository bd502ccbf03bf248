package docker_test

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/adk-codemode/codemode/backend/docker"
	"github.com/adk-codemode/codemode/egress"
	"github.com/adk-codemode/codemode/transport"
)

// TestEgressReachesAllowedHostsOnly gives a container an allowlist: code
// reaches the allowed host through the proxy, over plain HTTP and through
// CONNECT; another host is refused with a 403 naming it and its server is
// never reached; the container still has no network of its own; the
// proxy meters the block; and the proxy's directory is gone after Close.
func TestEgressReachesAllowedHostsOnly(t *testing.T) {
	var hits atomic.Int64
	var port int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, fmt.Sprintf("http://other.test:%d/elsewhere", port), http.StatusFound)
		case "/big":
			_, _ = w.Write(make([]byte, 64<<10))
		default:
			fmt.Fprintf(w, "hello %s from the host", r.URL.Path)
		}
	}))
	defer srv.Close()
	port = srv.Listener.Addr().(*net.TCPAddr).Port
	p := strconv.Itoa(port)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where the backend makes the proxy's directory
	b := engine(t, docker.Config{Egress: &egress.Policy{
		Allow:          []string{"api.test:" + p},
		AllowAddresses: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		Resolver:       egress.LoopbackNames("api.test", "other.test"),
		Logger:         slog.New(slog.DiscardHandler),
	}})
	if !b.MetersEgress() || !strings.Contains(b.DescribeNetwork(), "api.test:"+p) {
		t.Errorf("MetersEgress %v, DescribeNetwork %q: want the allowed host named", b.MetersEgress(), b.DescribeNetwork())
	}
	enf, err := b.Enforced(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(enf.Binds) != 1 || !strings.HasSuffix(enf.Binds[0], ":/run/codemode-egress:ro") || enf.NetworkMode != "none" {
		t.Errorf("Enforced: binds %v, network %q; want the proxy's directory read-only and no network", enf.Binds, enf.NetworkMode)
	}
	s, err := b.Open(t.Context(), transport.SessionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	meter := transport.EgressMeterOf(s)
	if meter == nil {
		t.Fatal("a session with egress does not meter it")
	}
	t.Run("environment", func(t *testing.T) {
		out := ok(t, s, `
import os, socket
print(*(k + "=" + os.environ.get(k, "-") for k in ("http_proxy", "HTTPS_PROXY", "no_proxy")))
print(sorted(n for _, n in socket.if_nameindex()))`)
		if out != "http_proxy=http://127.0.0.1:3128 HTTPS_PROXY=http://127.0.0.1:3128 no_proxy=\n['lo']\n" {
			t.Fatalf("proxy variables and interfaces: %q", out)
		}
	})
	t.Run("allowed", func(t *testing.T) {
		before := hits.Load()
		meter.MeterEgress(0)
		out := ok(t, s, `
import urllib.request
print(urllib.request.urlopen("http://api.test:`+p+`/x", timeout=30).read().decode())`)
		if out != "hello /x from the host\n" || hits.Load() != before+1 {
			t.Fatalf("allowed host: %q", out)
		}
		if n, exceeded := meter.EgressUsage(); n < int64(len("hello /x from the host")) || exceeded {
			t.Errorf("EgressUsage = %d, %v; want the download counted", n, exceeded)
		}
	})
	t.Run("connect", func(t *testing.T) {
		out := ok(t, s, `
import http.client
c = http.client.HTTPConnection("127.0.0.1", 3128, timeout=30)
c.set_tunnel("api.test", `+p+`)
c.request("GET", "/tunnelled")
print(c.getresponse().read().decode())
c.close()`)
		if out != "hello /tunnelled from the host\n" {
			t.Fatalf("CONNECT to an allowed host: %q", out)
		}
	})
	t.Run("refused", func(t *testing.T) {
		before := hits.Load()
		out := ok(t, s, `
import urllib.request, urllib.error
try:
    urllib.request.urlopen("http://other.test:`+p+`/x", timeout=30)
    print("REACHED")
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode())`)
		if !strings.HasPrefix(out, "403 ") || !strings.Contains(out, "other.test") || hits.Load() != before {
			t.Fatalf("a host not on the list: %q (server hits %d)", out, hits.Load()-before)
		}
	})
	t.Run("redirect to another host", func(t *testing.T) {
		// urllib follows the redirect itself, through the proxy, which
		// refuses the other host; the proxy follows none.
		before := hits.Load()
		out := ok(t, s, `
import urllib.request, urllib.error
try:
    urllib.request.urlopen("http://api.test:`+p+`/redirect", timeout=30)
    print("REACHED")
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode())`)
		if !strings.HasPrefix(out, "403 ") || !strings.Contains(out, "other.test") || hits.Load() != before+1 {
			t.Fatalf("a redirect to a host not on the list: %q (server hits %d)", out, hits.Load()-before)
		}
	})
	t.Run("block budget", func(t *testing.T) {
		// A block's bound (Budgets.EgressBytes) cuts a download at it.
		meter.MeterEgress(16 << 10)
		out := ok(t, s, `
import urllib.request
try:
    b = urllib.request.urlopen("http://api.test:`+p+`/big", timeout=30).read()
    print("read", len(b))
except Exception as e:
    print("cut", type(e).__name__)`)
		n, exceeded := meter.EgressUsage()
		if !strings.HasPrefix(out, "cut ") || !exceeded || n > 17<<10 {
			t.Fatalf("a 64 KiB download under a 16 KiB bound: %q, usage %d, exceeded %v", out, n, exceeded)
		}
		meter.MeterEgress(0)
	})
	t.Run("connection bound", func(t *testing.T) {
		// The server relays 64 connections at once and closes the next
		// once none came free; the first stay open.
		out := ok(t, s, `
import socket
cs = [socket.create_connection(("127.0.0.1", 3128), timeout=10) for _ in range(65)]
cs[64].settimeout(10)
last = cs[64].recv(1)
cs[0].settimeout(0.5)
try:
    first = cs[0].recv(1)
except socket.timeout:
    first = "open"
print(repr(last), first)
for c in cs:
    c.close()`)
		if out != "b'' open\n" {
			t.Fatalf("connections past the bound: %q", out)
		}
		out = ok(t, s, `
import urllib.request
print(urllib.request.urlopen("http://api.test:`+p+`/again", timeout=30).read().decode())`)
		if out != "hello /again from the host\n" {
			t.Fatalf("after the bound: %q", out)
		}
	})
	t.Run("next worker", func(t *testing.T) {
		// A worker started after the first exits has the proxy too.
		_ = run(t, s, "import os; os._exit(1)")
		out := ok(t, s, `
import urllib.request
print(urllib.request.urlopen("http://api.test:`+p+`/next", timeout=30).read().decode())`)
		if out != "hello /next from the host\n" {
			t.Fatalf("a later worker: %q", out)
		}
	})
	t.Run("no route around the proxy", func(t *testing.T) {
		before := hits.Load()
		out := ok(t, s, `
import socket
try:
    socket.create_connection(("127.0.0.1", `+p+`), timeout=3)
    print("connected")
except OSError as e:
    print("refused")`)
		if out != "refused\n" || hits.Load() != before {
			t.Fatalf("a direct connection: %q", out)
		}
	})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	left, _ := filepath.Glob(filepath.Join(tmp, "codemode-egress-*"))
	if len(left) > 0 {
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
		Resolver: egress.LoopbackNames("api.test"),
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
