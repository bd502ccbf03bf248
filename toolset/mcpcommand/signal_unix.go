//go:build unix

package mcpcommand

import "syscall"

// terminateSignal asks the process to exit.
var terminateSignal = syscall.SIGTERM
