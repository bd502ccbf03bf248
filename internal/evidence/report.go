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
	// Answer is the agent's final text; Want the answer computed in Go.
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
	// ToolCalls counts the runs of the real tools.
	ToolCalls int `json:"tool_calls"`
	// Runs is how many runs the times are the median of.
	Runs int `json:"runs"`
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
	Results []Result `json:"results"`
	Skipped []Skip   `json:"skipped,omitempty"`
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
	b.WriteString("| shape | condition | answer | round trips | request bytes, total | largest request | tool-result bytes in context | tool calls | wall ms | sandbox start ms | blocks ms | tools ms |\n")
	b.WriteString("|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, res := range r.Results {
		ok := "ok"
		if !res.Correct {
			ok = "WRONG"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %s | %s | %s | %d | %.1f | %.1f | %.1f | %.1f |\n",
			res.Title, res.Condition, ok, res.RoundTrips, thousands(res.RequestBytes), thousands(res.LargestRequestBytes),
			thousands(res.ToolResultBytes), res.ToolCalls, res.WallMS, res.SandboxStartMS, res.BlocksMS, res.ToolsMS)
	}
	for _, s := range r.Skipped {
		fmt.Fprintf(&b, "\nSkipped %s: %s\n", s.Shape, s.Reason)
	}
	_, err := io.WriteString(w, b.String())
	return err
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
