package codemode

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"google.golang.org/genai"
)

// resultNaming holds the artifact_name and artifact_description arguments
// of one tool call.
type resultNaming struct {
	name, description string
}

// saveToolResult saves a tool call's result, already JSON-safe, and
// returns what the code gets: the value itself, or, when its JSON is over
// Config.LargeResultBytes and load_artifact is available, a pointer to the
// artifact. Such a result, and one the code named with artifact_name, is
// saved at once as a tool-result artifact of its own; the others are saved
// together when the block's execute_code call returns, as one tool-results
// artifact. Without an artifact service, or when the save fails, the value
// is returned as it is.
func (e *engine) saveToolResult(ctx context.Context, exec *execCall, st *surfaceTool, callID string, naming resultNaming, value any) any {
	if !exec.hasArtifacts() {
		return value
	}
	data, err := marshalJSON(value)
	if err != nil {
		return value
	}
	limit := e.cfg.LargeResultBytes
	pointer := limit >= 0 && len(data) > limit && !e.cfg.DisableArtifactTools
	r := ToolResult{Tool: st.name, CallID: callID, Name: naming.name, Description: naming.description, Result: data}
	// A result the code gets a pointer to, or one saved under a name the
	// code chose, is saved alone now; the others wait for the end of the
	// block (see collect).
	if !pointer && naming.name == "" && exec.collect(ctx, r) {
		return value
	}
	name := toolResultArtifactName(naming.name, st.name, callID)
	env, err := marshalJSON(r)
	if err != nil {
		return value
	}
	if _, err := exec.save(ctx, name, &genai.Part{InlineData: &genai.Blob{MIMEType: ToolResultMIMEType, Data: env}}); err != nil {
		return value
	}
	if !pointer {
		return value
	}
	return map[string]any{
		"tool_result_artifact": name,
		"size_bytes":           len(data),
		"note": fmt.Sprintf("The result of %s is %s bytes of JSON, over the %s-byte limit, so it was saved as the artifact %s instead of being returned. "+
			"Load it with: json.loads(load_artifact(filename='%s')['data'])['result']",
			st.name, thousands(len(data)), thousands(limit), name, name),
	}
}

// marshalJSON encodes v without escaping <, > and &.
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
