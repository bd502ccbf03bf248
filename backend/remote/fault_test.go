package remote_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/adk-codemode/codemode/backend/remote"
	"github.com/adk-codemode/codemode/backend/warm"
	"github.com/adk-codemode/codemode/internal/protocol/wsproto"
	"github.com/adk-codemode/codemode/transport"
)

func open(t *testing.T, b transport.Backend, cfg transport.SessionConfig) transport.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	s, err := b.Open(ctx, cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func execOK(t *testing.T, s transport.Session, code string) *transport.Result {
	t.Helper()
	r, err := s.Exec(t.Context(), transport.Block{Code: code, Timeout: 30 * time.Second})
	if err != nil || r.ExitCode != 0 {
		t.Fatalf("Exec(%q) = %+v, %v", code, r, err)
	}
	return r
}

// stageOf returns the stage of a lost connection, failing the test on any
// other error.
func stageOf(t *testing.T, err error) transport.Stage {
	t.Helper()
	var ce *transport.ConnectionError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v is not a ConnectionError", err)
	}
	return ce.Stage
}

// runAsync starts a block and returns where its error will arrive.
func runAsync(s transport.Session, code string) <-chan error {
	errc := make(chan error, 1)
	go func() {
		_, err := s.Exec(context.Background(), transport.Block{Code: code, Timeout: time.Minute})
		errc <- err
	}()
	return errc
}

// signal is a tool handler whose tool "started" reports, once, that a
// block is running; code calls it before it blocks.
type signal chan struct{}

const started = "from codemode_runtime import call\ncall('started', {})\n"

func (s signal) CallTool(ctx context.Context, c transport.ToolCall) transport.ToolResult {
	if c.Name == "started" {
		close(s)
	}
	return transport.ToolResult{Value: "ok"}
}

func (s signal) wait(t *testing.T) {
	t.Helper()
	select {
	case <-s:
	case <-time.After(30 * time.Second):
		t.Fatal("the block did not start")
	}
}

func waitErr(t *testing.T, errc <-chan error) error {
	t.Helper()
	select {
	case err := <-errc:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("Exec did not return after the connection was lost")
		return nil
	}
}

func TestServerKilledMidBlock(t *testing.T) {
	srv := startServer(t, nil)
	sig := make(signal)
	// The client tries to resume until its window closes.
	s := open(t, newBackend(t, remote.Config{URL: srv.URL(), Secret: testSecret, ResumeWindow: 2 * time.Second}), transport.SessionConfig{Tools: sig})
	execOK(t, s, "x = 1")
	errc := runAsync(s, started+"import time\ntime.sleep(3600)")
	sig.wait(t)
	if err := srv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if st := stageOf(t, waitErr(t, errc)); st != transport.Unknown {
		t.Errorf("stage = %v, want unknown", st)
	}
	if _, err := s.Exec(t.Context(), transport.Block{Code: "pass"}); stageOf(t, err) != transport.NotRun {
		t.Errorf("the next block: %v, want not run", err)
	}
}

// TestServerExitsWhenCodeIgnoresTheEnd: user code that ignores signals
// and leaves a process behind does not keep the sandbox alive.
func TestServerExitsWhenCodeIgnoresTheEnd(t *testing.T) {
	srv := startServer(t, nil, "--resume-window", "1s")
	p := startProxy(t, srv.addr)
	sig := make(signal)
	s := open(t, newBackend(t, remote.Config{URL: p.URL(), Secret: testSecret, ResumeWindow: time.Second}), transport.SessionConfig{Tools: sig})
	r := execOK(t, s, `
import signal, subprocess
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen(["sleep", "3600"], start_new_session=True)
print(child.pid)`)
	pid, err := strconv.Atoi(strings.TrimSpace(r.Stdout))
	if err != nil {
		t.Fatal(err)
	}
	runAsync(s, started+"while True:\n    try:\n        __import__('time').sleep(3600)\n    except BaseException:\n        pass")
	sig.wait(t)
	p.cutAndDrop() // no shutdown frame: the host is simply gone
	if !srv.waitExit(20 * time.Second) {
		t.Fatalf("the server did not exit\n%s", srv.stderr())
	}
	if err := syscall.Kill(pid, 0); err == nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("process %d the code started outlived the server", pid)
	}
}

