//go:build linux

package egressrelay

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A Relay relays the connections its listener takes, each to a way to
// the host that its connect function opens.
type Relay struct {
	ln       *os.File // listening socket, non-blocking, in the poller
	connect  func() (*os.File, error)
	slots    chan struct{}
	slotWait time.Duration
	done     chan struct{} // closed when the relay stops
	once     sync.Once
	wg       sync.WaitGroup
}

// Options configure Start. Zero values mean the defaults.
type Options struct {
	// MaxConns bounds the connections relayed at once.
	MaxConns int
	// SlotWait is how long a connection past MaxConns waits for a slot
	// before it is closed: the code's just-closed connections may still
	// be winding down through the host.
	SlotWait time.Duration
}

// PollFile takes fd, a socket, into the runtime's poller as a descriptor
// of its own (close-on-exec, so that no worker inherits it), closing fd.
func PollFile(fd int, name string) (*os.File, error) {
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

// ListenLoopback returns a listening TCP socket on 127.0.0.1:port, with a
// backlog of backlog.
func ListenLoopback(port, backlog int) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if err := unix.Listen(fd, backlog); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// DialUnix connects to the Unix stream socket at path and returns the
// connection, non-blocking and in the poller: a connect function for a
// host proxy reached through a socket file.
func DialUnix(path string) (*os.File, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("connect to the egress proxy's socket %s: %w", path, err)
	}
	return PollFile(fd, "egress-upstream")
}

// Start relays the connections that the listening socket lfd takes (it
// becomes the relay's), each to what connect returns, until ctx ends or
// Close is called.
func Start(ctx context.Context, lfd int, connect func() (*os.File, error), opts Options) (*Relay, error) {
	ln, err := PollFile(lfd, "egress-listener")
	if err != nil {
		return nil, err
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = DefaultMaxConns
	}
	if opts.SlotWait <= 0 {
		opts.SlotWait = DefaultSlotWait
	}
	r := &Relay{ln: ln, connect: connect, slots: make(chan struct{}, opts.MaxConns), slotWait: opts.SlotWait, done: make(chan struct{})}
	context.AfterFunc(ctx, r.Close)
	r.wg.Go(r.accept)
	return r, nil
}

// Close stops accepting; connections being relayed end with the sandbox
// or their peers.
func (r *Relay) Close() {
	r.once.Do(func() {
		close(r.done)
		_ = r.ln.Close()
	})
}

// Wait waits until the relay has stopped accepting.
func (r *Relay) Wait() { r.wg.Wait() }

// accept relays each connection the listener takes until it is closed.
func (r *Relay) accept() {
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

// takeSlot takes a relay slot, waiting up to the slot wait for one; it
// reports false if none came free. The accept loop waits with it, so the
// connections behind this one queue in the listener's backlog meanwhile.
func (r *Relay) takeSlot() bool {
	select {
	case r.slots <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(r.slotWait)
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

// relay opens the way to the host for client and copies between them
// until both directions are done or one fails.
func (r *Relay) relay(client *os.File) {
	defer client.Close()
	upstream, err := r.connect()
	if err != nil {
		return
	}
	defer upstream.Close()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			_ = client.Close()
			_ = upstream.Close()
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
	go half(upstream, client)
	half(client, upstream)
	wg.Wait()
	stop()
}

// shutdownWrite tells f's peer that nothing more comes.
func shutdownWrite(f *os.File) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) { _ = unix.Shutdown(int(fd), unix.SHUT_WR) })
}

// Addr is the listener's address, host:port.
func (r *Relay) Addr() string {
	rc, err := r.ln.SyscallConn()
	if err != nil {
		return ""
	}
	var addr string
	_ = rc.Control(func(fd uintptr) {
		if sa, err := unix.Getsockname(int(fd)); err == nil {
			if in4, ok := sa.(*unix.SockaddrInet4); ok {
				addr = fmt.Sprintf("%d.%d.%d.%d:%d", in4.Addr[0], in4.Addr[1], in4.Addr[2], in4.Addr[3], in4.Port)
			}
		}
	})
	return addr
}
