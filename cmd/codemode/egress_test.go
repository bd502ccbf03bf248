package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/adk-codemode/codemode/egress"
	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
)

// loopbackOrigin is an HTTP server on 127.0.0.1 that counts its requests.
func loopbackOrigin(t *testing.T) (host string, hits *atomic.Int64) {
	hits = new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprintf(w, "hello %s", r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String(), hits
}

// TestExecEgress: with --egress the jail's code reaches the host:port it
// names through the proxy, and another is refused with a 403.
func TestExecEgress(t *testing.T) {
	allowed := execEgress(t)
	// Without --egress, the same code reaches nothing.
	code, out, errs := runCLI(t, "", "exec", "-c", fmt.Sprintf(`
import urllib.request
try:
    urllib.request.urlopen("http://%s/", timeout=5)
    print("reached")
except OSError:
    print("no network")
`, allowed))
	if code != 0 || out != "no network\n" {
		t.Fatalf("without --egress: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// TestExecEgressDocker is TestExecEgress on the docker backend, where an
// engine is there (CI has one).
func TestExecEgressDocker(t *testing.T) {
	if os.Getenv("DOCKER_HOST") == "" {
		hostcap.Missing(t, hostcap.Docker, "DOCKER_HOST is not set")
	}
	execEgress(t, "--backend", "docker")
}

// execEgress runs codemode exec with args and --egress naming one
// loopback server: the code reaches it, and another gets 403 and is not
// reached. It returns the allowed server's host:port.
func execEgress(t *testing.T, args ...string) string {
	t.Helper()
	allowed, allowedHits := loopbackOrigin(t)
	other, otherHits := loopbackOrigin(t)
	args = append(append([]string{"exec"}, args...), "--egress", allowed, "-c", fmt.Sprintf(`
import urllib.request, urllib.error
print(urllib.request.urlopen("http://%s/allowed", timeout=20).read().decode())
try:
    urllib.request.urlopen("http://%s/refused", timeout=20)
except urllib.error.HTTPError as e:
    print(e.code)
`, allowed, other))
	code, out, errs := runCLI(t, "", args...)
	if code != 0 || out != "hello /allowed\n403\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q: want the allowed host's answer, then 403", code, out, errs)
	}
	if allowedHits.Load() != 1 || otherHits.Load() != 0 {
		t.Errorf("requests: allowed %d, other %d; want 1 and 0", allowedHits.Load(), otherHits.Load())
	}
	return allowed
}

func TestEgressFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--backend", "unsandboxed", "--egress", "api.example.com:443"}, "--egress is not supported by the unsandboxed backend"},
		{[]string{"--backend", "docker", "--egress", "api.example.com:443", "--egress-allow-address", "ten"}, "not an address or a prefix"},
		{[]string{"--egress", "api.example.com"}, "no port"},
		{[]string{"--egress", "10.0.0.0/8:80"}, "address range"},
		{[]string{"--egress-allow-address", "10.0.0.0/8"}, "--egress-allow-address is for --egress"},
		{[]string{"--egress", "api.example.com:443", "--egress-allow-address", "ten"}, "not an address or a prefix"},
		{[]string{"--backend", "remote", "--url", "ws://127.0.0.1:1", "--egress", "a.example:443", "--egress-allow-address", "10.0.0.1"}, "not for --backend remote"},
	} {
		for _, cmd := range []string{"exec", "mcp"} {
			args := append([]string{cmd}, tc.args...)
			if cmd == "exec" {
				args = append(args, "-c", "pass")
			}
			code, _, errs := runCLI(t, "", args...)
			if code != 2 || !strings.Contains(errs, tc.want) {
				t.Errorf("%q: exit %d, stderr %q: want 2 and %q", args, code, errs, tc.want)
			}
		}
	}
	if code, _, errs := runCLI(t, "", "doctor", "--egress", "api.example.com"); code != 2 || !strings.Contains(errs, "no port") {
		t.Errorf("doctor --egress api.example.com: exit %d, stderr %q", code, errs)
	}
}

// TestDoctorEgressSection: doctor shows the policy the same flags give
// exec, or that code has no network.
func TestDoctorEgressSection(t *testing.T) {
	var none bytes.Buffer
	writeEgress(&none, nil, "")
	if none.String() != "egress: none: code has no network (allow hosts with --egress host:port)\n" {
		t.Errorf("no policy: %q", none.String())
	}
	eg := egressFlags{allow: egress.List{"api.example.com:443", "*.pkg.example:443"}, addresses: egress.List{"10.1.0.0/16"}}
	p, err := eg.policy()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	writeEgress(&b, p, "the jail backend's")
	out := b.String()
	for _, want := range []string{
		"egress: the jail backend's\n",
		"allowed hosts:     api.example.com:443, *.pkg.example:443\n",
		"allowed addresses: 10.1.0.0/16",
		"refused addresses: loopback, private, link-local (cloud metadata)",
		"16 connections at once, 256 MiB both ways, 5m0s per connection",
		"the model is told: HTTP and HTTPS to the allowed hosts only (api.example.com:443, *.pkg.example:443)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the egress section lacks %q:\n%s", want, out)
		}
	}
}
