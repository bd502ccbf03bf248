//go:build linux

package sandboxserver

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/adk-codemode/codemode/transport"
)

// controlFD is the socket to the host in the re-executed server.
const controlFD = 3

func init() {
	if len(os.Args) == 0 {
		return
	}
	switch filepath.Base(os.Args[0]) {
	case Stage:
		os.Exit(stageMain(os.Args[1:]))
	case SupervisorStage:
		os.Exit(RunSupervisor(os.Args))
	}
}

// RunStage runs the sandbox server as the current process would when
// started under [Stage]: argv is [Stage, config JSON] and fd 3 is the host
// connection. It returns the exit code. Jails that run the server in their
// own init process call it.
func RunStage(argv []string) int { return stageMain(argv[1:]) }

func stageMain(args []string) int {
	// Nothing in the sandbox may read this process's memory or attach to
	// it, even with the same uid.
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	// The server relays frames; it never needs two CPUs, and with one P
	// its runtime does not wake a second thread for every frame.
	runtime.GOMAXPROCS(1)
	if len(args) != 1 {
		fmt.Fprintf(os.Stderr, "%s: want one argument, the JSON config\n", Stage)
		return 2
	}
	var cfg Config
	if err := json.Unmarshal([]byte(args[0]), &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "%s: bad config: %v\n", Stage, err)
		return 2
	}
	// Non-blocking, so that the runtime poller serves it and Close
	// unblocks a pending Read.
	_ = unix.SetNonblock(controlFD, true)
	ctl := os.NewFile(controlFD, "control")
	if ctl == nil {
		fmt.Fprintf(os.Stderr, "%s: no control socket on fd %d\n", Stage, controlFD)
		return 2
	}
	conn := transport.NewConn(ctl, ctl, ctl, transport.MaxFrameSize)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	if err := Serve(ctx, conn, cfg); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", Stage, err)
		return 1
	}
	return 0
}

// SocketPair returns the two ends of a stream socket for the host
// connection: host for the host, sandbox to pass to the server as fd 3.
func SocketPair() (host, sandbox *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "codemode-host"), os.NewFile(uintptr(fds[1]), "codemode-sandbox"), nil
}
