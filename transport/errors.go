package transport

import (
	"errors"
	"fmt"
)

// ErrClosed is returned by operations on a closed session or connection.
var ErrClosed = errors.New("transport: session closed")

// Stage says how far a block got before the connection to the sandbox was
// lost, which decides whether it is safe to run it again.
type Stage int

const (
	// NotRun: the run frame was never sent; the code did not run.
	NotRun Stage = iota + 1
	// Unknown: the run frame was sent but no done frame arrived; the code
	// may or may not have run, in part or whole.
	Unknown
	// Ran: the done frame arrived but the output was lost.
	Ran
)

func (s Stage) String() string {
	switch s {
	case NotRun:
		return "not run"
	case Unknown:
		return "unknown"
	case Ran:
		return "ran"
	}
	return fmt.Sprintf("Stage(%d)", int(s))
}

// ConnectionError reports a lost connection to the sandbox during
// [Session.Exec], with how far the block got.
type ConnectionError struct {
	Stage Stage
	Err   error
}

func (e *ConnectionError) Error() string {
	return fmt.Sprintf("transport: connection to the sandbox lost (block %s): %v", e.Stage, e.Err)
}

func (e *ConnectionError) Unwrap() error { return e.Err }

// VersionError reports a sandbox that speaks another version of the frame
// protocol than the host. Running the block again cannot help: the sandbox
// server must come from the same codemode release as the host.
type VersionError struct {
	Sandbox int // the version in the sandbox's ready frame
	Host    int // the version this host speaks
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("transport: the sandbox speaks protocol version %d but this host speaks version %d; "+
		"run a sandbox server built from the same codemode release as the host (rebuild the sandbox image)", e.Sandbox, e.Host)
}
