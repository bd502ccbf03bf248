package codemode

import (
	"context"
	"log/slog"
	"sort"
	"strconv"
	"strings"

	eng "github.com/adk-codemode/codemode/internal/host/engine"

	"google.golang.org/genai"
)

// maxPendingResultBytes bounds the tool results a block holds before it
// saves them: past it, the results so far are saved at once as a part of
// their own. A variable so that tests can lower it.
var maxPendingResultBytes = 8 << 20

// pendingResults are the tool results of one execute_code call that wait
// to be saved together. Guarded by the call's mu.
type pendingResults struct {
	list  []ToolResult
	bytes int
	done  bool // the call is saving what it holds; later results go alone
}

// toolResults is the content of a tool-results artifact.
type toolResults struct {
	Results []ToolResult `json:"results"`
}

// collect adds r to the results c saves at the end of its block, and
// saves them now when they pass maxPendingResultBytes. It reports false
// when the block is past saving them, so the caller saves r alone.
func (c *execCall) collect(ctx context.Context, r ToolResult) bool {
	c.mu.Lock()
	p := &c.pending
	if p.done || c.closed {
		c.mu.Unlock()
		return false
	}
	p.list = append(p.list, r)
	p.bytes += len(r.Result) + len(r.Tool) + len(r.CallID)
	var full []ToolResult
	if p.bytes > maxPendingResultBytes {
		full, p.list, p.bytes = p.list, nil, 0
	}
	c.mu.Unlock()
	if full != nil {
		saveResults(ctx, c, full)
	}
	return true
}

// flushResults saves the results c still holds, as one artifact. It
// runs when the execute_code call returns, before its artifacts are
// reported, so that the artifact is on the call's event.
func (c *execCall) flushResults(ctx context.Context) {
	c.mu.Lock()
	p := &c.pending
	list := p.list
	p.list, p.bytes, p.done = nil, 0, true
	c.mu.Unlock()
	if len(list) > 0 {
		saveResults(ctx, c, list)
	}
}

// saveResults saves list, in call order, as one tool-results artifact
// named after its first call. A failed save leaves them unsaved, as a
// single result's failed save does (the code has its values already), and
// is logged, since a host that forwards results misses the block's.
func saveResults(ctx context.Context, exec *execCall, list []ToolResult) {
	sort.SliceStable(list, func(i, j int) bool { return callNumber(list[i].CallID) < callNumber(list[j].CallID) })
	name := eng.ToolResultsArtifactName(list[0].CallID)
	data, err := eng.MarshalJSON(toolResults{Results: list})
	if err == nil {
		part := &genai.Part{InlineData: &genai.Blob{MIMEType: ToolResultsMIMEType, Data: data}}
		_, err = exec.save(ctx, name, part)
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
