//go:build linux

package sandboxserver

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// controlFD is the socket to the host in a re-executed supervisor.
const controlFD = 3

func init() {
	if len(os.Args) > 0 && filepath.Base(os.Args[0]) == SupervisorStage {
		os.Exit(RunSupervisor(os.Args))
	}
}

// socketPair returns the two ends of a stream socket for the host
// connection: host for the host, sandbox to pass to the supervisor as fd 3.
func socketPair() (host, sandbox *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "codemode-host"), os.NewFile(uintptr(fds[1]), "codemode-sandbox"), nil
}
