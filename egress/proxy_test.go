package egress_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/egress"
	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
)

// mapResolver maps names to addresses, as a test's DNS: the names on the
// allowlist resolve to loopback servers. Every lookup is counted.
type mapResolver struct {
	mu      sync.Mutex
	names   map[string][]netip.Addr
	after   map[string][]netip.Addr // what a name resolves to from its second lookup on
	lookups map[string]int
}

func (r *mapResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lookups == nil {
		r.lookups = map[string]int{}
	}
	r.lookups[host]++
	if a, ok := r.after[host]; ok && r.lookups[host] > 1 {
		return a, nil
	}
	if a, ok := r.names[host]; ok {
		return a, nil
	}
	return nil, fmt.Errorf("no such host %s", host)
}

// loopbackDial connects only to loopback: a test's proxy must never
// address anything else, even when it is wrong. It records every address.
type loopbackDial struct {
	mu    sync.Mutex
	addrs []string
}

func (d *loopbackDial) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.addrs = append(d.addrs, addr)
	d.mu.Unlock()
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().IsLoopback() {
		return nil, fmt.Errorf("test dialer: %s is not a loopback address", addr)
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, addr)
}

func (d *loopbackDial) dialled() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.addrs...)
}

// env is a proxy on a loopback listener in front of test servers.
type env struct {
	proxy *egress.Proxy
	url   *url.URL
	res   *mapResolver
	dial  *loopbackDial
	logs  *bytes.Buffer
	logMu *sync.Mutex
}

type lockedBuffer struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (l lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func newEnv(t testing.TB, p egress.Policy, names map[string][]netip.Addr) *env {
	t.Helper()
	e := &env{res: &mapResolver{names: names}, dial: &loopbackDial{}, logs: &bytes.Buffer{}, logMu: &sync.Mutex{}}
	p.Resolver = e.res
	p.Dial = e.dial.dial
	p.Logger = slog.New(slog.NewTextHandler(lockedBuffer{e.logMu, e.logs}, nil))
	x, err := egress.New(p)
	if err != nil {
		t.Fatal(err)
	}
	e.proxy = x
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = x.Serve(ctx, l); close(done) }()
	t.Cleanup(func() { l.Close(); cancel(); <-done })
	e.url = &url.URL{Scheme: "http", Host: l.Addr().String()}
	return e
}

func (e *env) client() *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:           http.ProxyURL(e.url),
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the test servers' own certificates
	}, Timeout: 10 * time.Second}
}

func (e *env) log() string {
	e.logMu.Lock()
	defer e.logMu.Unlock()
	return e.logs.String()
}

// server is a loopback test server answering "hello from <name>".
func server(t testing.TB, tlsOn bool) (*httptest.Server, netip.AddrPort) {
	t.Helper()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, "http://evil.test/steal", http.StatusFound)
		case "/big":
			_, _ = w.Write(bytes.Repeat([]byte("x"), 1<<20))
		case "/sized":
			w.Header().Set("Content-Length", "5")
			_, _ = w.Write([]byte("sized"))
		default:
			fmt.Fprintf(w, "hello %s %s", r.Method, r.URL.Path)
		}
	})
	var s *httptest.Server
	if tlsOn {
		s = httptest.NewTLSServer(h)
	} else {
		s = httptest.NewServer(h)
	}
	t.Cleanup(s.Close)
	ap := netip.MustParseAddrPort(s.Listener.Addr().String())
	return s, ap
}

var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

func get(t *testing.T, c *http.Client, u string) (int, string, error) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Status + " " + string(b), nil
}

func TestAllowedOverHTTPAndConnect(t *testing.T) {
	plain, pa := server(t, false)
	_, sa := server(t, true)
	_ = plain
	e := newEnv(t, egress.Policy{
		Allow:          []string{fmt.Sprintf("api.test:%d", pa.Port()), fmt.Sprintf("*.secure.test:%d", sa.Port())},
		AllowAddresses: loopback,
	}, map[string][]netip.Addr{"api.test": {pa.Addr()}, "www.secure.test": {sa.Addr()}})
	c := e.client()
	code, body, err := get(t, c, fmt.Sprintf("http://api.test:%d/data", pa.Port()))
	if err != nil || code != 200 || !strings.Contains(body, "hello GET /data") {
		t.Errorf("plain HTTP through the proxy: %d %q %v", code, body, err)
	}
	code, body, err = get(t, c, fmt.Sprintf("https://www.secure.test:%d/x", sa.Port()))
	if err != nil || code != 200 || !strings.Contains(body, "hello GET /x") {
		t.Errorf("CONNECT through the proxy: %d %q %v", code, body, err)
	}
	if log := e.log(); !strings.Contains(log, "host=api.test") || !strings.Contains(log, "method=CONNECT") {
		t.Errorf("the log does not record both connections:\n%s", log)
	}
}

