package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// newFlags returns the flag set of a command whose usage text is usage
// (the flags' defaults follow it).
func newFlags(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args. When the command should stop, it returns false
// and the exit code: 0 for --help, 2 for a usage error. maxArgs < 0 allows
// any number of positional arguments.
func parseFlags(fs *flag.FlagSet, args []string, maxArgs int) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, false
		}
		return 2, false
	}
	if maxArgs >= 0 && fs.NArg() > maxArgs {
		fmt.Fprintf(fs.Output(), "codemode %s: unexpected argument %q\n", fs.Name(), fs.Arg(maxArgs))
		fs.Usage()
		return 2, false
	}
	return 0, true
}
