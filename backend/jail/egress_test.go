//go:build linux && amd64

package jail

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/egress"
	"github.com/adk-codemode/codemode/internal/testsupport/loopback"
	"github.com/adk-codemode/codemode/transport"
	"github.com/adk-codemode/codemode/transport/transporttest"
)

// egressStartPaths runs f on a cold and a forked session of a backend
// with policy.
func egressStartPaths(t *testing.T, policy *egress.Policy, f func(t *testing.T, s *Session)) {
	for _, forked := range []bool{false, true} {
		name := "cold"
		if forked {
			name = "forked"
		}
		t.Run(name, func(t *testing.T) {
			be := &Backend{Config: Config{MemoryBytes: 256 << 20, Processes: 128}, Cold: !forked, forked: forked, Egress: policy}
			t.Cleanup(func() {
				if err := be.Close(); err != nil {
					t.Error(err)
				}
			})
			f(t, sessionOf(t, be))
		})
	}
}

// TestEgressRootless runs TestEgressReachesAllowedHostsOnly again as an
// unprivileged user, whose jails are rootless: the proxy, the connector
// and the jail's relay need no privilege.
func TestEgressRootless(t *testing.T) {
	runAsNobody(t, "TestEgressReachesAllowedHostsOnly", "TestEgressReachesAllowedHostsOnly/forked")
}

// TestEgressReachesAllowedHostsOnly runs the egress suite
// (transporttest.RunEgress) on a cold and a forked session, then checks
// what is the jail's own: the code holds nothing of the relay and cannot
// take the supervisor's connector.
func TestEgressReachesAllowedHostsOnly(t *testing.T) {
	for _, forked := range []bool{false, true} {
		name := "cold"
		if forked {
			name = "forked"
		}
		t.Run(name, func(t *testing.T) {
			var s *Session
			transporttest.RunEgress(t, func(t *testing.T, policy *egress.Policy) transport.Session {
				be := &Backend{Config: Config{MemoryBytes: 256 << 20, Processes: 128}, Cold: !forked, forked: forked, Egress: policy}
				t.Cleanup(func() {
					if err := be.Close(); err != nil {
						t.Error(err)
					}
				})
				s = sessionOf(t, be)
				return s
			})
			t.Run("descriptors", func(t *testing.T) {
				// The worker holds nothing of the relay: neither the
				// connector nor the listening socket.
				if r := execIn(t, s, fdProbe); r.Stdout != workerFDs {
					t.Fatalf("the worker's descriptors: %q %s", r.Stdout, r.Stderr)
				}
			})
			t.Run("connector out of reach", func(t *testing.T) {
				// The supervisor's descriptors, the connector among them,
				// are not the code's to take.
				r := execIn(t, s, `
import os
for p in ("/proc/1/fd/4", "/proc/1/fd/5"):
    try:
        os.open(p, os.O_RDWR); print(p, "OPENED")
    except OSError as e:
        print(p, type(e).__name__)`)
				if strings.Contains(r.Stdout, "OPENED") || strings.Count(r.Stdout, "Error") != 2 {
					t.Fatalf("the supervisor's descriptors: %q %s", r.Stdout, r.Stderr)
				}
			})
		})
	}
}

func TestNoEgressWithoutPolicy(t *testing.T) {
	startPaths(t, Config{MemoryBytes: 256 << 20, Processes: 64}, func(t *testing.T, be *Backend) {
		s := sessionOf(t, be)
		r := execIn(t, s, `
import os, socket, errno
print([k for k in os.environ if k.lower() in ("http_proxy", "https_proxy", "no_proxy")])
try:
    socket.create_connection(("127.0.0.1", 3128), timeout=5); print("CONNECTED")
except OSError as e:
    print(errno.errorcode.get(e.errno, e))`)
		if r.Stdout != "[]\nECONNREFUSED\n" {
			t.Fatalf("without egress: %q %s", r.Stdout, r.Stderr)
		}
	})
}

func TestEgressPolicyCheckedAtOpen(t *testing.T) {
	be := &Backend{Egress: &egress.Policy{Allow: []string{"no port"}}}
	_, err := be.Open(t.Context(), transport.SessionConfig{})
	if err == nil || !strings.Contains(err.Error(), "Egress") {
		t.Fatalf("Open with a bad policy: %v", err)
	}
	be.Egress.Allow = []string{"api.test:443", "*.data.test:443"}
	if got := be.DescribeNetwork(); !strings.Contains(got, "(api.test:443, *.data.test:443)") {
		t.Fatalf("DescribeNetwork with a policy: %q; want it to name the hosts", got)
	}
	if got := (&Backend{}).DescribeNetwork(); got != transport.NoNetwork {
		t.Fatalf("DescribeNetwork without a policy: %q", got)
	}
}

