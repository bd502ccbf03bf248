package engine

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"regexp"
	"strings"
)

// Errors from host tools reach the sandbox as Python exceptions. Their
// text keeps the error's message but not what only the host should see: a
// Go stack trace (ADK's functiontool appends one to a recovered panic) and
// the host's Go source paths. The full error stays in the host's log.

// stackStart finds where a Go stack trace starts in an error's text.
var stackStart = regexp.MustCompile(`(?m)^(stack:|goroutine \d+ \[|panic\(|runtime/debug\.Stack\()`)

// goSourcePath finds the host's paths of Go source files, with their line
// and offset.
var goSourcePath = regexp.MustCompile(`(?:[A-Za-z]:)?(?:[/\\][^\s/\\:"']+)+\.go(?::\d+)?(?: \+0x[0-9a-f]+)?`)

// SandboxText is the text of a tool's error as the sandbox gets it. When
// it had to leave something out, the full text goes to the host's log,
// with the tool's name.
func SandboxText(toolName string, err error) string {
	full := err.Error()
	text := full
	if loc := stackStart.FindStringIndex(text); loc != nil {
		text = strings.TrimRight(text[:loc[0]], " \t\r\n") + " [the host's stack trace is left out; it is in the host's log]"
	}
	text = goSourcePath.ReplaceAllString(text, "<host path>")
	if text != full {
		slog.Warn("codemode: a tool called from code failed; the sandbox got its message without host details",
			"tool", toolName, "error", full)
	}
	return text
}

// ErrorType names err for Python: the type name of the first error in its
// chain that has a meaningful one ("ValidationError", "PathError"), else
// "ToolError".
func ErrorType(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "TimeoutError"
	}
	for e := err; e != nil; {
		t := reflect.TypeOf(e)
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if name := t.Name(); name != "" && isExported(name) && t.PkgPath() != "errors" && t.PkgPath() != "fmt" {
			return name
		}
		e = errors.Unwrap(e)
	}
	return "ToolError"
}

func isExported(name string) bool { return name[0] >= 'A' && name[0] <= 'Z' }
