package egress

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/adk-codemode/codemode/internal/both/clip"
)

// maxHeaderBytes bounds a request's line and headers.
const maxHeaderBytes = 64 << 10

// idleTimeout bounds the wait for a client's next request.
const idleTimeout = 60 * time.Second

// Proxy is the egress proxy of one client (a sandbox). It is safe for
// concurrent use.
type Proxy struct {
	p     Policy
	rules *rules
	log   *slog.Logger

	conns atomic.Int64 // connections to the outside open now
	used  atomic.Int64 // bytes moved, both ways

	// The current block's bound (0: none), what it moved since
	// StartBlock, and whether the bound refused or cut a connection.
	blockLimit    atomic.Int64
	blockUsed     atomic.Int64
	blockExceeded atomic.Bool
}

// New checks p and returns its proxy. An entry it cannot read is an error
// wrapping [ErrBadEntry].
func New(p Policy) (*Proxy, error) {
	r, err := p.parse()
	if err != nil {
		return nil, err
	}
	if p.MaxConnections <= 0 {
		p.MaxConnections = DefaultMaxConnections
	}
	if p.MaxBytes <= 0 {
		p.MaxBytes = DefaultMaxBytes
	}
	if p.MaxConnDuration <= 0 {
		p.MaxConnDuration = DefaultMaxConnDuration
	}
	if p.Resolver == nil {
		p.Resolver = net.DefaultResolver
	}
	if p.Dial == nil {
		d := &net.Dialer{Timeout: 10 * time.Second}
		p.Dial = d.DialContext
	}
	log := p.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Proxy{p: p, rules: r, log: log}, nil
}

// Used reports the bytes the proxy moved since it started or since
// ResetUsage, both ways.
func (x *Proxy) Used() int64 { return x.used.Load() }

// ResetUsage starts counting bytes against Policy.MaxBytes afresh.
func (x *Proxy) ResetUsage() { x.used.Store(0) }

// StartBlock starts counting the bytes of a block of code afresh and
// bounds them, both ways, by limit; zero or less means no bound but
// Policy.MaxBytes. Once the block has moved limit bytes the proxy refuses
// new connections with a 403 whose reason names the bound, its limit and
// what was used, and cuts the connections in flight at the limit. The
// bytes of connections a previous block left open count against the new
// block.
func (x *Proxy) StartBlock(limit int64) {
	x.blockLimit.Store(0)
	x.blockUsed.Store(0)
	x.blockExceeded.Store(false)
	x.blockLimit.Store(max(limit, 0))
}

// BlockUsage reports the bytes moved since StartBlock, both ways, and
// whether the block's bound refused or cut a connection.
func (x *Proxy) BlockUsage() (used int64, exceeded bool) {
	return x.blockUsed.Load(), x.blockExceeded.Load()
}

// left is how many bytes may still move: what is left of Policy.MaxBytes
// and of the block's bound.
func (x *Proxy) left() int64 {
	l := x.p.MaxBytes - x.used.Load()
	if b := x.blockLimit.Load(); b > 0 {
		l = min(l, b-x.blockUsed.Load())
	}
	return l
}

// charge counts n bytes moved.
func (x *Proxy) charge(n int64) {
	x.used.Add(n)
	x.blockUsed.Add(n)
}

// overBudget is why no more bytes may move: the block's bound or
// Policy.MaxBytes. It notes a block's bound that stopped a connection.
func (x *Proxy) overBudget() *refusal { return x.overBudgetBy(1) }

// overBudgetBy is why n more bytes may not move.
func (x *Proxy) overBudgetBy(n int64) *refusal {
	if b, u := x.blockLimit.Load(), x.blockUsed.Load(); b > 0 && u+n > b {
		x.blockExceeded.Store(true)
		return &refusal{http.StatusForbidden, fmt.Sprintf(
			"the block's egress budget (Budgets.EgressBytes) of %d bytes is spent: %d used; no more connections in this block", b, u)}
	}
	return &refusal{http.StatusForbidden, fmt.Sprintf("the egress budget of %d bytes is spent", x.p.MaxBytes)}
}

// Serve serves each connection l accepts until l is closed.
func (x *Proxy) Serve(ctx context.Context, l net.Listener) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		wg.Go(func() { x.ServeConn(ctx, c) })
	}
}

