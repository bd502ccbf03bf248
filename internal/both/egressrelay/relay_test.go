//go:build linux

package egressrelay

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRelayToUnixSocket relays a loopback connection to a Unix socket, as
// codemode-sandbox does in a container: bytes go both ways, each side's
// end is passed on, and a connection past the bound is closed once the
// slot wait is over.
func TestRelayToUnixSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "proxy.sock")
	up, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	release := make(chan struct{})
	holding := make(chan struct{}, 8) // a "hold" connection reached the upstream
	go func() {
		for {
			c, err := up.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b, _ := io.ReadAll(c) // to the client's half-close
				if string(b) == "hold" {
					holding <- struct{}{}
					<-release
					return
				}
				_, _ = c.Write(append([]byte("got "), b...))
			}()
		}
	}()
	lfd, err := ListenLoopback(0, 8)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r, err := Start(ctx, lfd, func() (*os.File, error) { return DialUnix(sock) }, Options{MaxConns: 2, SlotWait: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		close(release)
		cancel()
		r.Wait()
	}()
	addr := r.Addr()

	dial := func(t *testing.T, send string) net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write([]byte(send))
		_ = c.(*net.TCPConn).CloseWrite()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		return c
	}
	t.Run("both ways", func(t *testing.T) {
		c := dial(t, "hello")
		defer c.Close()
		if b, err := io.ReadAll(c); err != nil || string(b) != "got hello" {
			t.Fatalf("through the relay: %q, %v", b, err)
		}
	})
	t.Run("bound", func(t *testing.T) {
		held := []net.Conn{dial(t, "hold"), dial(t, "hold")}
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for range held { // both relayed, and holding their slots
			select {
			case <-holding:
			case <-time.After(30 * time.Second):
				t.Fatal("the held connections did not reach the upstream")
			}
		}
		last := dial(t, "third")
		defer last.Close()
		b, err := io.ReadAll(last)
		if len(b) != 0 || (err != nil && !errors.Is(err, syscall.ECONNRESET)) {
			t.Fatalf("a connection past the bound: read %q, %v; want it closed", b, err)
		}
	})
}

func TestProxyEnv(t *testing.T) {
	env := ProxyEnv(3128)
	for _, want := range []string{"http_proxy=http://127.0.0.1:3128", "HTTPS_PROXY=http://127.0.0.1:3128", "no_proxy=", "NO_PROXY="} {
		if !slices.Contains(env, want) {
			t.Errorf("ProxyEnv(3128) = %s; want %s in it", strings.Join(env, " "), want)
		}
	}
}
