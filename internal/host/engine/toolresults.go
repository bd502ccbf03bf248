package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/genai"
)

// ToolResult is one tool result saved by Code Mode, as the artifact holds
// it (plugin/codemode.ToolResult has the same shape).
type ToolResult struct {
	Tool        string          `json:"tool"`
	CallID      string          `json:"call_id"`
	Name        string          `json:"artifact_name,omitempty"`
	Description string          `json:"artifact_description,omitempty"`
	Result      json.RawMessage `json:"result"`
}

// toolResults is the content of a tool-results artifact.
type toolResults struct {
	Results []ToolResult `json:"results"`
}

// ErrNotToolResult is returned by ReadToolResults for any other artifact.
var ErrNotToolResult = errors.New("codemode: not a tool-result artifact")

// ReadToolResults decodes a tool-result artifact of either kind: the
// results of a block, in call order, or the one result of an artifact
// that holds one.
func ReadToolResults(part *genai.Part) ([]ToolResult, error) {
	if part == nil || part.InlineData == nil || !IsToolResultMIME(part.InlineData.MIMEType) {
		return nil, ErrNotToolResult
	}
	if BaseMIME(part.InlineData.MIMEType) == ToolResultMIMEType {
		var r ToolResult
		if err := json.Unmarshal(part.InlineData.Data, &r); err != nil {
			return nil, fmt.Errorf("codemode: decode a tool result: %w", err)
		}
		return []ToolResult{r}, nil
	}
	var rs toolResults
	if err := json.Unmarshal(part.InlineData.Data, &rs); err != nil {
		return nil, fmt.Errorf("codemode: decode tool results: %w", err)
	}
	return rs.Results, nil
}

// MaxPendingResultBytes bounds the tool results a block holds before it
// saves them: past it, the results so far are saved at once as a part of
// their own. A variable so that tests can lower it.
var MaxPendingResultBytes = 8 << 20

// Results are the tool results of one execute_code call, saved as
// artifacts: most together when the call returns ([Results.Flush]), a
// large one, or one the code named, alone at once. The zero Results is
// ready to use.
type Results struct {
	mu    sync.Mutex
	list  []ToolResult
	bytes int
	done  bool // the call is saving what it holds; later results go alone
}

// Save saves a tool call's result, already JSON-safe, in art, and returns
// what the code gets: the value itself, whatever its size (the channel to
// the sandbox bounds it). A result whose JSON is over large bytes (large
// < 0: none is), and one the code named with artifact_name, is saved at
// once as a tool-result artifact of its own; the others wait for Flush.
// Without an artifact service, or when the save fails (logged), nothing
// is saved; the code gets the value all the same.
func (r *Results) Save(ctx context.Context, art Artifacts, large int, tool, callID string, naming ResultNaming, value any) any {
	if !art.Enabled() {
		return value
	}
	data, err := MarshalJSON(value)
	if err != nil {
		return value
	}
	alone := naming.Name != "" || (large >= 0 && len(data) > large)
	tr := ToolResult{Tool: tool, CallID: callID, Name: naming.Name, Description: naming.Description, Result: data}
	if !alone && r.collect(ctx, art, tr) {
		return value
	}
	name := ToolResultArtifactName(naming.Name, tool, callID)
	env, err := MarshalJSON(tr)
	if err != nil {
		return value
	}
	if err := art.Save(ctx, name, &genai.Part{InlineData: &genai.Blob{MIMEType: ToolResultMIMEType, Data: env}}); err != nil {
		slog.Warn("codemode: a tool result was not saved as an artifact; check the artifact service",
			"artifact", name, "tool", tool, "err", err)
	}
	return value
}

// collect adds tr to the results saved at the end of the block, and saves
// them now when they pass MaxPendingResultBytes. It reports false when the
// block is past saving them, so the caller saves tr alone.
func (r *Results) collect(ctx context.Context, art Artifacts, tr ToolResult) bool {
	r.mu.Lock()
	if r.done {
		r.mu.Unlock()
		return false
	}
	r.list = append(r.list, tr)
	r.bytes += len(tr.Result) + len(tr.Tool) + len(tr.CallID)
	var full []ToolResult
	if r.bytes > MaxPendingResultBytes {
		full, r.list, r.bytes = r.list, nil, 0
	}
	r.mu.Unlock()
	if full != nil {
		saveResults(ctx, art, full)
	}
	return true
}

// Flush saves the results still held, as one artifact, and has later ones
// saved alone. It runs when the execute_code call returns, before its
// artifacts are reported, so that the artifact is on the call's event.
func (r *Results) Flush(ctx context.Context, art Artifacts) {
	r.mu.Lock()
	list := r.list
	r.list, r.bytes, r.done = nil, 0, true
	r.mu.Unlock()
	if len(list) > 0 {
		saveResults(ctx, art, list)
	}
}

// saveResults saves list, in call order, as one tool-results artifact
// named after its first call. A failed save leaves them unsaved, as a
// single result's failed save does (the code has its values already), and
// is logged, since a host that forwards results misses the block's.
func saveResults(ctx context.Context, art Artifacts, list []ToolResult) {
	sort.SliceStable(list, func(i, j int) bool { return callNumber(list[i].CallID) < callNumber(list[j].CallID) })
	name := ToolResultsArtifactName(list[0].CallID)
	data, err := MarshalJSON(toolResults{Results: list})
	if err == nil {
		err = art.Save(ctx, name, &genai.Part{InlineData: &genai.Blob{MIMEType: ToolResultsMIMEType, Data: data}})
	}
	if err != nil {
		slog.Warn("codemode: the tool results of a block were not saved as an artifact; check the artifact service",
			"artifact", name, "results", len(list), "err", err)
	}
}

// callNumber is a tool call's number within its block, the last
// dash-separated field of its call id, or 0 when there is none.
func callNumber(callID string) int {
	n, err := strconv.Atoi(callID[strings.LastIndexByte(callID, '-')+1:])
	if err != nil {
		return 0
	}
	return n
}