// BenchmarkEgressDownload downloads 1 MiB from a loopback server with the
// same interpreter, in the same loop: from a jailed session through the
// egress proxy ("proxied": the loopback relay, the connector and the
// host's proxy) and from the host directly ("direct"). Each iteration
// runs one block that downloads it ten times, and one host process that
// does the same; the metrics are the seconds per download of each and
// their ratio.
func BenchmarkEgressDownload(b *testing.B) {
	body := make([]byte, 1<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(body) }))
	defer srv.Close()
	port := strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port)
	be := &Backend{Egress: &egress.Policy{
		Allow:          []string{"api.test:" + port},
		AllowAddresses: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		Resolver:       loopback.Names("api.test"),
		Logger:         slog.New(slog.DiscardHandler),
	}}
	defer be.Close()
	py, err := be.Config.Interpreter()
	if err != nil {
		b.Skip(err)
	}
	s, err := be.Open(b.Context(), transport.SessionConfig{})
	if err != nil {
		b.Skip(err)
	}
	defer s.Close()
	loop := func(url string, proxied bool) string {
		opener := "urllib.request.build_opener(urllib.request.ProxyHandler({}))"
		if proxied {
			opener = "urllib.request.build_opener()"
		}
		return `
import time, urllib.request
o = ` + opener + `
t = time.perf_counter()
for _ in range(10):
    assert len(o.open("` + url + `", timeout=30).read()) == 1 << 20
print(time.perf_counter() - t)
`
	}
	seconds := func(out string) float64 {
		v, err := strconv.ParseFloat(strings.TrimSpace(out), 64)
		if err != nil {
			b.Fatalf("timing: %q", out)
		}
		return v
	}
	var proxied, direct float64
	for b.Loop() {
		r, err := s.Exec(b.Context(), transport.Block{Code: loop("http://api.test:"+port+"/", true), Timeout: time.Minute})
		if err != nil || r.ExitCode != 0 {
			b.Fatalf("proxied download: %v %+v", err, r)
		}
		proxied += seconds(r.Stdout)
		out, err := exec.Command(py, "-c", loop("http://127.0.0.1:"+port+"/", false)).Output()
		if err != nil {
			b.Fatalf("direct download: %v", err)
		}
		direct += seconds(string(out))
	}
	n := float64(b.N * 10)
	b.ReportMetric(proxied/n*1e3, "ms/proxied")
	b.ReportMetric(direct/n*1e3, "ms/direct")
	b.ReportMetric(proxied/direct, "ratio")
}

// TestEgressMeter: on both start paths the session meters each block's
// egress bytes and bounds them (transport.EgressMeter).
func TestEgressMeter(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, strings.Repeat("m", 10_000))
	}))
	defer srv.Close()
	port := strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port)
	policy := &egress.Policy{
		Allow:          []string{"api.test:" + port},
		AllowAddresses: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		Resolver:       loopback.Names("api.test"),
		Logger:         slog.New(slog.DiscardHandler),
	}
	code := `
import urllib.request
try:
    print(len(urllib.request.urlopen("http://api.test:` + port + `/", timeout=20).read()))
except Exception as e:
    print(e)`
	egressStartPaths(t, policy, func(t *testing.T, s *Session) {
		m := transport.EgressMeterOf(s)
		if m == nil {
			t.Fatal("a session with egress is no transport.EgressMeter")
		}
		m.MeterEgress(0)
		if r := execIn(t, s, code); r.Stdout != "10000\n" {
			t.Fatalf("a download without a bound: %q %s", r.Stdout, r.Stderr)
		}
		if used, exceeded := m.EgressUsage(); used < 10_000 || exceeded {
			t.Errorf("after a 10,000-byte download: used %d, exceeded %v", used, exceeded)
		}
		m.MeterEgress(5_000)
		if r := execIn(t, s, code); r.Stdout == "10000\n" {
			t.Errorf("a 10,000-byte download under a 5,000-byte bound: %q %s", r.Stdout, r.Stderr)
		}
		if used, exceeded := m.EgressUsage(); used > 5_000 || !exceeded {
			t.Errorf("under a 5,000-byte bound: used %d, exceeded %v", used, exceeded)
		}
		if r := execIn(t, s, code); !strings.Contains(r.Stdout, "HTTP Error 403") || !strings.Contains(r.Stdout, "Budgets.EgressBytes") {
			t.Errorf("a download past the bound: %q, want a 403 naming it", r.Stdout)
		}
	})
}
