package codemode

import (
	"context"

	eng "github.com/adk-codemode/codemode/internal/host/engine"
)

// saveToolResult saves a tool call's result as the engine saves it
// (engine.Results.Save), through the execute_code call's artifacts.
func (e *engine) saveToolResult(ctx context.Context, exec *execCall, st *surfaceTool, callID string, naming eng.ResultNaming, value any) any {
	return exec.results.Save(ctx, exec, e.cfg.LargeResultBytes, st.Name, callID, naming, value)
}