func TestServerExitsAfterShutdown(t *testing.T) {
	srv := startServer(t, nil)
	s := open(t, newBackend(t, remote.Config{URL: srv.URL(), Secret: testSecret}), transport.SessionConfig{})
	execOK(t, s, "x = 1")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if !srv.waitExit(15 * time.Second) {
		t.Fatal("the server did not exit after the session closed")
	}
}

func TestTokensRefused(t *testing.T) {
	srv := startServer(t, nil)
	signed := func(secret []byte, expires time.Time) func(context.Context) (string, error) {
		tok := wsproto.Sign(secret, wsproto.Token{Session: wsproto.NewSessionID(), Expires: expires})
		return func(context.Context) (string, error) { return tok, nil }
	}
	tests := []struct {
		name  string
		cfg   remote.Config
		cause string
	}{
		{"no token", remote.Config{}, "no bearer token"},
		{"wrong secret", remote.Config{Secret: []byte("another-secret-0123456789")}, "not valid"},
		{"wrong plain secret", remote.Config{Token: func(context.Context) (string, error) { return "guess", nil }}, "not valid"},
		{"expired", remote.Config{Token: signed(testSecret, time.Now().Add(-time.Hour))}, "expired"},
		{"expiry too far ahead", remote.Config{Token: signed(testSecret, time.Now().Add(time.Hour))}, "further ahead"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.URL = srv.URL()
			_, err := newBackend(t, tc.cfg).Open(t.Context(), transport.SessionConfig{})
			var he *remote.HandshakeError
			if !errors.As(err, &he) || he.StatusCode != http.StatusUnauthorized || !strings.Contains(he.Body, tc.cause) {
				t.Fatalf("Open = %v, want 401 saying %q", err, tc.cause)
			}
		})
	}
	// Nothing started: the server still takes a good session.
	s := open(t, newBackend(t, remote.Config{URL: srv.URL(), Secret: testSecret}), transport.SessionConfig{})
	execOK(t, s, "pass")
}

func TestReplayedTokenRefused(t *testing.T) {
	srv := startServer(t, nil)
	tok := wsproto.Sign(testSecret, wsproto.Token{Session: wsproto.NewSessionID(), Expires: time.Now().Add(time.Minute)})
	b := newBackend(t, remote.Config{URL: srv.URL(), Token: func(context.Context) (string, error) { return tok, nil }})
	s := open(t, b, transport.SessionConfig{})
	execOK(t, s, "pass")
	_, err := b.Open(t.Context(), transport.SessionConfig{})
	var he *remote.HandshakeError
	if !errors.As(err, &he) || he.StatusCode != http.StatusUnauthorized || !strings.Contains(he.Body, "used before") {
		t.Fatalf("replay: %v, want 401 saying the token was used", err)
	}
	execOK(t, s, "pass") // the first session is untouched
}

func TestSecondConnectionBusy(t *testing.T) {
	srv := startServer(t, nil)
	b := newBackend(t, remote.Config{URL: srv.URL(), Secret: testSecret, StartAttempts: 1})
	s := open(t, b, transport.SessionConfig{})
	_, err := b.Open(t.Context(), transport.SessionConfig{})
	var he *remote.HandshakeError
	if !errors.As(err, &he) || he.StatusCode != http.StatusConflict || !strings.Contains(he.Body, "one session per process") {
		t.Fatalf("second Open = %v, want 409", err)
	}
	execOK(t, s, "pass")
	resp, err := http.Get("http://" + srv.addr + "/health")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("health during a session: %v %v", resp, err)
	}
	resp.Body.Close()
}

func TestOversizeMessageClosesWithReason(t *testing.T) {
	srv := startServer(t, nil, "--max-message", "1048576")
	s := open(t, newBackend(t, remote.Config{URL: srv.URL(), Secret: testSecret}), transport.SessionConfig{})
	_, err := s.Exec(t.Context(), transport.Block{Code: "x = '" + strings.Repeat("a", 2<<20) + "'"})
	// The server refused the run frame: the code did not run, whether the
	// refusal reached the write or the read first.
	if stageOf(t, err) == transport.Ran || !strings.Contains(err.Error(), "message size exceeds 1048576 bytes") {
		t.Fatalf("Exec = %v, want the connection closed naming the message limit", err)
	}
	if !srv.waitExit(15 * time.Second) {
		t.Error("the server did not exit")
	}
}