// ServeConn serves one client connection and closes it: plain HTTP
// requests, each checked, until the client closes it or a request fails;
// or one CONNECT, after which the connection is the tunnel.
func (x *Proxy) ServeConn(ctx context.Context, c net.Conn) {
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer stop()
	lim := &capReader{r: c}
	br := bufio.NewReaderSize(lim, 4096)
	for {
		lim.n = maxHeaderBytes
		// A client waits at most idleTimeout between requests, and sends
		// a request's headers within it.
		_ = c.SetReadDeadline(time.Now().Add(idleTimeout))
		req, err := http.ReadRequest(br)
		_ = c.SetReadDeadline(time.Time{})
		if err != nil {
			var ne net.Error
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !(errors.As(err, &ne) && ne.Timeout()) {
				refuse(c, http.StatusBadRequest, "bad request: "+clip.String(err.Error(), 200))
			}
			return
		}
		lim.n = math.MaxInt64
		if req.Method == http.MethodConnect {
			x.tunnel(ctx, c, br, req)
			return
		}
		if !x.forward(ctx, c, req) {
			return
		}
	}
}

// capReader reads from r at most n bytes, then fails: it bounds a
// request's headers, which http.ReadRequest would otherwise read without
// end.
type capReader struct {
	r io.Reader
	n int64
}

var errHeaderTooLarge = errors.New("the request's headers are over 64 KiB")

func (c *capReader) Read(p []byte) (int, error) {
	if c.n <= 0 {
		return 0, errHeaderTooLarge
	}
	if int64(len(p)) > c.n {
		p = p[:c.n]
	}
	n, err := c.r.Read(p)
	c.n -= int64(n)
	return n, err
}

// target splits a request's host and port, the port defaulting to def.
func target(hostport string, def uint16) (string, uint16, error) {
	host, portText, err := net.SplitHostPort(hostport)
	if err != nil {
		if def == 0 {
			return "", 0, fmt.Errorf("no port in %q", clip.String(hostport, 200))
		}
		host, portText = hostport, strconv.Itoa(int(def))
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil || port == 0 {
		return "", 0, fmt.Errorf("bad port in %q", clip.String(hostport, 200))
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if host == "" {
		return "", 0, errors.New("no host")
	}
	return host, uint16(port), nil
}

// refusal is why a connection was not made; status is its HTTP status.
type refusal struct {
	status int
	msg    string
}

func (r *refusal) Error() string { return r.msg }

// open checks host:port against the policy, resolves it, checks the
// addresses and connects to the one it checked.
func (x *Proxy) open(ctx context.Context, host string, port uint16) (net.Conn, netip.Addr, error) {
	where := net.JoinHostPort(host, strconv.Itoa(int(port)))
	e, ok := x.rules.match(host, port)
	if !ok {
		return nil, netip.Addr{}, &refusal{http.StatusForbidden, where + " is not on the egress allowlist"}
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		addrs, err = x.p.Resolver.LookupNetIP(rctx, "ip", host)
		cancel()
		if err != nil || len(addrs) == 0 {
			return nil, netip.Addr{}, &refusal{http.StatusBadGateway, host + " did not resolve"}
		}
	}
	// Every address the name has must pass: a name that also points at a
	// refused address is refused, whichever the client would have used.
	for _, a := range addrs {
		if why := x.rules.refused(a, e); why != "" {
			a = a.Unmap()
			return nil, netip.Addr{}, &refusal{http.StatusForbidden, fmt.Sprintf(
				"%s resolves to %s, %s, which the egress policy refuses unless its AllowAddresses names it (codemode's --egress-allow-address %s)", host, a, why, a)}
		}
	}
	if n := x.conns.Add(1); n > int64(x.p.MaxConnections) {
		x.conns.Add(-1)
		return nil, netip.Addr{}, &refusal{http.StatusTooManyRequests, fmt.Sprintf("more than %d connections at once through the egress proxy", x.p.MaxConnections)}
	}
	if x.left() <= 0 {
		x.conns.Add(-1)
		return nil, netip.Addr{}, x.overBudget()
	}
	addr := addrs[0]
	dctx, cancel := context.WithTimeout(ctx, x.p.MaxConnDuration)
	defer cancel()
	up, err := x.p.Dial(dctx, "tcp", netip.AddrPortFrom(addr, port).String())
	if err != nil {
		x.conns.Add(-1)
		return nil, addr, &refusal{http.StatusBadGateway, fmt.Sprintf("could not connect to %s: %v", where, clip.String(err.Error(), 200))}
	}
	return &meteredConn{Conn: up, x: x}, addr, nil
}

// meteredConn is a connection to the outside: its bytes count against
// the policy's budget, and closing it frees its place.
type meteredConn struct {
	net.Conn
	x      *Proxy
	closed atomic.Bool
	in     atomic.Int64
	out    atomic.Int64
}

// Read reads at most what is left of the budgets.
func (m *meteredConn) Read(p []byte) (int, error) {
	left := m.x.left()
	if left <= 0 {
		return 0, m.x.overBudget()
	}
	if int64(len(p)) > left {
		p = p[:left]
	}
	n, err := m.Conn.Read(p)
	m.in.Add(int64(n))
	m.x.charge(int64(n))
	return n, err
}

// Write writes all of p or, past what is left of the budgets, none of it.
func (m *meteredConn) Write(p []byte) (int, error) {
	if int64(len(p)) > m.x.left() {
		return 0, m.x.overBudgetBy(int64(len(p)))
	}
	n, err := m.Conn.Write(p)
	m.out.Add(int64(n))
	m.x.charge(int64(n))
	return n, err
}

func (m *meteredConn) Close() error {
	if !m.closed.Swap(true) {
		m.x.conns.Add(-1)
	}
	return m.Conn.Close()
}

// refuse writes an HTTP error whose reason phrase and body say why.
func refuse(w io.Writer, status int, why string) {
	reason := "egress refused: " + oneLine(why)
	body := reason + "\n"
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", status, reason, len(body), body)
}

// oneLine makes s fit on a status line: printable ASCII, bounded.
func oneLine(s string) string {
	b := []byte(clip.String(s, 300))
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			b[i] = '?'
		}
	}
	return string(b)
}

