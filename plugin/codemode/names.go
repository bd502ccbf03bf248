package codemode

import (
	"encoding/json"

	eng "github.com/adk-codemode/codemode/internal/host/engine"

	"google.golang.org/genai"
)

// ReservedPrefix begins the names of the artifacts Code Mode saves itself.
// ADK Go refuses "/" and "\" in artifact names and keeps
// no custom metadata, so Code Mode names what it saves itself:
//
//	codemode-stdout-<call>.txt     full stdout of a block cut for the model
//	codemode-stderr-<call>.txt     full stderr of a block cut for the model
//	codemode-tool-results-<call>-<n>.json  the tool results of a block
//	codemode-tool-<tool>-<call>-<n>.json   a tool result over Config.LargeResultBytes
//	<artifact_name>.json           a tool result saved with artifact_name
//	<escaped path>                 a workspace file; see WorkspaceArtifactName
//
// <call> is the execute_code function call id and <n> a tool call's
// number among the calls of its block, which goes on across a pause for
// approval; both are reduced to [A-Za-z0-9_.-]. The results of a block are
// saved together when its execute_code call returns (also when it pauses
// for approval), named after the first call among them; a block whose
// results pass 8 MiB saves them in more than one such artifact. Names
// that start with ReservedPrefix belong to Code Mode: save_artifact
// refuses them, and a workspace file is never saved under one.
const ReservedPrefix = eng.ReservedPrefix

// ToolResultMIMEType is the MIME type of an artifact that holds one tool
// result: one the code named with artifact_name, or one over
// Config.LargeResultBytes. The data is a JSON [ToolResult].
//
// This type and [ToolResultsMIMEType] are the marks a host reads to tell
// tool results apart: save_artifact refuses both, and a workspace file is
// never given either, so only the host saves them. [ReadToolResults]
// reads both.
const ToolResultMIMEType = eng.ToolResultMIMEType

// ToolResultsMIMEType is the MIME type of an artifact that holds the other
// tool results of a block, in call order. The data is a JSON object whose
// "results" member is an array of [ToolResult].
const ToolResultsMIMEType = eng.ToolResultsMIMEType

// ToolResult is one tool result saved by Code Mode.
type ToolResult struct {
	// Tool is the raw ADK name of the tool.
	Tool string `json:"tool"`
	// CallID is the function call id the tool ran with,
	// "codemode-<execute_code call id>-<n>".
	CallID string `json:"call_id"`
	// Name and Description are the artifact_name and artifact_description
	// arguments, if the code gave them.
	Name        string `json:"artifact_name,omitempty"`
	Description string `json:"artifact_description,omitempty"`
	// Result is the tool's result as the code would have seen it.
	Result json.RawMessage `json:"result"`
}

// IsToolResultArtifact reports whether part, as loaded from the artifact
// service, holds tool results saved by Code Mode: one
// ([ToolResultMIMEType]) or a block's ([ToolResultsMIMEType]).
func IsToolResultArtifact(part *genai.Part) bool {
	return part != nil && part.InlineData != nil && eng.IsToolResultMIME(part.InlineData.MIMEType)
}

// ErrNotToolResult is returned by ReadToolResults for any other artifact.
var ErrNotToolResult = eng.ErrNotToolResult

// ReadToolResults decodes a tool-result artifact of either kind: the
// results of a block, in call order, or the one result of an artifact
// that holds one.
func ReadToolResults(part *genai.Part) ([]ToolResult, error) {
	rs, err := eng.ReadToolResults(part)
	if err != nil {
		return nil, err
	}
	out := make([]ToolResult, len(rs))
	for i, r := range rs {
		out[i] = ToolResult(r)
	}
	return out, nil
}

// WorkspaceArtifactName returns the artifact name of a workspace file, by
// its slash-separated path relative to the workspace. The escape is
// reversible ([WorkspacePath] undoes it): "%" becomes "%25", "/" "%2F",
// "\" "%5C" and ":" "%3A" (so no file becomes a user-scoped "user:"
// artifact), and a name that would start with ReservedPrefix gets its
// first letter written "%63". A top-level file with none of these
// characters keeps its name: "report.csv" is saved as "report.csv",
// "out/b.bin" as "out%2Fb.bin".
func WorkspaceArtifactName(path string) string { return eng.WorkspaceArtifactName(path) }

// WorkspacePath returns the workspace path of an artifact name made by
// [WorkspaceArtifactName]. It reports false for a name that no workspace
// path gives.
func WorkspacePath(name string) (string, bool) { return eng.WorkspacePath(name) }