func TestOversizeToolsPackageClosesWithReason(t *testing.T) {
	srv := startServer(t, nil, "--max-files-bytes", "1048576")
	b := newBackend(t, remote.Config{URL: srv.URL(), Secret: testSecret})
	files := map[string][]byte{"tools/__init__.py": bytes.Repeat([]byte("#"), 2<<20)}
	_, err := b.Open(t.Context(), transport.SessionConfig{Files: files})
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.CloseMessageTooBig || !strings.Contains(ce.Text, "tools package size exceeds 1048576 bytes") {
		t.Fatalf("Open = %v, want the connection closed naming the tools package limit", err)
	}
	if !srv.waitExit(15 * time.Second) {
		t.Error("the server did not exit")
	}
}

func TestBadToolsPackageRefused(t *testing.T) {
	srv := startServer(t, nil)
	ws := dialRaw(t, srv.addr, "Bearer "+string(testSecret))
	// A symlink entry is refused, with a reason.
	var tarball bytes.Buffer
	tarball.Write(symlinkTar(t))
	if err := ws.WriteMessage(websocket.BinaryMessage, tarball.Bytes()); err != nil {
		t.Fatal(err)
	}
	_, _, err := ws.ReadMessage()
	if !websocket.IsCloseError(err, websocket.CloseInvalidFramePayloadData) || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("read = %v, want close 1007 refusing the link", err)
	}
}

func TestServerThatNeverAnswers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // accepted, never answered, closed with the listener
		}
	}()
	b := newBackend(t, remote.Config{URL: "ws://" + ln.Addr().String(), Secret: testSecret, ConnectTimeout: 300 * time.Millisecond, StartAttempts: 1})
	_, err = b.Open(t.Context(), transport.SessionConfig{})
	if err == nil || !strings.Contains(err.Error(), "no WebSocket handshake within 300ms") || !remote.Transient(err) {
		t.Fatalf("Open = %v, want a transient connect timeout", err)
	}
}

func TestSlowHandshakeBounded(t *testing.T) {
	t.Run("request", func(t *testing.T) {
		srv := startServer(t, nil, "--handshake-timeout", "500ms")
		c, err := net.Dial("tcp", srv.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n") // and never the rest
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil {
			// The server may answer 408 before closing; it must close.
			_, err = c.Read(make([]byte, 4096))
			for err == nil {
				_, err = c.Read(make([]byte, 4096))
			}
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatal("the server kept a half-sent request open")
		}
		// A slow request claims nothing: a session still starts.
		s := open(t, newBackend(t, remote.Config{URL: srv.URL(), Secret: testSecret}), transport.SessionConfig{})
		execOK(t, s, "pass")
	})
	t.Run("files message", func(t *testing.T) {
		srv := startServer(t, nil, "--handshake-timeout", "500ms")
		ws := dialRaw(t, srv.addr, "Bearer "+string(testSecret))
		_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, _, err := ws.ReadMessage()
		if !websocket.IsCloseError(err, websocket.ClosePolicyViolation) || !strings.Contains(err.Error(), "handshake time exceeds") {
			t.Fatalf("read = %v, want close 1008 naming the handshake limit", err)
		}
		if !srv.waitExit(15 * time.Second) {
			t.Error("the server did not exit")
		}
	})
}

func TestRequests(t *testing.T) {
	srv := startServer(t, nil)
	for _, tc := range []struct {
		path string
		auth string
		want int
	}{
		{"/health", "", http.StatusOK},
		{"/nope", "", http.StatusNotFound},
		{"/", "", http.StatusUnauthorized},
		{"/", "Bearer " + string(testSecret), http.StatusBadRequest}, // no subprotocol
	} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+srv.addr+tc.path, nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("GET %s: %d, want %d", tc.path, resp.StatusCode, tc.want)
		}
	}
}

