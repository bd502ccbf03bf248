package remote_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/adk-codemode/codemode/backend/remote"
	"github.com/adk-codemode/codemode/internal/protocol/wsproto"
	"github.com/adk-codemode/codemode/transport"
)

// countRun is code that records, in the workspace, that the block ran:
// runs counts the records, so a block run twice shows.
const countRun = "open('runs.log', 'a').write('ran\\n')\n"

func (s *server) runs(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.work, "runs.log"))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("ran\n"))
}

// waitLog returns the first match of re in the server's log, waiting
// for it within a bound (nil if it never came). The server's stderr
// reaches the test through a pipe, so a line the server wrote before it
// sent a result may still be on its way when the result arrives.
func (s *server) waitLog(re *regexp.Regexp) []string {
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if m := re.FindStringSubmatch(s.stderr()); m != nil || time.Now().After(deadline) {
			return m
		}
	}
}

var resumedLine = regexp.MustCompile(`session resumed`)

// tookResume reports whether the server logged a resume it took.
func (s *server) tookResume() bool { return s.waitLog(resumedLine) != nil }

func execAsync(s transport.Session, code string) <-chan execResult {
	done := make(chan execResult, 1)
	go func() {
		r, err := s.Exec(context.Background(), transport.Block{Code: code, Timeout: 2 * time.Minute})
		done <- execResult{r, err}
	}()
	return done
}

type execResult struct {
	r   *transport.Result
	err error
}

func waitResult(t *testing.T, done <-chan execResult) *transport.Result {
	t.Helper()
	select {
	case res := <-done:
		if res.err != nil || res.r.ExitCode != 0 {
			t.Fatalf("Exec = %+v, %v", res.r, res.err)
		}
		return res.r
	case <-time.After(2 * time.Minute):
		t.Fatal("Exec did not return")
		return nil
	}
}

func resumingBackend(t *testing.T, url string) *remote.Backend {
	return newBackend(t, remote.Config{URL: url, Secret: testSecret, RetryDelay: 50 * time.Millisecond, RetryJitter: 10 * time.Millisecond})
}

