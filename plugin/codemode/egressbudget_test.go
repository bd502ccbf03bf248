package codemode

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

	"github.com/adk-codemode/codemode/backend/jail"
	"github.com/adk-codemode/codemode/egress"
	"github.com/adk-codemode/codemode/internal/testsupport/loopback"
)

// TestEgressBudget: a block's downloads through the egress proxy stop at
// Budgets.EgressBytes. The download inside it succeeds; the one that
// crosses it reached the server and is cut short; the later ones are
// refused with a 403 that names the budget and never reach the server.
// The block's stderr names the budget, and the next block starts afresh.
func TestEgressBudget(t *testing.T) {
	testBackend(t)           // skips where the jail cannot start
	var hits [2]atomic.Int64 // requests of the first block and of the second
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/second/") {
			hits[1].Add(1)
		} else {
			hits[0].Add(1)
		}
		w.Header().Set("Content-Length", "40000")
		_, _ = w.Write([]byte(strings.Repeat("d", 40000)))
	}))
	defer srv.Close()
	port := strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port)
	policy := &egress.Policy{
		Allow:          []string{"api.test:" + port},
		AllowAddresses: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		Resolver:       loopback.Names("api.test"),
		Logger:         slog.New(slog.DiscardHandler),
	}
	const limit = 100_000
	code := func(block string) string {
		return fmt.Sprintf(`import urllib.request
for i in range(5):
    try:
        with urllib.request.urlopen("http://api.test:%s/%s/data?i=%%d" %% i, timeout=20) as r:
            print(i, "read", len(r.read()))
    except Exception as e:
        print(i, type(e).__name__, e)`, port, block)
	}
	be := &jail.Backend{Egress: policy}
	t.Cleanup(func() { _ = be.Close() })
	m := newScript().on("go", run(code("first")), run(code("second")), say("ok"))
	f := newFixture(t, m, fixtureConfig{cfg: Config{Backend: be, Budgets: Budgets{EgressBytes: limit}}})
	outs := outputs(f.turn(t.Context(), "s1", "go"))
	if len(outs) != 2 {
		t.Fatalf("%d execute_code results, want 2", len(outs))
	}
	stdout, _ := outs[0]["stdout"].(string)
	stderr, _ := outs[0]["stderr"].(string)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 5 || lines[0] != "0 read 40000" || lines[1] != "1 read 40000" || strings.Contains(lines[2], "read 40000") {
		t.Fatalf("the first block's downloads: %q (stderr %q); want two whole, the third cut short", stdout, stderr)
	}
	for _, l := range lines[3:] {
		if !strings.Contains(l, "HTTPError HTTP Error 403: egress refused: the block's egress budget (Budgets.EgressBytes) of 100000 bytes is spent: 100000 used") {
			t.Errorf("a download past the budget: %q; want a 403 naming the budget, its limit and what was used", l)
		}
	}
	if !strings.Contains(stderr, "[Budget: Budgets.EgressBytes (100,000 bytes) ran out in this block after 100,000 bytes through the egress proxy") {
		t.Errorf("the block's stderr %q does not name the egress budget", stderr)
	}
	// The download that crossed the budget reached the server; none after it.
	if got := hits[0].Load(); got != 3 {
		t.Errorf("the server saw %d requests of the first block, want 3", got)
	}
	// The next block has a budget of its own.
	if got, _ := outs[1]["stdout"].(string); !strings.HasPrefix(got, "0 read 40000\n1 read 40000\n") {
		t.Errorf("the second block's downloads: %q, want the budget started afresh", got)
	}
	if got := hits[1].Load(); got != 3 {
		t.Errorf("the server saw %d requests of the second block, want 3", got)
	}
}

// TestEgressBudgetNeedsEgress: Budgets.EgressBytes on a backend without
// an egress proxy is an error at construction, which says what to do.
func TestEgressBudgetNeedsEgress(t *testing.T) {
	_, err := newHooks(Config{Backend: &jail.Backend{}, Budgets: Budgets{EgressBytes: 1000}}, true)
	if err == nil || !strings.Contains(err.Error(), "Budgets.EgressBytes is 1000, but the backend jail:") || !strings.Contains(err.Error(), "set Config.Egress") {
		t.Fatalf("New with an egress budget and no egress: %v; want an error naming the budget and the remedy", err)
	}
	h, err := newHooks(Config{Backend: &jail.Backend{Egress: &egress.Policy{}}, Budgets: Budgets{EgressBytes: 1000}}, true)
	if err != nil {
		t.Fatalf("New with an egress budget and egress: %v", err)
	}
	_ = h.Close()
}
