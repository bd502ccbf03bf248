//go:build linux

package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/adk-codemode/codemode/internal/both/egressrelay"
)

// egressRelay takes the code's connections to the egress proxy on the
// sandbox's loopback and hands each to the host: for every connection it
// makes a socket pair, sends one end over the connector (a SOCK_SEQPACKET
// socket whose other end the host reads, one descriptor a message) and
// the relay copies bytes between the connection and the other end.
type egressRelay struct {
	*egressrelay.Relay
	conn *os.File // the connector, non-blocking, in the poller
}

// startEgress starts relaying the code's proxy connections, as cfg says:
// cfg.EgressFD is the connector; cfg.EgressListenFD, if set, a socket
// already listening on the proxy port, else the relay listens on
// 127.0.0.1:cfg.EgressPort itself. It returns nil, nil when cfg has no
// connector. Closing ctx stops it.
func startEgress(ctx context.Context, cfg *Config) (*egressRelay, error) {
	if cfg.EgressFD <= 0 {
		return nil, nil
	}
	conn, err := egressrelay.PollFile(cfg.EgressFD, "egress-connector")
	if err != nil {
		return nil, err
	}
	lfd := cfg.EgressListenFD
	if lfd <= 0 {
		if lfd, err = egressrelay.ListenLoopback(cfg.EgressPort, MaxEgressConns); err != nil {
			conn.Close()
			return nil, fmt.Errorf("egress: listen on 127.0.0.1:%d: %w", cfg.EgressPort, err)
		}
	}
	r := &egressRelay{conn: conn}
	connect := func() (*os.File, error) { return r.pair() }
	r.Relay, err = egressrelay.Start(ctx, lfd, connect, egressrelay.Options{MaxConns: MaxEgressConns, SlotWait: EgressSlotWait})
	if err != nil {
		conn.Close()
		return nil, err
	}
	context.AfterFunc(ctx, func() { _ = conn.Close() })
	return r, nil
}

// pair makes a socket pair, passes one end to the host over the
// connector, and returns the other.
func (r *egressRelay) pair() (*os.File, error) {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	local := os.NewFile(uintptr(pair[0]), "egress-local")
	err = r.send(pair[1])
	unix.Close(pair[1])
	if err != nil {
		local.Close()
		return nil, err
	}
	return local, nil
}

// send passes fd to the host over the connector.
func (r *egressRelay) send(fd int) error {
	rc, err := r.conn.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = rc.Write(func(c uintptr) bool {
		serr = unix.Sendmsg(int(c), []byte{'c'}, unix.UnixRights(fd), nil, unix.MSG_NOSIGNAL)
		return serr != unix.EAGAIN
	})
	return errors.Join(err, serr)
}