// TestResumeMidBlock: the connection is cut while a block runs and prints;
// the block runs on, once, and all its output arrives.
func TestResumeMidBlock(t *testing.T) {
	srv := startServer(t, nil)
	p := startProxy(t, srv.addr)
	sig := make(signal)
	s := open(t, resumingBackend(t, p.URL()), transport.SessionConfig{Tools: sig})
	done := execAsync(s, countRun+started+`
import os, time
print("before", flush=True)
while not os.path.exists("release"):
    time.sleep(0.01)
for i in range(1000):
    print(i)
`)
	sig.wait(t)
	p.cut()
	// The block goes on while the link is down: its output waits.
	if err := os.WriteFile(filepath.Join(srv.work, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := waitResult(t, done)
	var want strings.Builder
	want.WriteString("before\n")
	for i := range 1000 {
		want.WriteString(strconv.Itoa(i) + "\n")
	}
	if r.Stdout != want.String() {
		t.Errorf("stdout %d bytes, want %d: %.200q", len(r.Stdout), want.Len(), r.Stdout)
	}
	if n := srv.runs(t); n != 1 {
		t.Errorf("the block ran %d times, want once", n)
	}
	if !srv.tookResume() {
		t.Error("the server took no resume")
	}
	if got := execOK(t, s, "print('still here')").Stdout; got != "still here\n" {
		t.Errorf("the next block printed %q", got)
	}
}

// TestResumeDuringToolCall: the connection is cut while the host runs a
// tool; the tool runs once and its result reaches the code.
func TestResumeDuringToolCall(t *testing.T) {
	srv := startServer(t, nil)
	p := startProxy(t, srv.addr)
	var calls atomic.Int32
	inTool, cutDone := make(chan struct{}), make(chan struct{})
	tools := transport.ToolHandlerFunc(func(ctx context.Context, c transport.ToolCall) transport.ToolResult {
		if calls.Add(1) == 1 {
			close(inTool)
		}
		select {
		case <-cutDone:
		case <-ctx.Done():
			return transport.ToolResult{Err: &transport.ToolError{Type: "ToolError", Message: "cancelled"}}
		}
		return transport.ToolResult{Value: "result-7"}
	})
	s := open(t, resumingBackend(t, p.URL()), transport.SessionConfig{Tools: tools})
	done := execAsync(s, countRun+"from codemode_runtime import call\nprint(call('count', {}))")
	select {
	case <-inTool:
	case <-time.After(time.Minute):
		t.Fatal("the tool was not called")
	}
	p.cut()
	close(cutDone) // the result is sent while the link is down
	r := waitResult(t, done)
	if r.Stdout != "result-7\n" {
		t.Errorf("stdout %q, want the tool's result", r.Stdout)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the tool ran %d times, want once", n)
	}
	if n := srv.runs(t); n != 1 {
		t.Errorf("the block ran %d times, want once", n)
	}
	if !srv.tookResume() {
		t.Error("the server took no resume")
	}
}

// TestResumeBetweenBlocks: a cut between blocks is resumed when the next
// block is sent; the session's state is intact.
func TestResumeBetweenBlocks(t *testing.T) {
	srv := startServer(t, nil)
	p := startProxy(t, srv.addr)
	s := open(t, resumingBackend(t, p.URL()), transport.SessionConfig{})
	execOK(t, s, countRun+"x = 41")
	p.cut()
	if got := execOK(t, s, countRun+"print(x + 1)").Stdout; got != "42\n" {
		t.Errorf("stdout %q, want 42", got)
	}
	if n := srv.runs(t); n != 2 {
		t.Errorf("%d runs of the two blocks, want 2", n)
	}
	if !srv.tookResume() {
		t.Error("the server took no resume")
	}
}

// TestCutPastResumeWindow: a link that stays down ends the session as a
// lost connection did before resumes: the block is classified, and the
// server exits.
func TestCutPastResumeWindow(t *testing.T) {
	for _, tc := range []struct {
		name string
		code string // runs after the block has signalled that it started
		want transport.Stage
	}{
		{"mid-block", "import time\ntime.sleep(3600)", transport.Unknown},
		{"during a tool call", "call('block', {})", transport.Unknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sig, blocked := make(signal), make(chan struct{})
			tools := transport.ToolHandlerFunc(func(ctx context.Context, c transport.ToolCall) transport.ToolResult {
				if c.Name == "block" {
					close(blocked)
					<-ctx.Done()
					return transport.ToolResult{}
				}
				return sig.CallTool(ctx, c)
			})
			srv := startServer(t, nil, "--resume-window", "1s")
			p := startProxy(t, srv.addr)
			s := open(t, newBackend(t, remote.Config{URL: p.URL(), Secret: testSecret, ResumeWindow: time.Second}), transport.SessionConfig{Tools: tools})
			execOK(t, s, "x = 1")
			errc := runAsync(s, started+tc.code)
			sig.wait(t)
			if tc.name == "during a tool call" {
				<-blocked
			}
			p.cutAndDrop()
			err := waitErr(t, errc)
			if st := stageOf(t, err); st != tc.want || !strings.Contains(err.Error(), "not resumed within 1s") {
				t.Errorf("Exec = %v (stage %v), want %v, not resumed", err, st, tc.want)
			}
			if !srv.waitExit(30 * time.Second) {
				t.Error("the server did not exit after its window")
			}
		})
	}
	t.Run("between blocks", func(t *testing.T) {
		srv := startServer(t, nil, "--resume-window", "1s")
		p := startProxy(t, srv.addr)
		s := open(t, newBackend(t, remote.Config{URL: p.URL(), Secret: testSecret, ResumeWindow: time.Second}), transport.SessionConfig{})
		execOK(t, s, "x = 1")
		p.cutAndDrop()
		if !srv.waitExit(30 * time.Second) {
			t.Fatal("the server did not exit after its window")
		}
		_, err := s.Exec(t.Context(), transport.Block{Code: "print(x)"})
		if st := stageOf(t, err); st != transport.NotRun {
			t.Errorf("stage = %v, want not run", st)
		}
	})
}

// recorder keeps what the backend writes on its connections, where the
// resume credential travels.
type recorder struct {
	mu  sync.Mutex
	out bytes.Buffer
}

type recordedConn struct {
	net.Conn
	r *recorder
}

func (c recordedConn) Write(p []byte) (int, error) {
	c.r.mu.Lock()
	if c.r.out.Len() < 1<<20 {
		c.r.out.Write(p)
	}
	c.r.mu.Unlock()
	return c.Conn.Write(p)
}

func (r *recorder) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return recordedConn{c, r}, nil
}

var credentialRE = regexp.MustCompile(wsproto.ResumeHeader + `: (cr1\.[A-Za-z0-9_.-]+)\r\n`)

