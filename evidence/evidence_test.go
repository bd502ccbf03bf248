package evidence

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/backend/jail"
	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
	"github.com/adk-codemode/codemode/transport"
)

// jailBackend returns a jail backend closed with the test, or skips the
// test where the jail cannot run.
func jailBackend(t *testing.T) transport.Backend {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	b := &jail.Backend{}
	t.Cleanup(func() { _ = b.Close() })
	s, err := b.Open(ctx, transport.SessionConfig{})
	if errors.Is(err, jail.ErrUnsupported) {
		hostcap.Missing(t, hostcap.UserNS, err)
	}
	if err != nil {
		t.Fatalf("the jail does not start: %v", err)
	}
	_ = s.Close()
	return b
}

func result(t *testing.T, rep *Report, shape string, c Condition) Result {
	t.Helper()
	res, ok := rep.Find(shape, c)
	if !ok {
		t.Fatalf("no result for %s under %s", shape, c)
	}
	return res
}

// TestLookupAndFanOut runs two shapes under the three conditions through
// real runners and the jail, and holds the measures to what each
// trajectory must cost.
func TestLookupAndFanOut(t *testing.T) {
	rep, err := Run(t.Context(), Options{Shapes: []string{"lookup", "fanout"}, Runs: 2, Backend: jailBackend(t)})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 6 {
		t.Fatalf("%d results, want 2 shapes x 3 conditions", len(rep.Results))
	}
	for _, res := range rep.Results {
		if !res.Correct || res.Answer != res.Want || res.Want == "" {
			t.Errorf("%s/%s: answer %q, want %q (correct=%v)", res.Shape, res.Condition, res.Answer, res.Want, res.Correct)
		}
		if res.Runs != 2 {
			t.Errorf("%s/%s: the median of %d runs, want 2", res.Shape, res.Condition, res.Runs)
		}
		if len(res.RequestBytesEach) != res.RoundTrips {
			t.Errorf("%s/%s: %d request sizes for %d round trips", res.Shape, res.Condition, len(res.RequestBytesEach), res.RoundTrips)
		}
		for i := 1; i < len(res.RequestBytesEach); i++ {
			if res.RequestBytesEach[i] <= res.RequestBytesEach[i-1] {
				t.Errorf("%s/%s: request %d is %d bytes, not more than the one before (%d): the history did not grow",
					res.Shape, res.Condition, i, res.RequestBytesEach[i], res.RequestBytesEach[i-1])
			}
		}
		// Tool time is summed over calls, which may overlap (parallel
		// calls, threads in a block), so it may exceed the wall time.
		if res.WallMS <= 0 || res.ToolsMS <= 0 {
			t.Errorf("%s/%s: wall %.2f ms, tools %.2f ms: want both measured", res.Shape, res.Condition, res.WallMS, res.ToolsMS)
		}
	}

	// One lookup: a call and the answer, whichever way the call goes.
	for _, c := range Conditions {
		if res := result(t, rep, "lookup", c); res.RoundTrips != 2 || res.ToolCalls != 1 {
			t.Errorf("lookup/%s: %d round trips, %d tool calls; want 2 and 1", c, res.RoundTrips, res.ToolCalls)
		}
	}
	direct, code, hybrid := result(t, rep, "lookup", Direct), result(t, rep, "lookup", Code), result(t, rep, "lookup", Hybrid)
	if direct.SandboxStartMS != 0 || direct.BlocksMS != 0 {
		t.Errorf("lookup/direct started a sandbox or ran a block: %+v", direct)
	}
	if code.SandboxStartMS <= 0 || code.BlocksMS <= 0 {
		t.Errorf("lookup/code: sandbox start %.2f ms, blocks %.2f ms; want both measured from the spans", code.SandboxStartMS, code.BlocksMS)
	}
	// The hybrid model calls the tool directly: no sandbox, but the
	// <code-mode> block and execute_code are in every request.
	if hybrid.SandboxStartMS != 0 || hybrid.RequestBytes <= direct.RequestBytes || hybrid.RequestBytes <= code.RequestBytes {
		t.Errorf("lookup/hybrid: sandbox start %.2f ms, %d request bytes (direct %d, code %d); want no sandbox and the largest requests",
			hybrid.SandboxStartMS, hybrid.RequestBytes, direct.RequestBytes, code.RequestBytes)
	}

	// The fan-out: direct needs a turn for the 18 parallel calls and one
	// for the join; code does both in one block.
	fd, fc, fh := result(t, rep, "fanout", Direct), result(t, rep, "fanout", Code), result(t, rep, "fanout", Hybrid)
	if fd.RoundTrips != 3 || fc.RoundTrips != 2 || fh.RoundTrips != 2 {
		t.Errorf("fanout round trips: direct %d, code %d, hybrid %d; want 3, 2, 2", fd.RoundTrips, fc.RoundTrips, fh.RoundTrips)
	}
	for _, res := range []Result{fd, fc, fh} {
		if res.ToolCalls != warehouses+1 {
			t.Errorf("fanout/%s: %d tool calls, want %d", res.Condition, res.ToolCalls, warehouses+1)
		}
	}
	if fc.ToolResultBytes >= fd.ToolResultBytes || fc.RequestBytes >= fd.RequestBytes {
		t.Errorf("fanout: code put %d bytes of results in %d request bytes, direct %d in %d; want less through code",
			fc.ToolResultBytes, fc.RequestBytes, fd.ToolResultBytes, fd.RequestBytes)
	}

	var md strings.Builder
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if rows := strings.Count(md.String(), "\n| "); rows != 6 {
		t.Errorf("the table has %d rows, want 6:\n%s", rows, md.String())
	}
}

