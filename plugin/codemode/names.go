package codemode

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

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
const ReservedPrefix = "codemode-"

// ToolResultMIMEType is the MIME type of an artifact that holds one tool
// result: one the code named with artifact_name, or one over
// Config.LargeResultBytes. The data is a JSON [ToolResult].
//
// This type and [ToolResultsMIMEType] are the marks a host reads to tell
// tool results apart: save_artifact refuses both, and a workspace file is
// never given either, so only the host saves them. [ReadToolResults]
// reads both.
const ToolResultMIMEType = "application/vnd.codemode.tool-result+json"

// ToolResultsMIMEType is the MIME type of an artifact that holds the other
// tool results of a block, in call order. The data is a JSON object whose
// "results" member is an array of [ToolResult].
const ToolResultsMIMEType = "application/vnd.codemode.tool-results+json"

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
	return part != nil && part.InlineData != nil && isToolResultMIME(part.InlineData.MIMEType)
}

// isToolResultMIME says whether mimeType, parameters aside, is one of the
// types reserved for tool results.
func isToolResultMIME(mimeType string) bool {
	t := baseMIME(mimeType)
	return t == ToolResultMIMEType || t == ToolResultsMIMEType
}

// ErrNotToolResult is returned by ReadToolResults for any other artifact.
var ErrNotToolResult = errors.New("codemode: not a tool-result artifact")

// ReadToolResults decodes a tool-result artifact of either kind: the
// results of a block, in call order, or the one result of an artifact
// that holds one.
func ReadToolResults(part *genai.Part) ([]ToolResult, error) {
	if !IsToolResultArtifact(part) {
		return nil, ErrNotToolResult
	}
	if baseMIME(part.InlineData.MIMEType) == ToolResultMIMEType {
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

// WorkspaceArtifactName returns the artifact name of a workspace file, by
// its slash-separated path relative to the workspace. The escape is
// reversible ([WorkspacePath] undoes it): "%" becomes "%25", "/" "%2F",
// "\" "%5C" and ":" "%3A" (so no file becomes a user-scoped "user:"
// artifact), and a name that would start with ReservedPrefix gets its
// first letter written "%63". A top-level file with none of these
// characters keeps its name: "report.csv" is saved as "report.csv",
// "out/b.bin" as "out%2Fb.bin".
func WorkspaceArtifactName(path string) string {
	var b strings.Builder
	for i := 0; i < len(path); i++ {
		switch c := path[i]; c {
		case '%', '/', '\\', ':':
			fmt.Fprintf(&b, "%%%02X", c)
		default:
			b.WriteByte(c)
		}
	}
	s := b.String()
	if strings.HasPrefix(s, ReservedPrefix) {
		s = "%63" + s[1:]
	}
	return s
}

// WorkspacePath returns the workspace path of an artifact name made by
// [WorkspaceArtifactName]. It reports false for a name that no workspace
// path gives.
func WorkspacePath(name string) (string, bool) {
	if strings.HasPrefix(name, ReservedPrefix) {
		return "", false
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '/' || c == '\\' || c == ':':
			return "", false
		case c != '%':
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(name) {
			return "", false
		}
		switch name[i+1 : i+3] {
		case "25":
			b.WriteByte('%')
		case "2F":
			b.WriteByte('/')
		case "5C":
			b.WriteByte('\\')
		case "3A":
			b.WriteByte(':')
		case "63":
			if i != 0 {
				return "", false
			}
			b.WriteByte('c')
		default:
			return "", false
		}
		i += 2
	}
	p := b.String()
	if p == "" || WorkspaceArtifactName(p) != name {
		return "", false
	}
	return p, true
}

// nameStem reduces s to a piece of an artifact name: runs of characters
// outside [A-Za-z0-9_.-] become "_", and "._-" are trimmed from both ends.
func nameStem(s string) string {
	var b strings.Builder
	under := false
	for _, r := range s {
		ok := r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-')
		if ok {
			b.WriteRune(r)
			under = false
		} else if !under {
			b.WriteByte('_')
			under = true
		}
	}
	return strings.Trim(b.String(), "._-")
}

// streamArtifactName names the saved full text of a cut stream.
func streamArtifactName(stream, callID string) string {
	id := nameStem(callID)
	if id == "" {
		id = "call"
	}
	return ReservedPrefix + stream + "-" + id + ".txt"
}

// toolResultArtifactName names a tool result: the artifact_name argument
// when given (with "_" before it if it would start with ReservedPrefix),
// else codemode-tool-<tool>-<call>.
func toolResultArtifactName(given, toolName, callID string) string {
	if given != "" {
		stem := nameStem(strings.TrimSuffix(given, ".json"))
		if stem == "" {
			stem = "tool_result"
		}
		if strings.HasPrefix(stem, ReservedPrefix) {
			// The code may not choose a name of Code Mode's own, such as
			// the generated name of another call's result.
			stem = "_" + stem
		}
		return stem + ".json"
	}
	stem := nameStem(toolName)
	if stem == "" {
		stem = "tool"
	}
	return ReservedPrefix + "tool-" + stem + "-" + nameStem(strings.TrimPrefix(callID, ReservedPrefix)) + ".json"
}