// TestResumeRefused: a resume credential seen on the wire cannot be used
// again, a forged one is refused, and neither disturbs the session.
func TestResumeRefused(t *testing.T) {
	srv := startServer(t, nil)
	p := startProxy(t, srv.addr)
	rec := &recorder{}
	s := open(t, newBackend(t, remote.Config{URL: p.URL(), Secret: testSecret, DialContext: rec.dial, RetryDelay: 50 * time.Millisecond}), transport.SessionConfig{})
	execOK(t, s, "x = 1")
	p.cut()
	execOK(t, s, "x = 2")
	rec.mu.Lock()
	m := credentialRE.FindSubmatch(rec.out.Bytes())
	rec.mu.Unlock()
	if m == nil {
		t.Fatal("no resume credential was sent")
	}
	used := string(m[1])
	forged := used[:len(used)-2] + map[bool]string{true: "AA", false: "AB"}[!strings.HasSuffix(used, "AA")]
	for _, tc := range []struct {
		name, cred string
		status     int
		body       string
	}{
		{"replayed", used, http.StatusUnauthorized, "used before"},
		{"forged", forged, http.StatusUnauthorized, "not valid for this session"},
		{"malformed", "cr1.nope", http.StatusUnauthorized, "not valid"},
	} {
		tok := wsproto.Sign(testSecret, wsproto.Token{Session: wsproto.NewSessionID(), Expires: time.Now().Add(time.Minute)})
		h := http.Header{"Authorization": {"Bearer " + tok}, wsproto.ResumeHeader: {tc.cred}}
		d := websocket.Dialer{Subprotocols: []string{wsproto.Subprotocol}}
		ws, resp, err := d.Dial("ws://"+srv.addr+"/", h)
		if err == nil {
			ws.Close()
			t.Fatalf("%s: the resume was accepted", tc.name)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(string(body), tc.body) {
			t.Errorf("%s: %d %q, want %d saying %q", tc.name, resp.StatusCode, body, tc.status, tc.body)
		}
	}
	if got := execOK(t, s, "print(x)").Stdout; got != "2\n" {
		t.Errorf("after the refused resumes the session printed %q", got)
	}
}

// TestResumeUnackedBound: while the link is down, the server keeps what
// the host has not acknowledged up to its bound (16 MiB) and then holds
// the block's further tool calls back; when the link is back, it sends
// again no more than the bound, and every call arrives, once.
func TestResumeUnackedBound(t *testing.T) {
	const bound = 16 << 20
	const calls, size = 12, 2 << 20 // 24 MiB of calls in all
	srv := startServer(t, nil)
	p := startProxy(t, srv.addr)
	var mu sync.Mutex
	seen := map[int]int{}
	tools := transport.ToolHandlerFunc(func(ctx context.Context, c transport.ToolCall) transport.ToolResult {
		i, _ := c.Args["i"].(float64)
		data, _ := c.Args["data"].(string)
		mu.Lock()
		seen[int(i)]++
		mu.Unlock()
		if len(data) != size || strings.Trim(data, "x") != "" {
			return transport.ToolResult{Err: &transport.ToolError{Type: "ToolError", Message: "the data arrived damaged"}}
		}
		return transport.ToolResult{Value: int(i) * 10}
	})
	s := open(t, resumingBackend(t, p.URL()), transport.SessionConfig{Tools: tools})
	done := execAsync(s, countRun+`
import os, threading, time
from codemode_runtime import call
open('waiting', 'w').close()
while not os.path.exists('go'):
    time.sleep(0.01)
data = 'x' * `+strconv.Itoa(size)+`
out = [None] * `+strconv.Itoa(calls)+`
def f(i):
    out[i] = call('big', {'i': i, 'data': data})
ts = [threading.Thread(target=f, args=(i,)) for i in range(len(out))]
for th in ts:
    th.start()
for th in ts:
    th.join()
print(out)
`)
	waitFile(t, filepath.Join(srv.work, "waiting"))
	p.cutAndDrop()
	if err := os.WriteFile(filepath.Join(srv.work, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// The server reports when its writes reach the bound; the link stays
	// down until then (well inside the 30 s resume window).
	waitRe := regexp.MustCompile(`writes wait for the peer.* unacked=(\d+) bound=(\d+) connected=false`)
	var m []string
	for deadline := time.Now().Add(25 * time.Second); m == nil; time.Sleep(10 * time.Millisecond) {
		if m = waitRe.FindStringSubmatch(srv.stderr()); m == nil && time.Now().After(deadline) {
			t.Fatalf("the server's writes never waited at the bound while the link was down; its log:\n%s", srv.stderr())
		}
	}
	if unacked, _ := strconv.Atoi(m[1]); unacked > bound || unacked < bound-2*size || m[2] != strconv.Itoa(bound) {
		t.Fatalf("the server waited with %s bytes unacknowledged, bound %s; want at most %d and within two calls of it", m[1], m[2], bound)
	}
	mu.Lock()
	early := len(seen)
	mu.Unlock()
	if early != 0 {
		t.Fatalf("%d calls reached the host while the link was down", early)
	}
	p.down.Store(false)

	r := waitResult(t, done)
	var want []string
	for i := range calls {
		want = append(want, strconv.Itoa(i*10))
	}
	if got := strings.TrimSpace(r.Stdout); got != "["+strings.Join(want, ", ")+"]" {
		t.Errorf("the block printed %q", got)
	}
	mu.Lock()
	for i := range calls {
		if seen[i] != 1 {
			t.Errorf("call %d reached the host %d times, want once", i, seen[i])
		}
	}
	mu.Unlock()
	resent := srv.waitLog(regexp.MustCompile(`sending again what the peer has not acknowledged.* bytes=(\d+)`))
	if resent == nil {
		t.Fatalf("the server logged no resend; its log:\n%s", srv.stderr())
	}
	t.Logf("the server waited with %s bytes unacknowledged and sent %s again on the resumed link", m[1], resent[1])
	if n, _ := strconv.Atoi(resent[1]); n > bound || n == 0 {
		t.Errorf("the server sent %s bytes again on the resumed link, want at most %d", resent[1], bound)
	}
	if n := srv.runs(t); n != 1 {
		t.Errorf("the block ran %d times, want once", n)
	}
}

// waitFile waits for a file the sandbox writes.
func waitFile(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sandbox did not write %s", path)
		}
	}
}