// tunnel answers a CONNECT: after the check, the client's connection is
// joined to the outside one until either ends, the budget is spent or the
// connection's time is up.
func (x *Proxy) tunnel(ctx context.Context, c net.Conn, br *bufio.Reader, req *http.Request) {
	host, port, err := target(req.Host, 0)
	if err != nil {
		x.refused(c, req.Host, 0, &refusal{http.StatusBadRequest, "CONNECT " + err.Error()})
		return
	}
	start := time.Now()
	up, addr, err := x.open(ctx, host, port)
	if err != nil {
		x.refused(c, host, port, err)
		return
	}
	defer up.Close()
	x.log.Info("egress: tunnel opened", "host", host, "port", port, "addr", addr.String(), "method", "CONNECT")
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	deadline := start.Add(x.p.MaxConnDuration)
	_ = c.SetDeadline(deadline)
	_ = up.SetDeadline(deadline)
	m := up.(*meteredConn)
	done := make(chan struct{}, 2)
	go func() {
		// What the client sent after its request, already buffered, goes
		// first; then the connection itself.
		if n := br.Buffered(); n > 0 {
			b, _ := br.Peek(n)
			if x.copy(m.Conn, bytes.NewReader(b), &m.out) == nil {
				_ = x.copy(m.Conn, c, &m.out)
			}
		} else {
			_ = x.copy(m.Conn, c, &m.out)
		}
		closeWrite(m.Conn)
		done <- struct{}{}
	}()
	go func() {
		_ = x.copy(c, m.Conn, &m.in)
		closeWrite(c)
		done <- struct{}{}
	}()
	select {
	case <-done:
		<-done
	case <-ctx.Done():
	}
	x.log.Info("egress: tunnel closed", "host", host, "port", port, "addr", addr.String(), "method", "CONNECT",
		"bytes_out", m.out.Load(), "bytes_in", m.in.Load(), "duration", time.Since(start).Round(time.Millisecond))
}

// copyChunk is what one step of copy moves at most before it checks the
// budget again.
const copyChunk = 256 << 10

// copy moves src to dst until src ends or the budget of bytes is spent,
// counting into n and the proxy's use. It copies in chunks, each between
// the connections themselves when both are TCP, so the kernel splices
// them.
func (x *Proxy) copy(dst io.Writer, src io.Reader, n *atomic.Int64) error {
	return x.copyN(dst, src, math.MaxInt64, n)
}

