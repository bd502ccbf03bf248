package main

import (
	"fmt"
	"io"

	"google.golang.org/genai"

	"github.com/adk-codemode/codemode/fidelity"
)

const fidelityUsage = `Usage: codemode fidelity (--decls FILE | --openapi SPEC | --mcp COMMAND) [--format text|json|md]

Reports, for every tool and every schema position, which keywords reach
the Python stub or its docstring (carried), which are used while the
schema is walked (consumed: $ref, $defs, allOf, ...), and which are left
out with a reason (dropped) or without one (lost).

FILE is a JSON array of function declarations, as for "codemode stubs".
SPEC is the path of an OpenAPI 3.0 or 3.1 document, JSON or YAML; its
operations become tools as in the toolset/openapi package, in the
namespace --namespace names (default: the document's info.title); no
request is sent, so it needs no base URL, but --base-url takes one.
COMMAND is a stdio MCP server's command line, split at spaces (no
quoting): it is started, asked for its tools through ADK's mcptoolset,
and stopped; its tools go in the toolset's namespace.

Exit status: 0 when nothing was lost silently; 1 when something was (each
lost position is named on stderr); 2 for a usage or input error.

Flags:
`

// runFidelity implements "codemode fidelity".
func runFidelity(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("fidelity", fidelityUsage, stderr)
	var in inputs
	in.register(fs)
	format := fs.String("format", "text", "report `format`: text, json or md")
	if code, ok := parseFlags(fs, args, 0); !ok {
		return code
	}
	if err := in.check(); err != nil {
		fmt.Fprintf(stderr, "codemode fidelity: %v\n", err)
		return 2
	}
	var write func(*fidelity.Report, io.Writer) error
	switch *format {
	case "text":
		write = (*fidelity.Report).WriteText
	case "json":
		write = (*fidelity.Report).WriteJSON
	case "md":
		write = (*fidelity.Report).WriteMarkdown
	default:
		fmt.Fprintf(stderr, "codemode fidelity: --format must be text, json or md, not %q\n", *format)
		return 2
	}
	tools, err := in.load(stderr, "fidelity")
	if err != nil {
		fmt.Fprintf(stderr, "codemode fidelity: %v\n", err)
		if in.none() {
			fs.Usage()
		}
		return 2
	}
	list := make([]*genai.FunctionDeclaration, len(tools))
	for i, t := range tools {
		d := *t.Declaration
		if t.Namespace != "" {
			d.Name = t.Namespace + "." + d.Name
		}
		list[i] = &d
	}
	r, err := fidelity.Check(list)
	if err != nil {
		fmt.Fprintf(stderr, "codemode fidelity: %v\n", err)
		return 2
	}
	if err := write(r, stdout); err != nil {
		fmt.Fprintf(stderr, "codemode fidelity: %v\n", err)
		return 2
	}
	if r.Lossless() {
		return 0
	}
	for _, l := range r.Lost() {
		fmt.Fprintf(stderr, "codemode fidelity: lost silently: tool %s, %s, keyword %s: %s\n", l.Tool, l.Position(), l.Keyword, l.Reason)
	}
	return 1
}