func TestRefusals(t *testing.T) {
	_, pa := server(t, false)
	port := pa.Port()
	e := newEnv(t, egress.Policy{
		Allow: []string{
			fmt.Sprintf("api.test:%d", port),
			fmt.Sprintf("internal.test:%d", port),
			fmt.Sprintf("rebind.test:%d", port),
			fmt.Sprintf("mapped.test:%d", port),
		},
		AllowAddresses: loopback,
	}, map[string][]netip.Addr{
		"api.test":      {pa.Addr()},
		"internal.test": {netip.MustParseAddr("10.1.2.3")}, // an allowed name that resolves to a refused address
		"rebind.test":   {pa.Addr()},
		"evil.test":     {pa.Addr()},
		"mapped.test":   {netip.MustParseAddr("::ffff:10.1.2.4")}, // an IPv4 address in IPv6 form
	})
	e.res.after = map[string][]netip.Addr{"rebind.test": {netip.MustParseAddr("169.254.169.254")}}
	c := e.client()
	for _, tc := range []struct {
		name, url string
		status    int
		reason    string
	}{
		{"not on the list", fmt.Sprintf("http://evil.test:%d/", port), 403, fmt.Sprintf("evil.test:%d is not on the egress allowlist", port)},
		{"other port", fmt.Sprintf("http://api.test:%d/", port+1), 403, "is not on the egress allowlist"},
		{"refused address", fmt.Sprintf("http://internal.test:%d/", port), 403, "internal.test resolves to 10.1.2.3, a private address"},
		{"how to allow it", fmt.Sprintf("http://internal.test:%d/", port), 403, "unless its AllowAddresses names it (codemode's --egress-allow-address 10.1.2.3)"},
		{"a mapped address, shown as IPv4", fmt.Sprintf("http://mapped.test:%d/", port), 403, "mapped.test resolves to 10.1.2.4, a private address"},
		{"an address not named", fmt.Sprintf("http://127.0.0.1:%d/", port), 403, "is not on the egress allowlist"},
		{"redirect to another host", fmt.Sprintf("http://api.test:%d/redirect", port), 403, "evil.test:80 is not on the egress allowlist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body, err := get(t, c, tc.url)
			if err != nil || code != tc.status || !strings.Contains(body, tc.reason) {
				t.Errorf("got %d %q %v; want %d naming %q", code, body, err, tc.status, tc.reason)
			}
		})
	}
	// A name that changes its address between two lookups: the first
	// request connects to what it checked; the second is checked again
	// and refused, and never connects.
	if code, _, err := get(t, c, fmt.Sprintf("http://rebind.test:%d/", port)); err != nil || code != 200 {
		t.Errorf("first request to rebind.test: %d %v", code, err)
	}
	if code, body, _ := get(t, c, fmt.Sprintf("http://rebind.test:%d/", port)); code != 403 || !strings.Contains(body, "169.254.169.254, a link-local address") {
		t.Errorf("rebound request: %d %q, want it refused", code, body)
	}
	for _, a := range e.dial.dialled() {
		if !strings.HasPrefix(a, "127.") {
			t.Errorf("the proxy dialled %s", a)
		}
	}
	if log := e.log(); !strings.Contains(log, "egress: refused") || !strings.Contains(log, "host=evil.test") {
		t.Errorf("refusals not logged:\n%s", log)
	}
}

