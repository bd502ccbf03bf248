package engine

import (
	"fmt"
	"strings"
)

// ReservedPrefix begins the names of the artifacts Code Mode saves itself
// (plugin/codemode documents them).
const ReservedPrefix = "codemode-"

// The MIME types of the artifacts that hold tool results: one result, and
// the other results of a block.
const (
	ToolResultMIMEType  = "application/vnd.codemode.tool-result+json"
	ToolResultsMIMEType = "application/vnd.codemode.tool-results+json"
)

// IsToolResultMIME says whether mimeType, parameters aside, is one of the
// types reserved for tool results.
func IsToolResultMIME(mimeType string) bool {
	t := BaseMIME(mimeType)
	return t == ToolResultMIMEType || t == ToolResultsMIMEType
}

// BaseMIME is the MIME type without parameters, lower-cased.
func BaseMIME(t string) string {
	t, _, _ = strings.Cut(t, ";")
	return strings.ToLower(strings.TrimSpace(t))
}

// WorkspaceArtifactName returns the artifact name of a workspace file, by
// its slash-separated path relative to the workspace. The escape is
// reversible ([WorkspacePath] undoes it): "%" becomes "%25", "/" "%2F",
// "\" "%5C" and ":" "%3A" (so no file becomes a user-scoped "user:"
// artifact), and a name that would start with ReservedPrefix gets its
// first letter written "%63".
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

// StreamArtifactName names the saved full text of a cut stream.
func StreamArtifactName(stream, callID string) string {
	id := nameStem(callID)
	if id == "" {
		id = "call"
	}
	return ReservedPrefix + stream + "-" + id + ".txt"
}

// ResumeArtifactName names the record of a durable turn whose block paused
// under the execute_code call callID (see [TurnLog]).
func ResumeArtifactName(callID string) string {
	id := nameStem(callID)
	if id == "" {
		id = "call"
	}
	return ReservedPrefix + "resume-" + id + ".json"
}

// ToolResultArtifactName names a tool result: the artifact_name argument
// when given (with "_" before it if it would start with ReservedPrefix),
// else codemode-tool-<tool>-<call>.
func ToolResultArtifactName(given, toolName, callID string) string {
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

// ToolResultsArtifactName names the tool results of a block, or of the
// part of one, after its first call: codemode-tool-results-<call>.json.
func ToolResultsArtifactName(firstCallID string) string {
	stem := nameStem(strings.TrimPrefix(firstCallID, ReservedPrefix))
	if stem == "" {
		stem = "call"
	}
	return ReservedPrefix + "tool-results-" + stem + ".json"
}
