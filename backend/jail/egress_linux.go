//go:build linux && amd64

package jail

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/adk-codemode/codemode/egress"
)

// maxEgressClients bounds the proxy connections one session's host side
// serves at once: the supervisor relays at most 64, and this is the
// host's own bound, whatever the sandbox sends.
const maxEgressClients = 128

// startEgress starts the host side of one session's egress: a proxy for
// policy, and a connector, a SOCK_SEQPACKET socket pair whose sandbox end
// it returns for the jail (the supervisor's Config.EgressFD), with the
// proxy, which meters the session's blocks. Each message
// on the host end carries one descriptor, a stream socket to serve as one
// proxy client. The host side ends, closing every connection it serves,
// once every copy of the sandbox end is closed: when the jail has ended,
// or when the caller closes its copy without passing it on.
func startEgress(policy egress.Policy) (*os.File, *egress.Proxy, error) {
	proxy, err := egress.New(policy)
	if err != nil {
		return nil, nil, fmt.Errorf("jail: Backend.Egress: %w", err)
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("jail: egress connector: %w", err)
	}
	hostF := os.NewFile(uintptr(fds[0]), "egress-connector")
	sandbox := os.NewFile(uintptr(fds[1]), "egress-connector-sandbox")
	c, err := net.FileConn(hostF)
	hostF.Close()
	if err != nil {
		sandbox.Close()
		return nil, nil, fmt.Errorf("jail: egress connector: %w", err)
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		sandbox.Close()
		return nil, nil, fmt.Errorf("jail: egress connector is a %T, not a Unix socket", c)
	}
	go serveEgress(proxy, uc)
	return sandbox, proxy, nil
}

// serveEgress serves the proxy clients whose descriptors arrive on conn
// until conn ends, then closes them all.
func serveEgress(proxy *egress.Proxy, conn *net.UnixConn) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	defer func() { _ = conn.Close() }()
	slots := make(chan struct{}, maxEgressClients)
	buf := make([]byte, 16)
	oob := make([]byte, unix.CmsgSpace(4)) // one descriptor; the kernel closes any more
	for {
		n, oobn, _, _, err := conn.ReadMsgUnix(buf, oob)
		if err != nil || n == 0 && oobn == 0 {
			return // every copy of the sandbox end is closed
		}
		for _, fd := range receivedFDs(oob[:oobn]) {
			f := os.NewFile(uintptr(fd), "egress-client")
			client, err := net.FileConn(f)
			f.Close()
			if err != nil {
				continue // not a socket
			}
			select {
			case slots <- struct{}{}:
			default:
				client.Close()
				continue
			}
			wg.Go(func() {
				defer func() { <-slots }()
				proxy.ServeConn(ctx, client)
			})
		}
	}
}

// receivedFDs returns the descriptors passed in oob.
func receivedFDs(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for i := range msgs {
		r, err := unix.ParseUnixRights(&msgs[i])
		if err == nil {
			fds = append(fds, r...)
		}
	}
	return fds
}
