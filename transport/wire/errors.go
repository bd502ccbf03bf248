package wire

import (
	"errors"
	"fmt"
)

// VersionError reports a sandbox that speaks another protocol version.
type VersionError struct {
	Sandbox int // version in the sandbox's ready frame
	Host    int // [ProtocolVersion]
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("wire: the sandbox speaks protocol version %d but this host speaks version %d; "+
		"run a sandbox server built from the same codemode release as the host (rebuild the sandbox image)", e.Sandbox, e.Host)
}

// ErrFrameTooLarge is returned by [Conn.Read] for a line over the limit.
// The connection cannot be used after it.
var ErrFrameTooLarge = errors.New("wire: frame exceeds the size limit")
