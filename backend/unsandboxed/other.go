//go:build !linux

package unsandboxed

import (
	"context"
	"errors"

	"github.com/adk-codemode/codemode/transport"
)

// Open fails: the sandbox server, which this backend runs as a child
// process, needs Linux.
func (b *Backend) Open(ctx context.Context, cfg transport.SessionConfig) (transport.Session, error) {
	return nil, errors.New("unsandboxed: the sandbox server runs on Linux only")
}
