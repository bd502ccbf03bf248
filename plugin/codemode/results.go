package codemode

import (
	"context"
	"log/slog"

	eng "github.com/adk-codemode/codemode/internal/host/engine"

	"google.golang.org/genai"
)

// saveToolResult saves a tool call's result, already JSON-safe, and
// returns what the code gets: the value itself, whatever its size (the
// channel to the sandbox bounds it, and a result over that limit fails as
// a ToolError that says so). A result whose JSON is over
// Config.LargeResultBytes, and one the code named with artifact_name, is
// saved at once as a tool-result artifact of its own; the others are saved
// together when the block's execute_code call returns, as one tool-results
// artifact. Without an artifact service, or when the save fails, nothing
// is saved; the code gets the value all the same.
func (e *engine) saveToolResult(ctx context.Context, exec *execCall, st *surfaceTool, callID string, naming eng.ResultNaming, value any) any {
	if !exec.hasArtifacts() {
		return value
	}
	data, err := eng.MarshalJSON(value)
	if err != nil {
		return value
	}
	limit := e.cfg.LargeResultBytes
	alone := naming.Name != "" || (limit >= 0 && len(data) > limit)
	r := ToolResult{Tool: st.Name, CallID: callID, Name: naming.Name, Description: naming.Description, Result: data}
	// A large result, or one saved under a name the code chose, is saved
	// alone now; the others wait for the end of the block (see collect).
	if !alone && exec.collect(ctx, r) {
		return value
	}
	name := eng.ToolResultArtifactName(naming.Name, st.Name, callID)
	env, err := eng.MarshalJSON(r)
	if err != nil {
		return value
	}
	if _, err := exec.save(ctx, name, &genai.Part{InlineData: &genai.Blob{MIMEType: ToolResultMIMEType, Data: env}}); err != nil {
		slog.Warn("codemode: a tool result was not saved as an artifact; check the artifact service",
			"artifact", name, "tool", st.Name, "err", err)
	}
	return value
}
