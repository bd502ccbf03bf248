//go:build linux

package supervisor

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// relayFixture starts a relay on a loopback listener of the test's own
// and returns the listener's address and the connections the host side
// received, each as the host would serve it.
func relayFixture(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	host := os.NewFile(uintptr(pair[0]), "host")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lf, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	lfd, err := unix.Dup(int(lf.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	lf.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cfg := Config{EgressFD: pair[1], EgressListenFD: lfd}
	r, err := startEgress(ctx, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		host.Close()
		r.Wait()
		wg.Wait()
	})
	// The descriptor is taken once, here: the cleanup closes host while
	// the loop below waits on it.
	hfd := int(host.Fd())
	wg.Go(func() {
		buf := make([]byte, 16)
		oob := make([]byte, unix.CmsgSpace(4))
		for {
			n, oobn, _, _, err := unix.Recvmsg(hfd, buf, oob, 0)
			if err != nil || n == 0 {
				return
			}
			msgs, _ := unix.ParseSocketControlMessage(oob[:oobn])
			for i := range msgs {
				fds, _ := unix.ParseUnixRights(&msgs[i])
				for _, fd := range fds {
					f := os.NewFile(uintptr(fd), "client")
					c, err := net.FileConn(f)
					f.Close()
					if err != nil {
						t.Error(err)
						continue
					}
					wg.Go(func() { serve(c) })
				}
			}
		}
	})
	return addr
}

func TestEgressRelayCopiesBothWays(t *testing.T) {
	addr := relayFixture(t, func(c net.Conn) {
		defer c.Close()
		b, _ := io.ReadAll(c) // to the client's half-close
		c.Write(append([]byte("got "), b...))
	})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("hello"))
	c.(*net.TCPConn).CloseWrite()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(c)
	if err != nil || string(b) != "got hello" {
		t.Fatalf("through the relay: %q, %v", b, err)
	}
}

func TestEgressRelayBoundsConnections(t *testing.T) {
	release := make(chan struct{})
	addr := relayFixture(t, func(c net.Conn) {
		defer c.Close()
		<-release
	})
	defer close(release)
	var cs []net.Conn
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	for range MaxEgressConns + 1 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	last := cs[MaxEgressConns]
	last.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := last.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("connection %d past the bound: read %d, %v; want it closed", MaxEgressConns+1, n, err)
	}
	cs[0].SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := cs[0].Read(make([]byte, 1)); !os.IsTimeout(err) {
		t.Fatalf("the first connection: %v; want it open", err)
	}
}
