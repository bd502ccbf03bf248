//go:build linux

// Command codemode-stage is the sandbox program: what the codemode library
// runs inside a sandbox on this machine in place of the host program. The
// host starts it under one of its stage names, as argv[0]: the jail's init
// ([initstage.StageInit]) and payload launcher ([initstage.StageExec]) on
// linux/amd64, and the supervisor ([supervisor.Stage]) everywhere. It is
// built by go generate in internal/host/sandboxbin, which embeds it, and is not
// meant to be run by hand.
package main

import (
	"fmt"
	"os"
	"path"
	"runtime"

	"github.com/adk-codemode/codemode/internal/sandbox/supervisor"
)

// The stages set per-thread state (capabilities, securebits, PDEATHSIG,
// no_new_privs) that the processes they start must inherit: everything
// runs on the main thread, which is locked here so that main runs on it.
func init() { runtime.LockOSThread() }

func main() {
	argv0 := ""
	if len(os.Args) > 0 {
		argv0 = path.Base(os.Args[0])
	}
	runJailStage(argv0) // returns only if argv0 is not one of the jail's
	if argv0 == supervisor.Stage {
		os.Exit(supervisor.Run(os.Args))
	}
	fmt.Fprintf(os.Stderr, "codemode-stage: %q is none of this program's stages; the codemode library starts it, under the names it knows\n", argv0)
	os.Exit(2)
}