// copyN is copy of at most limit bytes.
func (x *Proxy) copyN(dst io.Writer, src io.Reader, limit int64, n *atomic.Int64) error {
	for limit > 0 {
		left := x.left()
		if left <= 0 {
			return x.overBudget()
		}
		c, err := io.CopyN(dst, src, min(left, copyChunk, limit))
		n.Add(c)
		x.charge(c)
		limit -= c
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
	return nil
}

// closeWrite ends c's sending side, when it has one to end.
func closeWrite(c any) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}

// hopHeaders are the headers of one hop, not forwarded.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// forward sends one plain HTTP request on and its response back, and says
// whether the client's connection may carry another request.
func (x *Proxy) forward(ctx context.Context, c net.Conn, req *http.Request) bool {
	if req.URL == nil || req.URL.Scheme != "http" || req.URL.Host == "" {
		x.refused(c, req.Host, 0, &refusal{http.StatusBadRequest, "a proxy request needs an absolute http:// URL (use CONNECT for https)"})
		return false
	}
	host, port, err := target(req.URL.Host, 80)
	if err != nil {
		x.refused(c, req.URL.Host, 0, &refusal{http.StatusBadRequest, err.Error()})
		return false
	}
	start := time.Now()
	up, addr, err := x.open(ctx, host, port)
	if err != nil {
		x.refused(c, host, port, err)
		return false
	}
	defer up.Close()
	_ = up.SetDeadline(start.Add(x.p.MaxConnDuration))
	out := req.Clone(ctx)
	out.RequestURI = ""
	for _, h := range hopHeaders {
		out.Header.Del(h)
	}
	out.Close = true // one request per connection to the outside
	if err := out.Write(up); err != nil {
		x.refused(c, host, port, &refusal{http.StatusBadGateway, "could not send the request: " + clip.String(err.Error(), 200)})
		return false
	}
	ubr := bufio.NewReaderSize(up, 64<<10)
	resp, err := http.ReadResponse(ubr, out)
	if err != nil {
		x.refused(c, host, port, &refusal{http.StatusBadGateway, "no response: " + clip.String(err.Error(), 200)})
		return false
	}
	defer resp.Body.Close()
	// A redirect reaches the client as it is: it asks again, and the new
	// request is checked like this one.
	keep := !req.Close
	resp.Close = !keep
	for _, h := range hopHeaders {
		resp.Header.Del(h)
	}
	_ = c.SetWriteDeadline(start.Add(x.p.MaxConnDuration))
	m := up.(*meteredConn)
	// A response to HEAD, and a 1xx, 204 or 304, has no body whatever
	// its Content-Length says.
	bodyless := req.Method == http.MethodHead || resp.StatusCode < 200 ||
		resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusNotModified
	switch {
	case !bodyless && resp.ContentLength > 0 && len(resp.TransferEncoding) == 0:
		err = x.writeSized(c, resp, ubr, m)
	case !bodyless && len(resp.TransferEncoding) == 1 && resp.TransferEncoding[0] == "chunked":
		err = x.writeChunked(c, resp, ubr, m)
	default:
		err = resp.Write(c)
	}
	// One request per connection to the outside: close it now, so that
	// closing the body, which the relays above read around, does not
	// wait on a server that keeps it open.
	_ = up.Close()
	_ = c.SetWriteDeadline(time.Time{})
	x.log.Info("egress: connection", "host", host, "port", port, "addr", addr.String(), "method", req.Method,
		"status", resp.StatusCode, "bytes_out", m.out.Load(), "bytes_in", m.in.Load(), "duration", time.Since(start).Round(time.Millisecond))
	return err == nil && keep
}

// writeSized writes a response whose body has a known length: its head,
// then the body (see relayN).
func (x *Proxy) writeSized(c net.Conn, resp *http.Response, ubr *bufio.Reader, m *meteredConn) error {
	if err := writeHead(c, resp, fmt.Sprintf("Content-Length: %d\r\n", resp.ContentLength)); err != nil {
		return err
	}
	return x.relayN(c, ubr, m, resp.ContentLength)
}

