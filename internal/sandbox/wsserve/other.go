//go:build !linux

package wsserve

import (
	"context"
	"errors"
	"net"
)

// Serve needs Linux, as the session's server does.
func Serve(ctx context.Context, ln net.Listener, cfg Config) error {
	ln.Close()
	return errors.New("wsserve: the sandbox server runs on Linux only")
}
