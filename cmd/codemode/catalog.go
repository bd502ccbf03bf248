package main

import (
	"fmt"
	"io"

	"github.com/adk-codemode/codemode/render"
)

const catalogUsage = `Usage: codemode catalog --decls FILE [--detail full|signatures|names] [--block] [--budget N]

Prints the tool catalog that Code Mode shows the model.

FILE is a JSON array of function declarations (name, description,
parameters or parametersJsonSchema, and optionally response or
responseJsonSchema for the result), each with an optional "namespace"
field that places it in tools.<namespace>.

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
	decls := fs.String("decls", "", "JSON `file` of function declarations (required)")
	detail := fs.String("detail", "full", "catalog `detail`: full, signatures or names (ignored with --block)")
	block := fs.Bool("block", false, "print the whole <code-mode> block")
	budget := fs.Int("budget", render.DefaultBudget, "block size limit in `characters`")
	if code, ok := parseFlags(fs, args, 0); !ok {
		return code
	}
	if *decls == "" {
		fmt.Fprintln(stderr, "codemode catalog: --decls is required")
		fs.Usage()
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
	tools, err := loadDecls(*decls)
	if err != nil {
		fmt.Fprintf(stderr, "codemode catalog: %v\n", err)
		return 1
	}
	reg, err := render.NewRegistry(tools)
	if err != nil {
		fmt.Fprintf(stderr, "codemode catalog: %s: %v\n", *decls, err)
		return 1
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