// writeChunked writes a response whose body is chunked as it comes,
// without decoding it: each chunk's size line is checked and passed on,
// its data relayed (see relayN), then the trailer up to its blank line.
func (x *Proxy) writeChunked(c net.Conn, resp *http.Response, ubr *bufio.Reader, m *meteredConn) error {
	if err := writeHead(c, resp, "Transfer-Encoding: chunked\r\n"); err != nil {
		return err
	}
	for {
		line, err := ubr.ReadSlice('\n') // bounded by ubr's size
		if err != nil {
			return err
		}
		size, err := chunkSize(line)
		if err != nil {
			return err
		}
		if _, err := c.Write(line); err != nil {
			return err
		}
		if size == 0 {
			break
		}
		if err := x.relayN(c, ubr, m, size); err != nil {
			return err
		}
		end, err := ubr.ReadSlice('\n')
		if err != nil {
			return err
		}
		if string(end) != "\r\n" {
			return errBadChunk
		}
		if _, err := c.Write(end); err != nil {
			return err
		}
	}
	for range maxTrailerLines {
		line, err := ubr.ReadSlice('\n')
		if err != nil {
			return err
		}
		if !bytes.HasSuffix(line, []byte("\r\n")) {
			return errBadChunk
		}
		if _, err := c.Write(line); err != nil {
			return err
		}
		if string(line) == "\r\n" {
			return nil
		}
	}
	return errBadChunk
}

// maxTrailerLines bounds the lines of a chunked body's trailer.
const maxTrailerLines = 64

var errBadChunk = errors.New("egress: the server's chunked body is malformed")

// chunkSize reads a chunk's size line: hexadecimal digits, optionally
// followed by extensions after ";", ending in CRLF (a bare line feed is
// refused, as Go's own client refuses it, so that the proxy and the client
// never read one body two ways).
func chunkSize(line []byte) (int64, error) {
	var ok bool
	if line, ok = bytes.CutSuffix(line, []byte("\r\n")); !ok {
		return 0, errBadChunk
	}
	if i := bytes.IndexByte(line, ';'); i >= 0 {
		line = line[:i]
	}
	line = bytes.TrimRight(line, " \t")
	if len(line) == 0 || len(line) > 15 { // at most 2^60-1
		return 0, errBadChunk
	}
	n, err := strconv.ParseInt(string(line), 16, 64)
	if err != nil || n < 0 {
		return 0, errBadChunk
	}
	return n, nil
}

// writeHead writes resp's status line and headers, with framing (the
// body's Content-Length or Transfer-Encoding line) in place of the
// server's.
func writeHead(c net.Conn, resp *http.Response, framing string) error {
	var head bytes.Buffer
	fmt.Fprintf(&head, "HTTP/%d.%d %s\r\n", resp.ProtoMajor, resp.ProtoMinor, resp.Status)
	resp.Header.Del("Content-Length")
	if err := resp.Header.Write(&head); err != nil {
		return err
	}
	head.WriteString(framing)
	if resp.Close {
		head.WriteString("Connection: close\r\n")
	}
	head.WriteString("\r\n")
	_, err := c.Write(head.Bytes())
	return err
}

// relayN moves n bytes of the body from the server to the client: what
// ubr holds of them first, the rest straight from the connection, which
// the kernel splices to the client's.
func (x *Proxy) relayN(c net.Conn, ubr *bufio.Reader, m *meteredConn, n int64) error {
	if b := min(int64(ubr.Buffered()), n); b > 0 {
		p, _ := ubr.Peek(int(b))
		if _, err := c.Write(p); err != nil {
			return err
		}
		_, _ = ubr.Discard(int(b))
		n -= b
	}
	if n == 0 {
		return nil
	}
	var moved atomic.Int64
	err := x.copyN(c, m.Conn, n, &moved)
	m.in.Add(moved.Load())
	if err != nil {
		return err
	}
	if moved.Load() != n {
		return io.ErrUnexpectedEOF
	}
	return nil
}

// refused logs a refusal and answers the client with it.
func (x *Proxy) refused(c net.Conn, host string, port uint16, err error) {
	var r *refusal
	if !errors.As(err, &r) {
		r = &refusal{http.StatusBadGateway, err.Error()}
	}
	x.log.Warn("egress: refused", "host", clip.String(host, 200), "port", port, "reason", r.msg)
	refuse(c, r.status, r.msg)
}
