package egress_test

import (
	"context"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/egress"
)

// FuzzServeConn feeds the proxy arbitrary bytes from a client, as a
// sandbox may: it must answer or close, never hang or panic, and never
// connect anywhere but what its allowlist names (here nothing it can
// reach: its dialer refuses every address).
func FuzzServeConn(f *testing.F) {
	for _, s := range []string{
		"GET http://api.test:80/ HTTP/1.1\r\nHost: api.test\r\n\r\n",
		"CONNECT api.test:443 HTTP/1.1\r\nHost: api.test:443\r\n\r\n",
		"CONNECT [::1]:443 HTTP/1.1\r\n\r\n",
		"GET / HTTP/1.1\r\n\r\n",
		"POST http://api.test/x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"GET http://api.test:99999/ HTTP/1.0\r\n\r\n",
		"\x00\x01\x02",
	} {
		f.Add([]byte(s))
	}
	x, err := egress.New(egress.Policy{
		Allow:    []string{"api.test:80", "api.test:443", "*.test:8080"},
		Resolver: fixedResolver{netip.MustParseAddr("203.0.113.9")},
		Dial: func(context.Context, string, string) (net.Conn, error) {
			return nil, io.ErrUnexpectedEOF
		},
		Logger: discard(),
	})
	if err != nil {
		f.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	defer l.Close()
	f.Fuzz(func(t *testing.T, data []byte) {
		client, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		proxy, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { x.ServeConn(context.Background(), proxy); close(done) }()
		// The client sends everything and ends its side; the proxy must
		// answer what it read and close.
		_, _ = client.Write(data)
		_ = client.(*net.TCPConn).CloseWrite()
		_ = client.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, _ = io.Copy(io.Discard, io.LimitReader(client, 1<<20))
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("ServeConn did not return")
		}
	})
}

type fixedResolver struct{ a netip.Addr }

func (r fixedResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{r.a}, nil
}

// FuzzUpstreamResponse feeds the proxy arbitrary bytes as a server's
// answer to a forwarded request, as a hostile server may send: it must
// relay or cut them, never hang or panic. Its dialer hands it one end of
// a pipe whose other end writes data; nothing is dialled.
func FuzzUpstreamResponse(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n0\r\nX-Sum: 5\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffff\r\nx",
		"HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n",
		"HTTP/1.1 200 OK\r\n\r\nuntil the end",
		"HTTP/1.0 302 Found\r\nLocation: http://elsewhere.test/\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		x, err := egress.New(egress.Policy{
			Allow:           []string{"api.test:80"},
			AllowAddresses:  []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
			Resolver:        fixedResolver{netip.MustParseAddr("127.0.0.1")},
			MaxConnDuration: 2 * time.Second,
			Dial: func(context.Context, string, string) (net.Conn, error) {
				proxySide, server := net.Pipe()
				go func() {
					defer server.Close()
					_ = server.SetDeadline(time.Now().Add(3 * time.Second))
					go func() { _, _ = io.Copy(io.Discard, server) }()
					_, _ = server.Write(data)
				}()
				return proxySide, nil
			},
			Logger: discard(),
		})
		if err != nil {
			t.Fatal(err)
		}
		client, proxy := net.Pipe()
		defer client.Close()
		done := make(chan struct{})
		go func() { x.ServeConn(context.Background(), proxy); close(done) }()
		_ = client.SetDeadline(time.Now().Add(5 * time.Second))
		go func() {
			_, _ = io.WriteString(client, "GET http://api.test/ HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n")
		}()
		_, _ = io.Copy(io.Discard, io.LimitReader(client, 1<<20))
		client.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("ServeConn did not return")
		}
	})
}
