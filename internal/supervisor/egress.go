//go:build linux

package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// egressRelay takes the code's connections to the egress proxy on the
// sandbox's loopback and hands each to the host: for every connection it
// makes a socket pair, sends one end over the connector (a SOCK_SEQPACKET
// socket whose other end the host reads, one descriptor a message) and
// copies bytes between the connection and the other end.
type egressRelay struct {
	ln    *os.File // listening socket, non-blocking, in the poller
	conn  *os.File // the connector, non-blocking, in the poller
	slots chan struct{}
	done  chan struct{} // closed when the relay stops
	wg    sync.WaitGroup
}

// pollFile takes fd, a socket, into the runtime's poller as a descriptor
// of its own (close-on-exec, so that no worker inherits it), closing fd.
func pollFile(fd int, name string) (*os.File, error) {
	nfd, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	unix.Close(fd)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := unix.SetNonblock(nfd, true); err != nil {
		unix.Close(nfd)
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return os.NewFile(uintptr(nfd), name), nil
}

// listenLoopback returns a listening TCP socket on 127.0.0.1:port.
func listenLoopback(port int) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if err := unix.Listen(fd, MaxEgressConns); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
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
	conn, err := pollFile(cfg.EgressFD, "egress-connector")
	if err != nil {
		return nil, err
	}
	lfd := cfg.EgressListenFD
	if lfd <= 0 {
		if lfd, err = listenLoopback(cfg.EgressPort); err != nil {
			conn.Close()
			return nil, fmt.Errorf("egress: listen on 127.0.0.1:%d: %w", cfg.EgressPort, err)
		}
	}
	ln, err := pollFile(lfd, "egress-listener")
	if err != nil {
		conn.Close()
		return nil, err
	}
	r := &egressRelay{ln: ln, conn: conn, slots: make(chan struct{}, MaxEgressConns), done: make(chan struct{})}
	context.AfterFunc(ctx, r.close)
	r.wg.Go(r.accept)
	return r, nil
}

// close stops accepting; connections being relayed end with the sandbox.
func (r *egressRelay) close() {
	close(r.done)
	_ = r.ln.Close()
	_ = r.conn.Close()
}

// accept relays each connection the listener takes until it is closed.
func (r *egressRelay) accept() {
	rc, err := r.ln.SyscallConn()
	if err != nil {
		return
	}
	for {
		nfd := -1
		var aerr error
		err := rc.Read(func(fd uintptr) bool {
			nfd, _, aerr = unix.Accept4(int(fd), unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
			return aerr != unix.EAGAIN
		})
		if err != nil {
			return // closed
		}
		if aerr != nil {
			if aerr == unix.EINTR || aerr == unix.ECONNABORTED || aerr == unix.EMFILE || aerr == unix.ENFILE {
				continue
			}
			return
		}
		if !r.takeSlot() {
			unix.Close(nfd) // too many at once
			continue
		}
		client := os.NewFile(uintptr(nfd), "egress-client")
		go func() {
			defer func() { <-r.slots }()
			r.relay(client)
		}()
	}
}

// takeSlot takes a relay slot, waiting up to EgressSlotWait for one; it
// reports false if none came free. The accept loop waits with it, so the
// connections behind this one queue in the listener's backlog meanwhile.
func (r *egressRelay) takeSlot() bool {
	select {
	case r.slots <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(EgressSlotWait)
	defer t.Stop()
	select {
	case r.slots <- struct{}{}:
		return true
	case <-t.C:
		return false
	case <-r.done:
		return false
	}
}

// relay hands client to the host and copies between them until both
// directions are done or one fails.
func (r *egressRelay) relay(client *os.File) {
	defer client.Close()
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return
	}
	local := os.NewFile(uintptr(pair[0]), "egress-local")
	defer local.Close()
	err = r.send(pair[1])
	unix.Close(pair[1])
	if err != nil {
		return
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			_ = client.Close()
			_ = local.Close()
		})
	}
	var wg sync.WaitGroup
	half := func(dst, src *os.File) {
		defer wg.Done()
		if _, err := io.Copy(dst, src); err != nil {
			stop()
			return
		}
		shutdownWrite(dst)
	}
	wg.Add(2)
	go half(local, client)
	half(client, local)
	wg.Wait()
	stop()
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

// shutdownWrite tells f's peer that nothing more comes.
func shutdownWrite(f *os.File) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) { _ = unix.Shutdown(int(fd), unix.SHUT_WR) })
}
