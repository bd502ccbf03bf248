//go:build linux

package sandboxserver

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/adk-codemode/codemode/internal/supervisor"
)

// RunSupervisor runs the supervisor as the current process would when
// started under [SupervisorStage]. It returns the exit code. Jails that run
// the supervisor in their own init process call it.
//
// The hook that recognises [SupervisorStage] in a re-executed program is
// the init function of the package that holds the supervisor, which every
// program importing this package links; it runs before this package's own
// initialization and that of most other packages.
func RunSupervisor(argv []string) int { return supervisor.Run(argv) }

// socketPair returns the two ends of a stream socket for the host
// connection: host for the host, sandbox to pass to the supervisor as fd 3.
func socketPair() (host, sandbox *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "codemode-host"), os.NewFile(uintptr(fds[1]), "codemode-sandbox"), nil
}
