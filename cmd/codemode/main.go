package main

import (
	"fmt"
	"io"
	"os"
)

const usage = `Usage: codemode COMMAND [flags]

Commands:
  exec     run Python blocks in one fresh sandbox session
  doctor   show what this host can enforce, per backend
  stubs    generate the Python tools package from function declarations
  catalog  print the tool catalog or the whole <code-mode> block
  fidelity report which schema keywords the stubs keep, drop or lose
  evidence measure what Code Mode saves against direct tool calling
  mcp      serve Code Mode as an MCP server in front of MCP servers and OpenAPI documents

Run "codemode COMMAND --help" for the flags of a command.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "exec":
		return runExec(rest, stdin, stdout, stderr)
	case "doctor":
		return runDoctor(rest, stdout, stderr)
	case "stubs":
		return runStubs(rest, stdout, stderr)
	case "catalog":
		return runCatalog(rest, stdout, stderr)
	case "fidelity":
		return runFidelity(rest, stdout, stderr)
	case "evidence":
		return runEvidence(rest, stdout, stderr)
	case "mcp":
		return runMCP(rest, stdin, stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "codemode: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
}
