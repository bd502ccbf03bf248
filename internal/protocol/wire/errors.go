package wire

import (
	"errors"
	"fmt"

	"github.com/adk-codemode/codemode/internal/both/clip"
)

// ErrFrameTooLarge is returned by [Conn.Read] for a line over the limit.
// The connection cannot be used after it.
var ErrFrameTooLarge = errors.New("wire: frame exceeds the size limit")

// BlockMismatchError describes a frame that named a block other than the
// one running (or named one when none runs). Such a frame is never applied
// to another block: a tool call is refused with this error's text, and any
// other frame is dropped and counted.
type BlockMismatchError struct {
	Kind    string // the frame's kind
	Block   string // the block it named
	Running string // the block running, "" if none
}

func (e *BlockMismatchError) Error() string {
	if e.Running == "" {
		return fmt.Sprintf("wire: a %s frame for block %q arrived while no block runs; it was dropped", e.Kind, clipID(e.Block))
	}
	return fmt.Sprintf("wire: a %s frame for block %q arrived while block %q runs; it was dropped", e.Kind, clipID(e.Block), e.Running)
}

func clipID(s string) string { return clip.String(s, 64) }
