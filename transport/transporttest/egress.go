package transporttest

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/adk-codemode/codemode/egress"
	"github.com/adk-codemode/codemode/internal/testsupport/loopback"
	"github.com/adk-codemode/codemode/transport"
)

// OpenWithEgress opens a session of the backend under test whose code
// may reach what policy allows, and nothing else.
type OpenWithEgress func(t *testing.T, policy *egress.Policy) transport.Session

// RunEgress runs the egress suite on one session that open starts: an
// HTTP server on this host's loopback, whose name api.test the policy
// allows (loopback.Names maps it and other.test to 127.0.0.1); the code
// reaches it through the proxy over plain HTTP and through CONNECT, with
// the proxy variables set; other.test is refused with a 403 naming it,
// and so is a redirect to it, and neither reaches the server; a
// connection to the server that goes around the proxy fails; a block's
// byte bound cuts a download (when the session meters egress); the
// sandbox's relay closes a connection past its 64 and keeps serving; and
// a worker started after the first has the proxy too. Every address is
// on loopback.
func RunEgress(t *testing.T, open OpenWithEgress) {
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
	s := open(t, &egress.Policy{
		Allow:          []string{"api.test:" + p},
		AllowAddresses: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		Resolver:       loopback.Names("api.test", "other.test"),
		Logger:         slog.New(slog.DiscardHandler),
	})
	out := func(t *testing.T, code string) string {
		t.Helper()
		r := run(t, s, code)
		wantOK(t, r)
		return r.Stdout
	}
	get := func(path string) string {
		return `
import urllib.request
print(urllib.request.urlopen("http://api.test:` + p + path + `", timeout=30).read().decode())`
	}
	refused := func(url string) string {
		return `
import urllib.request, urllib.error
try:
    urllib.request.urlopen("` + url + `", timeout=30)
    print("REACHED")
except urllib.error.HTTPError as e:
    print(e.code, e.reason)`
	}

	t.Run("environment", func(t *testing.T) {
		got := out(t, `
import os
print(*(k + "=" + os.environ.get(k, "-") for k in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "no_proxy", "NO_PROXY")))`)
		want := "http_proxy=http://127.0.0.1:3128 https_proxy=http://127.0.0.1:3128 " +
			"HTTP_PROXY=http://127.0.0.1:3128 HTTPS_PROXY=http://127.0.0.1:3128 no_proxy= NO_PROXY=\n"
		if got != want {
			t.Fatalf("proxy variables: %q", got)
		}
	})
	t.Run("allowed", func(t *testing.T) {
		before := hits.Load()
		if got := out(t, get("/x")); got != "hello /x from the host\n" || hits.Load() != before+1 {
			t.Fatalf("allowed host: %q", got)
		}
	})
	t.Run("connect", func(t *testing.T) {
		// A tunnel (what https uses), with plain HTTP inside it.
		got := out(t, `
import http.client
c = http.client.HTTPConnection("127.0.0.1", 3128, timeout=30)
c.set_tunnel("api.test", `+p+`)
c.request("GET", "/tunnelled")
print(c.getresponse().read().decode())
c.close()`)
		if got != "hello /tunnelled from the host\n" {
			t.Fatalf("CONNECT to an allowed host: %q", got)
		}
	})
	t.Run("refused", func(t *testing.T) {
		before := hits.Load()
		got := out(t, refused("http://other.test:"+p+"/x"))
		if !strings.HasPrefix(got, "403 ") || !strings.Contains(got, "other.test") || hits.Load() != before {
			t.Fatalf("a host not on the list: %q (server hits %d)", got, hits.Load()-before)
		}
	})
	t.Run("redirect to another host", func(t *testing.T) {
		// urllib follows the redirect itself, through the proxy, which
		// refuses the other host; the proxy follows none.
		before := hits.Load()
		got := out(t, refused("http://api.test:"+p+"/redirect"))
		if !strings.HasPrefix(got, "403 ") || !strings.Contains(got, "other.test") || hits.Load() != before+1 {
			t.Fatalf("a redirect to a host not on the list: %q (server hits %d)", got, hits.Load()-before)
		}
	})
	t.Run("raw socket", func(t *testing.T) {
		// The sandbox's loopback is its own: the server's port is not
		// there, and no other route leads to it.
		before := hits.Load()
		got := out(t, `
import socket
try:
    socket.create_connection(("127.0.0.1", `+p+`), timeout=5); print("CONNECTED")
except OSError as e:
    print("refused")`)
		if got != "refused\n" || hits.Load() != before {
			t.Fatalf("a connection that goes around the proxy: %q", got)
		}
	})
	t.Run("block budget", func(t *testing.T) {
		m := transport.EgressMeterOf(s)
		if m == nil {
			t.Skip("the session does not meter its egress (transport.EgressMeter)")
		}
		m.MeterEgress(16 << 10)
		defer m.MeterEgress(0)
		got := out(t, `
import urllib.request
try:
    b = urllib.request.urlopen("http://api.test:`+p+`/big", timeout=30).read()
    print("read", len(b))
except Exception as e:
    print("cut", type(e).__name__)`)
		if n, exceeded := m.EgressUsage(); !strings.HasPrefix(got, "cut ") || !exceeded || n > 17<<10 {
			t.Fatalf("a 64 KiB download under a 16 KiB bound: %q, usage %d, exceeded %v", got, n, exceeded)
		}
	})
	t.Run("connection bound", func(t *testing.T) {
		// The relay takes 64 connections at once and closes the next
		// once none came free; the first stay open.
		got := out(t, `
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
		if got != "b'' open\n" {
			t.Fatalf("connections past the bound: %q", got)
		}
		if got := out(t, get("/again")); got != "hello /again from the host\n" {
			t.Fatalf("after the bound: %q", got)
		}
	})
	t.Run("next worker", func(t *testing.T) {
		// A worker started after the first exits has the proxy too.
		_ = run(t, s, "import os; os._exit(1)")
		if got := out(t, get("/next")); got != "hello /next from the host\n" {
			t.Fatalf("a later worker: %q", got)
		}
	})
}