func TestRetriesOnlyTransientErrors(t *testing.T) {
	srv := startServer(t, nil)
	var dials atomic.Int32
	flaky := func(ctx context.Context, network, addr string) (net.Conn, error) {
		if dials.Add(1) < 3 {
			return nil, &net.OpError{Op: "dial", Net: network, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	b := newBackend(t, remote.Config{URL: srv.URL(), Secret: testSecret, DialContext: flaky, RetryDelay: 10 * time.Millisecond, RetryJitter: time.Millisecond})
	s := open(t, b, transport.SessionConfig{})
	execOK(t, s, "pass")
	if n := dials.Load(); n != 3 {
		t.Errorf("%d dials, want 3", n)
	}

	dials.Store(10) // dials succeed from now on
	bad := newBackend(t, remote.Config{URL: srv.URL(), Secret: []byte("wrong-secret-0123456789"), DialContext: flaky, RetryDelay: 10 * time.Millisecond})
	if _, err := bad.Open(t.Context(), transport.SessionConfig{}); err == nil {
		t.Fatal("a wrong secret opened a session")
	}
	if n := dials.Load(); n != 11 {
		t.Errorf("a refused token was tried %d times, want once", n-10)
	}
}

func TestProvisionerReleases(t *testing.T) {
	var provisioned, released atomic.Int32
	inner := provisioner(t)
	prov := func(ctx context.Context) (string, func(), error) {
		provisioned.Add(1)
		u, rel, err := inner(ctx)
		return u, func() { released.Add(1); rel() }, err
	}
	b := newBackend(t, remote.Config{Provision: prov, Secret: testSecret})
	s := open(t, b, transport.SessionConfig{})
	execOK(t, s, "pass")
	s.Close()
	if provisioned.Load() != 1 || released.Load() != 1 {
		t.Errorf("provisioned %d, released %d; want 1 and 1", provisioned.Load(), released.Load())
	}
	bad := newBackend(t, remote.Config{Provision: prov, Secret: []byte("wrong-secret-0123456789")})
	if _, err := bad.Open(t.Context(), transport.SessionConfig{}); err == nil {
		t.Fatal("a wrong secret opened a session")
	}
	if provisioned.Load() != 2 || released.Load() != 2 {
		t.Errorf("after a refused start: provisioned %d, released %d; want 2 and 2", provisioned.Load(), released.Load())
	}
}

func TestPool(t *testing.T) {
	p := &warm.Pool{Backend: newBackend(t, remote.Config{Provision: provisioner(t), Secret: testSecret}), Size: 1}
	defer p.Close()
	for range 2 {
		s := open(t, p, transport.SessionConfig{Tools: transport.ToolHandlerFunc(func(ctx context.Context, c transport.ToolCall) transport.ToolResult {
			return transport.ToolResult{Value: c.Name}
		})})
		r := execOK(t, s, "from codemode_runtime import call\nprint(call('hi', {}))")
		if r.Stdout != "hi\n" {
			t.Errorf("stdout %q", r.Stdout)
		}
		s.Close()
	}
}

// TestSecretHiddenFromCode: code in the session, running as the server's
// user, finds the secret in no process's environment. A root test run
// starts the server as nobody, as root could read anything.
func TestSecretHiddenFromCode(t *testing.T) {
	var cred *syscall.Credential
	dir := tempDir(t)
	if os.Geteuid() == 0 {
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
		if err := os.Chmod(filepath.Dir(dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := launchAs(dir, cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.stop()
	s := open(t, newBackend(t, remote.Config{URL: srv.URL(), Secret: testSecret}), transport.SessionConfig{})
	r := execOK(t, s, fmt.Sprintf(`
import os
secret, found, readable = %q.encode(), [], 0
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        env = open(f"/proc/{pid}/environ", "rb").read()
    except OSError:
        continue
    readable += 1
    if secret in env:
        found.append(pid)
print(found, readable > 0, os.getppid())`, testSecret))
	if !strings.HasPrefix(r.Stdout, "[] True") {
		t.Fatalf("the code found the secret (or read no environment at all): %s", r.Stdout)
	}
	s.Close()
}
