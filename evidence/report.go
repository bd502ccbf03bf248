package evidence

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Result is what one shape under one condition measured.
type Result struct {
	Shape     string    `json:"shape"`
	Title     string    `json:"title"`
	Condition Condition `json:"condition"`
	// Answer is the agent's final text (of the first run); Want the answer
	// computed in Go; Correct whether every run gave it.
	Answer  string `json:"answer"`
	Want    string `json:"want"`
	Correct bool   `json:"correct"`
	// RoundTrips is the number of model calls.
	RoundTrips int `json:"round_trips"`
	// RequestBytes is the total size of the requests sent to the model
	// (system instruction, tool declarations and contents, as JSON of
	// the genai types); RequestBytesEach the size of each.
	RequestBytes        int   `json:"request_bytes"`
	LargestRequestBytes int   `json:"largest_request_bytes"`
	RequestBytesEach    []int `json:"request_bytes_each"`
	// ToolResultBytes is the size of the function responses in the last
	// request: what tool results (or execute_code's output) put into the
	// context.
	ToolResultBytes int `json:"tool_result_bytes"`
	// RequestTokens, LargestRequestTokens, RequestTokensEach and
	// ToolResultTokens are the same sizes in tokens, counted by
	// Report.Tokenizer; zero without one.
	RequestTokens        int   `json:"request_tokens,omitempty"`
	LargestRequestTokens int   `json:"largest_request_tokens,omitempty"`
	RequestTokensEach    []int `json:"request_tokens_each,omitempty"`
	ToolResultTokens     int   `json:"tool_result_tokens,omitempty"`
	// ToolCalls counts the runs of the real tools.
	ToolCalls int `json:"tool_calls"`
	// Runs is how many runs the times are the median of; CorrectRuns how
	// many of them gave the answer (with the scripted model, all); Failed
	// says why the runs that did not end did not (a live model only).
	Runs        int      `json:"runs"`
	CorrectRuns int      `json:"correct_runs"`
	Failed      []string `json:"failed,omitempty"`
	// WallMS is the run's wall time without the scripted model's own;
	// SandboxStartMS the sandbox starts in it, BlocksMS the blocks without
	// their starts (tool calls from code included), ToolsMS the tool
	// calls, direct and from code, summed.
	WallMS         float64 `json:"wall_ms"`
	SandboxStartMS float64 `json:"sandbox_start_ms"`
	BlocksMS       float64 `json:"blocks_ms"`
	ToolsMS        float64 `json:"tools_ms"`
}

// Skip is a shape that could not run here, and why.
type Skip struct {
	Shape  string `json:"shape"`
	Reason string `json:"reason"`
}

// Report is the outcome of a Run.
type Report struct {
	// Model is "scripted", or the live model's name.
	Model string `json:"model"`
	// Tokenizer names the tokenizer that counted tokens; empty when the
	// sizes are bytes only.
	Tokenizer string   `json:"tokenizer,omitempty"`
	Results   []Result `json:"results"`
	Skipped   []Skip   `json:"skipped,omitempty"`
}

// Find returns the result of a shape under a condition.
func (r *Report) Find(shape string, c Condition) (Result, bool) {
	for _, res := range r.Results {
		if res.Shape == shape && res.Condition == c {
			return res, true
		}
	}
	return Result{}, false
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteMarkdown writes the report as a Markdown table, one row per shape
// and condition, with the skipped shapes after it.
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	tokens := r.Tokenizer != ""
	b.WriteString("| shape | condition | correct | round trips |")
	if tokens {
		b.WriteString(" request tokens, total | largest request, tokens | tool-result tokens in context |")
	}
	b.WriteString(" request bytes, total | largest request | tool-result bytes in context | tool calls | wall ms | sandbox start ms | blocks ms | tools ms |\n|---|---|---|--:|")
	if tokens {
		b.WriteString("--:|--:|--:|")
	}
	b.WriteString("--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, res := range r.Results {
		ok := fmt.Sprintf("%d/%d", res.CorrectRuns, res.Runs)
		fmt.Fprintf(&b, "| %s | %s | %s | %d |", res.Title, res.Condition, ok, res.RoundTrips)
		if tokens {
			fmt.Fprintf(&b, " %s | %s | %s |", thousands(res.RequestTokens), thousands(res.LargestRequestTokens), thousands(res.ToolResultTokens))
		}
		fmt.Fprintf(&b, " %s | %s | %s | %d | %.1f | %.1f | %.1f | %.1f |\n",
			thousands(res.RequestBytes), thousands(res.LargestRequestBytes),
			thousands(res.ToolResultBytes), res.ToolCalls, res.WallMS, res.SandboxStartMS, res.BlocksMS, res.ToolsMS)
	}
	b.WriteString("\n" + r.note() + "\n")
	for _, res := range r.Results {
		for _, f := range res.Failed {
			fmt.Fprintf(&b, "\nFailed, %s under %s: %s\n", res.Shape, res.Condition, f)
		}
	}
	for _, s := range r.Skipped {
		fmt.Fprintf(&b, "\nSkipped %s: %s\n", s.Shape, s.Reason)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// note says what the table's figures are.
func (r *Report) note() string {
	runs := 1
	if len(r.Results) > 0 {
		runs = r.Results[0].Runs
	}
	sizes := "Sizes are bytes of JSON, not tokens (no tokenizer was given). Times exclude the model's time and the harness's own (sizing the requests)."
	if r.Tokenizer != "" {
		sizes = "Tokens are counted by " + r.Tokenizer + " over the request's text (the system instruction, the declarations as JSON, each part of the contents); bytes are of JSON. " +
			"Times exclude the model's time and the harness's own (sizing the requests)."
	}
	if r.Model == "scripted" || r.Model == "" {
		of := "Times are from one run."
		if runs > 1 {
			of = fmt.Sprintf("Times are medians of %d runs.", runs)
		}
		return fmt.Sprintf("Scripted model: each condition's best trajectory or best program, so these are the mechanics' best case, not a model's accuracy. %s %s", sizes, of)
	}
	return fmt.Sprintf("Live model %s: answers scored against the checked ones; every figure is the median of the runs that ended, of %d. %s", r.Model, runs, sizes)
}

// thousands writes n with commas between groups of three digits.
func thousands(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