// TestHeadKeepsConnection: a response to HEAD carries its Content-Length
// but no body, and the client's connection serves the next request.
func TestHeadKeepsConnection(t *testing.T) {
	_, pa := server(t, false)
	e := newEnv(t, egress.Policy{Allow: []string{fmt.Sprintf("api.test:%d", pa.Port())}, AllowAddresses: loopback},
		map[string][]netip.Addr{"api.test": {pa.Addr()}})
	c, err := net.Dial("tcp", e.url.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	for _, tc := range []struct{ method, path, body string }{{"HEAD", "/sized", ""}, {"GET", "/", "hello GET /"}} {
		req, _ := http.NewRequest(tc.method, fmt.Sprintf("http://api.test:%d%s", pa.Port(), tc.path), nil)
		if err := req.WriteProxy(c); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			t.Fatalf("%s %s on the same connection: %v", tc.method, tc.path, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || string(b) != tc.body {
			t.Fatalf("%s %s: %d %q %v, want 200 %q", tc.method, tc.path, resp.StatusCode, b, err, tc.body)
		}
		if tc.method == "HEAD" && resp.ContentLength != 5 {
			t.Errorf("HEAD: Content-Length %d, want the server's 5", resp.ContentLength)
		}
	}
}

func TestLimits(t *testing.T) {
	_, pa := server(t, false)
	port := pa.Port()
	allow := []string{fmt.Sprintf("api.test:%d", port)}
	names := map[string][]netip.Addr{"api.test": {pa.Addr()}}

	t.Run("bytes", func(t *testing.T) {
		e := newEnv(t, egress.Policy{Allow: allow, AllowAddresses: loopback, MaxBytes: 100 << 10}, names)
		resp, err := e.client().Get(fmt.Sprintf("http://api.test:%d/big", port))
		if err == nil {
			n, _ := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if n >= 1<<20 {
				t.Errorf("read %d bytes through a proxy with a 100 KiB budget", n)
			}
		}
		if e.proxy.Used() > 100<<10+64<<10 {
			t.Errorf("the proxy moved %d bytes, past its budget", e.proxy.Used())
		}
		code, body, _ := get(t, e.client(), fmt.Sprintf("http://api.test:%d/", port))
		if code != 403 || !strings.Contains(body, "egress budget") {
			t.Errorf("after the budget: %d %q, want refused", code, body)
		}
	})

	t.Run("connections", func(t *testing.T) {
		e := newEnv(t, egress.Policy{Allow: allow, AllowAddresses: loopback, MaxConnections: 1}, names)
		first := connect(t, e, fmt.Sprintf("api.test:%d", port))
		defer first.Close()
		if s := readStatus(t, first); !strings.Contains(s, "200") {
			t.Fatalf("first tunnel: %q", s)
		}
		second := connect(t, e, fmt.Sprintf("api.test:%d", port))
		defer second.Close()
		status := readStatus(t, second)
		if !strings.Contains(status, "429") || !strings.Contains(status, "more than 1 connections at once") {
			t.Errorf("second tunnel: %q, want refused", status)
		}
	})

	t.Run("duration", func(t *testing.T) {
		e := newEnv(t, egress.Policy{Allow: allow, AllowAddresses: loopback, MaxConnDuration: 300 * time.Millisecond}, names)
		c := connect(t, e, fmt.Sprintf("api.test:%d", port))
		defer c.Close()
		if s := readStatus(t, c); !strings.Contains(s, "200") {
			t.Fatalf("tunnel: %q", s)
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		start := time.Now()
		_, err := io.Copy(io.Discard, c) // idle: the proxy ends it at its deadline
		if err != nil || time.Since(start) > 3*time.Second {
			t.Errorf("an idle tunnel lasted %v (%v), want it ended at 300 ms", time.Since(start), err)
		}
	})

	t.Run("header size", func(t *testing.T) {
		e := newEnv(t, egress.Policy{Allow: allow, AllowAddresses: loopback}, names)
		c, err := net.Dial("tcp", e.url.Host)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		go func() {
			fmt.Fprintf(c, "GET http://api.test:%d/ HTTP/1.1\r\nHost: api.test\r\nX-Big: %s\r\n\r\n", port, strings.Repeat("a", 200<<10))
		}()
		if s := readStatus(t, c); !strings.Contains(s, "400") {
			t.Errorf("a 200 KiB header: %q, want 400", s)
		}
	})
}

func connect(t *testing.T, e *env, hostport string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", e.url.Host)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", hostport, hostport)
	return c
}

// readStatus reads the status line of the proxy's answer.
func readStatus(t *testing.T, c net.Conn) string {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var line []byte
	b := make([]byte, 1)
	for {
		if _, err := c.Read(b); err != nil {
			return string(line) + " (" + err.Error() + ")"
		}
		if b[0] == '\n' {
			return strings.TrimSpace(string(line))
		}
		line = append(line, b[0])
	}
}

func TestBadEntries(t *testing.T) {
	for _, s := range []string{"api.example.com", "10.0.0.0/8:443", "api.example.com:0", "api.example.com:http", "bad host:443"} {
		if _, err := egress.New(egress.Policy{Allow: []string{s}}); !errors.Is(err, egress.ErrBadEntry) {
			t.Errorf("entry %q: err = %v, want ErrBadEntry", s, err)
		}
	}
}

// TestPythonThroughProxy: Python's urllib reaches an allowed host with
// nothing but the proxy variables set, and a refusal reaches it as an
// error that names the host.
func TestPythonThroughProxy(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		hostcap.Missing(t, hostcap.Python, err)
	}
	_, pa := server(t, false)
	e := newEnv(t, egress.Policy{Allow: []string{fmt.Sprintf("api.test:%d", pa.Port())}, AllowAddresses: loopback},
		map[string][]netip.Addr{"api.test": {pa.Addr()}})
	code := fmt.Sprintf(`import urllib.request, urllib.error
print(urllib.request.urlopen("http://api.test:%d/py").read().decode())
try:
    urllib.request.urlopen("http://evil.test:%d/")
except urllib.error.HTTPError as err:
    print(err.code, err.reason)`, pa.Port(), pa.Port())
	cmd := exec.Command("python3", "-c", code)
	cmd.Env = []string{"http_proxy=" + e.url.String(), "HTTP_PROXY=" + e.url.String(), "no_proxy="}
	out, err := cmd.CombinedOutput()
	want := fmt.Sprintf("hello GET /py\n403 egress refused: evil.test:%d is not on the egress allowlist\n", pa.Port())
	if err != nil || string(out) != want {
		t.Errorf("python: %v\n%s\nwant:\n%s", err, out, want)
	}
}

// BenchmarkDownload is a 1 MiB download from a loopback server through the
// proxy, against the same download directly, in one run: over plain HTTP
// (forwarded) and over TLS (tunnelled by CONNECT).
func BenchmarkDownload(b *testing.B) {
	for _, tlsOn := range []bool{false, true} {
		s, pa := server(b, tlsOn)
		scheme := "http"
		if tlsOn {
			scheme = "https"
		}
		e := newEnv(b, egress.Policy{Allow: []string{fmt.Sprintf("api.test:%d", pa.Port())}, AllowAddresses: loopback, MaxBytes: 1 << 40},
			map[string][]netip.Addr{"api.test": {pa.Addr()}})
		fetch := func(b *testing.B, c *http.Client, u string) {
			resp, err := c.Get(u)
			if err != nil {
				b.Fatal(err)
			}
			m, _ := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if m != 1<<20 {
				b.Fatalf("read %d bytes", m)
			}
		}
		b.Run(scheme+"/direct-nokeepalive", func(b *testing.B) {
			c := s.Client()
			c.Transport.(*http.Transport).DisableKeepAlives = true
			for b.Loop() {
				fetch(b, c, fmt.Sprintf("%s://%s/big", scheme, pa))
			}
			c.Transport.(*http.Transport).DisableKeepAlives = false
		})
		b.Run(scheme+"/direct", func(b *testing.B) {
			c := s.Client()
			for b.Loop() {
				fetch(b, c, fmt.Sprintf("%s://%s/big", scheme, pa))
			}
		})
		b.Run(scheme+"/proxy", func(b *testing.B) {
			c := e.client()
			for b.Loop() {
				fetch(b, c, fmt.Sprintf("%s://api.test:%d/big", scheme, pa.Port()))
			}
		})
	}
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestDescribe(t *testing.T) {
	var allow []string
	for i := range 22 {
		allow = append(allow, fmt.Sprintf("h%d.test:443", i))
	}
	got := egress.Policy{Allow: allow}.Describe()
	if !strings.Contains(got, "h19.test:443 and 2 more)") || strings.Contains(got, "h20.test") {
		t.Fatalf("Describe of 22 hosts: %q; want 20 named and the rest counted", got)
	}
	if got := (egress.Policy{}).Describe(); !strings.Contains(got, "(none)") {
		t.Fatalf("Describe of no hosts: %q", got)
	}
}

func TestBlockBudget(t *testing.T) {
	_, pa := server(t, false)
	port := pa.Port()
	e := newEnv(t, egress.Policy{Allow: []string{fmt.Sprintf("api.test:%d", port)}, AllowAddresses: loopback},
		map[string][]netip.Addr{"api.test": {pa.Addr()}})
	big := fmt.Sprintf("http://api.test:%d/big", port)
	small := fmt.Sprintf("http://api.test:%d/", port)

	const limit = 300 << 10
	e.proxy.StartBlock(limit)
	if code, body, err := get(t, e.client(), small); err != nil || code != 200 || !strings.Contains(body, "hello GET /") {
		t.Fatalf("a request inside the block's budget: %d %q %v", code, body, err)
	}
	if used, exceeded := e.proxy.BlockUsage(); used == 0 || exceeded {
		t.Fatalf("after a small request: used %d, exceeded %v; want bytes counted and the budget not exceeded", used, exceeded)
	}
	resp, err := e.client().Get(big)
	if err == nil {
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if n >= 1<<20 {
			t.Errorf("read all %d bytes of a 1 MiB download with a 300 KiB block budget", n)
		}
	}
	used, exceeded := e.proxy.BlockUsage()
	if used > limit || !exceeded {
		t.Errorf("after the cut download: used %d, exceeded %v; want at most %d and exceeded", used, exceeded, limit)
	}
	code, body, _ := get(t, e.client(), small)
	if code != 403 || !strings.Contains(body, "Budgets.EgressBytes") || !strings.Contains(body, fmt.Sprintf("of %d bytes", limit)) ||
		!strings.Contains(body, fmt.Sprintf("%d used", used)) {
		t.Errorf("a request past the block's budget: %d %q; want a 403 naming the budget, its limit and what was used", code, body)
	}
	if e.proxy.Used() < used {
		t.Errorf("the proxy's lifetime count %d is below the block's %d", e.proxy.Used(), used)
	}

	// The next block starts afresh, without a bound.
	e.proxy.StartBlock(0)
	resp, err = e.client().Get(big)
	if err != nil {
		t.Fatalf("the next block's download: %v", err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if n != 1<<20 {
		t.Errorf("the next block read %d bytes, want 1 MiB", n)
	}
	if used, exceeded := e.proxy.BlockUsage(); used < 1<<20 || exceeded {
		t.Errorf("the next block: used %d, exceeded %v", used, exceeded)
	}
}

// rawServer answers every connection with resp, whatever it asks, then
// closes it.
func rawServer(t *testing.T, resp string) netip.AddrPort {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = http.ReadRequest(bufio.NewReader(c))
				_, _ = io.WriteString(c, resp)
			}()
		}
	}()
	return netip.MustParseAddrPort(l.Addr().String())
}

// TestChunkedRelay: a chunked body is relayed as it comes, extensions and
// trailer included, and a malformed one is cut rather than passed on.
func TestChunkedRelay(t *testing.T) {
	const head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
	for _, tc := range []struct {
		name, body string
		want       string // "" when the client must see an error
		trailer    string
	}{
		{"chunks", "5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Sum: 11\r\n\r\n", "hello world", "11"},
		{"bare line feeds", "3\nabc\n0\n\n", "", ""},
		{"bare line feed in the trailer", "3\r\nabc\r\n0\r\nX-Sum: 3\n\r\n", "", ""},
		{"size not hex", "zz\r\nhello\r\n0\r\n\r\n", "", ""},
		{"size too long", "1000000000000000\r\nx\r\n0\r\n\r\n", "", ""},
		{"data longer than its size", "2\r\nabc\r\n0\r\n\r\n", "", ""},
		{"cut short", "10\r\nabc", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pa := rawServer(t, head+tc.body)
			e := newEnv(t, egress.Policy{Allow: []string{fmt.Sprintf("api.test:%d", pa.Port())}, AllowAddresses: loopback},
				map[string][]netip.Addr{"api.test": {pa.Addr()}})
			resp, err := e.client().Get(fmt.Sprintf("http://api.test:%d/", pa.Port()))
			var b []byte
			if err == nil {
				b, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			if tc.want == "" {
				if err == nil {
					t.Fatalf("a malformed chunked body reached the client as %q", b)
				}
				return
			}
			if err != nil || string(b) != tc.want {
				t.Fatalf("body %q, %v; want %q", b, err, tc.want)
			}
			if got := resp.Trailer.Get("X-Sum"); got != tc.trailer {
				t.Errorf("trailer X-Sum %q, want %q", got, tc.trailer)
			}
		})
	}
}

func TestListAndParseAddresses(t *testing.T) {
	var l egress.List
	_ = l.Set("a.test:443, b.test:80")
	_ = l.Set(" ,c.test:8080")
	if got := l.String(); got != "a.test:443,b.test:80,c.test:8080" {
		t.Errorf("List after two Sets: %q", got)
	}
	got, err := egress.ParseAddresses([]string{"10.1.2.3", "10.9.0.0/8", "fd00::1"})
	want := []netip.Prefix{netip.MustParsePrefix("10.1.2.3/32"), netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::1/128")}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("ParseAddresses: %v, %v; want %v", got, err, want)
	}
	if _, err := egress.ParseAddresses([]string{"example.test"}); err == nil || !strings.Contains(err.Error(), `"example.test": not an address or a prefix`) {
		t.Errorf("ParseAddresses of a name: %v", err)
	}
}