// TestWrongAnswerFails: a run whose answer differs from the one computed
// in Go is an error, not a row.
func TestWrongAnswerFails(t *testing.T) {
	sh := Shapes()[0]
	setup := sh.setup
	sh.setup = func(ctx context.Context, opts Options) (*fixture, error) {
		fx, err := setup(ctx, opts)
		if err == nil {
			fx.answer = "tin"
		}
		return fx, err
	}
	res, err := runOne(t.Context(), sh, Direct, Options{}, spans())
	if err == nil || !strings.Contains(err.Error(), `want "tin"`) || res.Correct {
		t.Errorf("runOne with a wrong expected answer: %+v, %v; want an error naming the answer", res, err)
	}
}

// TestPolicyFailureFails: a scripted policy that cannot go on fails the
// run with its reason.
func TestPolicyFailureFails(t *testing.T) {
	sh := Shapes()[0]
	setup := sh.setup
	sh.setup = func(ctx context.Context, opts Options) (*fixture, error) {
		fx, err := setup(ctx, opts)
		if err == nil {
			fx.direct0 = func() Policy { return steps() }
		}
		return fx, err
	}
	if _, err := runOne(t.Context(), sh, Direct, Options{}, spans()); err == nil || !strings.Contains(err.Error(), "no step 0") {
		t.Errorf("runOne with an empty policy: %v; want the policy's error", err)
	}
}

// TestFailingBlockFails: a scripted program that raises fails the run
// with what the block wrote to stderr.
func TestFailingBlockFails(t *testing.T) {
	backend := jailBackend(t)
	sh := Shapes()[0]
	setup := sh.setup
	sh.setup = func(ctx context.Context, opts Options) (*fixture, error) {
		fx, err := setup(ctx, opts)
		if err == nil {
			fx.code = func() Policy {
				return steps(func(Observation) (Turn, error) { return code("raise ValueError('no such tier')\n"), nil }, printed)
			}
		}
		return fx, err
	}
	_, err := runOne(t.Context(), sh, Code, Options{Backend: backend}, spans())
	if err == nil || !strings.Contains(err.Error(), "no such tier") {
		t.Errorf("runOne with a program that raises: %v; want the block's error", err)
	}
}

// TestGitHubSkippedWithoutDocument: without GitHub's description the
// shape is skipped with a message saying how to install it.
func TestGitHubSkippedWithoutDocument(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "api.github.com.json")
	rep, err := Run(t.Context(), Options{Shapes: []string{"github"}, Conditions: []Condition{Direct}, GitHubSpec: missing})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 0 || len(rep.Skipped) != 1 || !strings.Contains(rep.Skipped[0].Reason, "npm install") {
		t.Errorf("report %+v: want the shape skipped with how to install the document", rep)
	}
}

// TestGitHubShape finds and calls one of GitHub's operations through
// search and describe, and directly with every declaration in the request.
func TestGitHubShape(t *testing.T) {
	if _, err := os.Stat(gitHubSpecPath()); err != nil {
		hostcap.Missing(t, hostcap.NPM, "GitHub's REST description is not at "+gitHubSpecPath()+"; install it with\n\tnpm install --prefix "+
			strings.TrimSuffix(gitHubSpecPath(), "/"+octokitFile)+" "+octokitPackage)
	}
	rep, err := Run(t.Context(), Options{Shapes: []string{"github"}, Conditions: []Condition{Direct, Code}, Backend: jailBackend(t)})
	if err != nil {
		t.Fatal(err)
	}
	d, c := result(t, rep, "github", Direct), result(t, rep, "github", Code)
	if d.ToolCalls != 1 || c.ToolCalls != 1 {
		t.Errorf("the loopback server got %d calls directly and %d from code; want 1 each", d.ToolCalls, c.ToolCalls)
	}
	// Search, describe, call, answer.
	if c.RoundTrips != 4 || d.RoundTrips != 2 {
		t.Errorf("round trips: code %d, direct %d; want 4 and 2", c.RoundTrips, d.RoundTrips)
	}
	if d.LargestRequestBytes < 20*c.LargestRequestBytes {
		t.Errorf("the largest request: %d bytes with 1,223 declarations, %d through code; want the declarations to dwarf the block",
			d.LargestRequestBytes, c.LargestRequestBytes)
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 16827860: "16,827,860", -1234: "-1,234"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestScored(t *testing.T) {
	for _, c := range []struct {
		final, want string
		live, ok    bool
	}{
		{"gold", "gold", false, true},
		{"Gold", "gold", false, false},
		{"The customer is on the Gold tier.", "gold", true, true},
		{"The customer is on the goldish tier.", "gold", true, false},
		{"The total is 1,234,567 cents.", "1234567", true, true},
		{"The total is 12345678 cents.", "1234567", true, false},
		{"Routed: billing 4", "billing 4", true, true},
		{"R-0a1b2c3d", "R-0a1b2c3d", true, true},
		{"R-0a1b2c3d-2", "R-0a1b2c3d", true, false},
	} {
		if got := scored(c.final, c.want, c.live); got != c.ok {
			t.Errorf("scored(%q, %q, live=%v) = %v, want %v", c.final, c.want, c.live, got, c.ok)
		}
	}
}
