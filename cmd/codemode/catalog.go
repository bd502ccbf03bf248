package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/adk-codemode/codemode/render"
)

const catalogUsage = `Usage: codemode catalog (--decls FILE | --openapi SPEC | --mcp COMMAND) [--detail full|signatures|names] [--block] [--budget N]
       codemode catalog (--decls FILE | --openapi SPEC | --mcp COMMAND) --format md [--out DIR]

Prints the tool catalog that Code Mode shows the model.

FILE is a JSON array of function declarations (name, description,
parameters or parametersJsonSchema, and optionally response or
responseJsonSchema for the result), each with an optional "namespace"
field that places it in tools.<namespace>. SPEC is the path of an OpenAPI
3.0 or 3.1 document, whose operations become tools as in toolset/openapi,
in the namespace --namespace names (default: the document's info.title);
no request is sent, so it needs no base URL, but --base-url takes one.
COMMAND is a stdio MCP server's command line, split at spaces (no
quoting): it is started, asked for its tools through ADK's mcptoolset,
and stopped; its tools go in the toolset's namespace.

With --format md it prints the catalog as Markdown docs instead: a table
of contents, and for each tool its Python signature, a parameter table
and its return type where one is declared. With --out the docs are
written under DIR, one page per module (tools.md, tools.<namespace>.md)
and index.md.

With --block it prints the whole <code-mode> block appended to the system
instruction, fitted to --budget characters: each namespace shows full
detail, signatures with one-line summaries, or names only, the largest
giving way first, and a pointer when even the names do not fit. The sandbox environment is unknown here, so the block has
no Python version or package list.

Flags:
`

// runCatalog implements "codemode catalog".
func runCatalog(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("catalog", catalogUsage, stderr)
	var in inputs
	in.register(fs)
	format := fs.String("format", "text", "output `format`: text (what the model sees) or md (docs)")
	out := fs.String("out", "", "with --format md, the `directory` to write one page per module to")
	detail := fs.String("detail", "full", "catalog `detail`: full, signatures or names (ignored with --block)")
	block := fs.Bool("block", false, "print the whole <code-mode> block")
	budget := fs.Int("budget", render.DefaultBudget, "block size limit in `characters`")
	if code, ok := parseFlags(fs, args, 0); !ok {
		return code
	}
	if !in.given(fs, "catalog", stderr) {
		return 2
	}
	switch {
	case *format != "text" && *format != "md":
		fmt.Fprintf(stderr, "codemode catalog: --format must be text or md, not %q\n", *format)
		return 2
	case *format == "md" && *block:
		fmt.Fprintln(stderr, "codemode catalog: --block prints what the model sees; it does not go with --format md")
		return 2
	case *out != "" && *format != "md":
		fmt.Fprintln(stderr, "codemode catalog: --out writes Markdown pages; add --format md")
		return 2
	}
	var d render.Detail
	switch *detail {
	case "full":
		d = render.Full
	case "signatures":
		d = render.Signatures
	case "names":
		d = render.Names
	default:
		fmt.Fprintf(stderr, "codemode catalog: --detail must be full, signatures or names, not %q\n", *detail)
		return 2
	}
	if *budget <= 0 {
		fmt.Fprintf(stderr, "codemode catalog: --budget must be positive, not %d\n", *budget)
		return 2
	}
	tools, err := in.load(stderr, "catalog")
	if err != nil {
		fmt.Fprintf(stderr, "codemode catalog: %v\n", err)
		return 1
	}
	reg, err := render.NewRegistry(tools)
	if err != nil {
		fmt.Fprintf(stderr, "codemode catalog: %s: %v\n", in.name(), err)
		return 1
	}
	if *format == "md" {
		return writeMarkdown(reg, *out, stdout, stderr)
	}
	var text string
	if *block {
		text = reg.Block(render.Environment{Discovery: true}, *budget)
	} else {
		text = reg.Catalog(d)
	}
	if _, err := fmt.Fprintln(stdout, text); err != nil {
		fmt.Fprintf(stderr, "codemode catalog: %v\n", err)
		return 1
	}
	return 0
}

// writeMarkdown prints reg's catalog as one Markdown document, or writes
// its pages under dir.
func writeMarkdown(reg *render.Registry, dir string, stdout, stderr io.Writer) int {
	if dir == "" {
		if _, err := io.WriteString(stdout, reg.Markdown()); err != nil {
			fmt.Fprintf(stderr, "codemode catalog: %v\n", err)
			return 1
		}
		return 0
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintf(stderr, "codemode catalog: %v\n", err)
		return 1
	}
	for _, p := range reg.MarkdownPages() {
		if err := os.WriteFile(filepath.Join(dir, p.Path), []byte(p.Content), 0o644); err != nil {
			fmt.Fprintf(stderr, "codemode catalog: %v\n", err)
			return 1
		}
	}
	return 0
}
