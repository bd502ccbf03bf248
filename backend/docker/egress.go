package docker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/adk-codemode/codemode/egress"
	"github.com/adk-codemode/codemode/transport"
)

// Where a container with egress finds the host's proxy: the directory the
// backend bind-mounts, read-only, and the socket in it.
const (
	egressMount  = "/run/codemode-egress"
	egressSocket = egressMount + "/proxy.sock"
)

// maxEgressClients bounds the proxy connections one session's host side
// serves at once, whatever the container opens (its relay opens at most
// 64).
const maxEgressClients = 128

// egressHost is one session's host side of egress: a proxy for the
// backend's policy serving the Unix socket in a private directory that
// the session's container mounts.
type egressHost struct {
	proxy  *egress.Proxy
	dir    string // the directory mounted at egressMount
	ln     net.Listener
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// checkEgress refuses a policy the proxy would refuse, and an engine that
// cannot mount a directory of this host: one not reached through a Unix
// socket.
func (b *Backend) checkEgress() error {
	if b.cfg.Egress == nil {
		return nil
	}
	if _, err := egress.New(*b.cfg.Egress); err != nil {
		return fmt.Errorf("docker: Config.Egress: %w", err)
	}
	if host := b.cli.DaemonHost(); !strings.HasPrefix(host, "unix://") {
		return fmt.Errorf("docker: Config.Egress needs an engine on this host, reached through its Unix socket: the container reaches the proxy through a socket "+
			"the backend mounts from this host's file system, and the engine at %s (from %s) may be on another; use the engine's local socket, or leave Egress unset", host, b.ep.source)
	}
	return nil
}

// startEgress starts a session's proxy on a socket in a fresh private
// directory, which the container will mount.
func (b *Backend) startEgress() (*egressHost, error) {
	proxy, err := egress.New(*b.cfg.Egress)
	if err != nil {
		return nil, fmt.Errorf("docker: Config.Egress: %w", err)
	}
	dir, err := os.MkdirTemp("", "codemode-egress-")
	if err != nil {
		return nil, fmt.Errorf("docker: the egress proxy's directory: %w", err)
	}
	h := &egressHost{proxy: proxy, dir: dir}
	fail := func(err error) (*egressHost, error) {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("docker: the egress proxy's socket: %w", err)
	}
	// The container's user reaches the socket through the directory
	// (search only) and connects to it (write); nothing else of the host
	// is in the directory.
	if err := os.Chmod(dir, 0o711); err != nil {
		return fail(err)
	}
	path := filepath.Join(dir, filepath.Base(egressSocket))
	if h.ln, err = net.Listen("unix", path); err != nil {
		return fail(err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		_ = h.ln.Close()
		return fail(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.wg.Go(func() { h.serve(ctx) })
	return h, nil
}

// serve serves the proxy's clients until the listener is closed, at most
// maxEgressClients at once; those past it are closed.
func (h *egressHost) serve(ctx context.Context) {
	slots := make(chan struct{}, maxEgressClients)
	for {
		c, err := h.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		select {
		case slots <- struct{}{}:
		default:
			_ = c.Close()
			continue
		}
		h.wg.Go(func() {
			defer func() { <-slots }()
			h.proxy.ServeConn(ctx, c)
		})
	}
}

// stop ends every connection, stops the proxy and removes its directory.
func (h *egressHost) stop() error {
	h.cancel()
	_ = h.ln.Close()
	h.wg.Wait()
	return os.RemoveAll(h.dir)
}

// session is a container's session with egress: the session, and its
// proxy, which meters each block ([transport.EgressMeter]).
type session struct {
	transport.Session
	egress *egressHost
}

var _ transport.EgressMeter = (*session)(nil)

// Unwrap is the container's session.
func (s *session) Unwrap() transport.Session { return s.Session }

// MeterEgress starts counting the next block's bytes through the
// session's proxy and bounds them by limit (zero: only the policy's
// MaxBytes).
func (s *session) MeterEgress(limit int64) { s.egress.proxy.StartBlock(limit) }

// EgressUsage reports the bytes the block moved through the proxy since
// MeterEgress, and whether its bound refused or cut a connection.
func (s *session) EgressUsage() (bytes int64, exceeded bool) { return s.egress.proxy.BlockUsage() }

// MetersEgress reports whether the backend's sessions meter their egress
// per block ([transport.EgressMetering]): whether Config.Egress is set.
func (b *Backend) MetersEgress() bool { return b.cfg.Egress != nil }
