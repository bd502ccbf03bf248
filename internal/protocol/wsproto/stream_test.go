package wsproto

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// link is a loopback WebSocket server that runs one Resumable session and
// takes resumes of it, and a client dialer whose connections the test can
// cut.
type link struct {
	t      testing.TB
	srv    *httptest.Server
	opts   Options
	server chan *Resumable
	mu     sync.Mutex
	sess   *Resumable
	conns  []net.Conn
	down   bool // refuse new connections
	dials  int
	// hold, if set, holds the next resume after its handshake, before it
	// is attached, until it is closed; held is closed once it is held.
	hold, held chan struct{}
	attached   chan error // the result of each resume's Attach, if set
}

func newLink(t testing.TB, opts Options) *link { return newLinks(t, opts, opts) }

// newLinks gives the server's end other options.
func newLinks(t testing.TB, opts, sopts Options) *link {
	t.Helper()
	k := &link{t: t, opts: opts, server: make(chan *Resumable, 1)}
	k.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k.mu.Lock()
		sess := k.sess
		k.mu.Unlock()
		if cred := r.Header.Get(ResumeHeader); cred != "" {
			if sess == nil {
				http.Error(w, "no session", http.StatusConflict)
				return
			}
			res, err := sess.CheckResume(cred)
			if err != nil {
				http.Error(w, err.Error(), http.StatusUnauthorized)
				return
			}
			ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
			if err != nil {
				return
			}
			k.mu.Lock()
			hold, held, attached := k.hold, k.held, k.attached
			k.hold, k.held = nil, nil
			k.mu.Unlock()
			if hold != nil {
				close(held)
				<-hold
			}
			err = sess.Attach(ws, res)
			if attached != nil {
				attached <- err
			}
			return
		}
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			t.Error(err)
			return
		}
		s := NewServer(NewStream(ws, sopts), sopts)
		k.mu.Lock()
		k.sess = s
		k.mu.Unlock()
		k.server <- s
	}))
	t.Cleanup(k.srv.Close)
	return k
}

func (k *link) url() string { return "ws" + strings.TrimPrefix(k.srv.URL, "http") }

func (k *link) dial(ctx context.Context, cred string) (*websocket.Conn, error) {
	k.mu.Lock()
	down := k.down
	k.dials++
	k.mu.Unlock()
	if down {
		return nil, errors.New("the test keeps the link down")
	}
	d := websocket.Dialer{NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			k.mu.Lock()
			k.conns = append(k.conns, c)
			k.mu.Unlock()
		}
		return c, err
	}}
	h := http.Header{}
	if cred != "" {
		h.Set(ResumeHeader, cred)
	}
	ws, _, err := d.DialContext(ctx, k.url(), h)
	return ws, err
}

// open starts a session: the client's end and the server's.
func (k *link) open() (*Resumable, *Resumable) {
	k.t.Helper()
	ws, err := k.dial(context.Background(), "")
	if err != nil {
		k.t.Fatal(err)
	}
	c := NewClient(NewStream(ws, k.opts), k.opts, Redial{Dial: k.dial, Delay: func(int) time.Duration { return 20 * time.Millisecond }})
	s := <-k.server
	k.t.Cleanup(func() { c.Close(); s.Close() })
	return c, s
}

// cut closes every connection the client made, as a dropped link does;
// with down, new ones are refused until up.
func (k *link) cut(down bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.down = down
	for _, c := range k.conns {
		c.Close()
	}
	k.conns = nil
}

func readLine(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	type res struct {
		s   string
		err error
	}
	got := make(chan res, 1)
	go func() { s, err := r.ReadString('\n'); got <- res{s, err} }()
	select {
	case g := <-got:
		if g.err != nil {
			t.Fatalf("read: %v", g.err)
		}
		return g.s
	case <-time.After(60 * time.Second):
		t.Fatal("nothing arrived")
		return ""
	}
}

// readLines reads r's lines as they come, then its error, keeping a read
// pending throughout (as a frame reader does) for up to n lines not yet
// taken. read, if set, is called with the number of each line read, from
// 0, up to n-1.
func readLines(r io.Reader, n int, read func(i int)) <-chan readResult {
	lines := make(chan readResult, n+1)
	go func() {
		br := bufio.NewReader(r)
		for i := 0; ; i++ {
			s, err := br.ReadString('\n')
			if err == nil && i < n && read != nil {
				read(i)
			}
			lines <- readResult{s, err}
			if err != nil {
				return
			}
		}
	}()
	return lines
}

type readResult struct {
	s   string
	err error
}

// nextLine returns the next line from readLines.
func nextLine(t *testing.T, lines <-chan readResult) string {
	t.Helper()
	select {
	case g := <-lines:
		if g.err != nil {
			t.Fatalf("read: %v", g.err)
		}
		return g.s
	case <-time.After(60 * time.Second):
		t.Fatal("nothing arrived")
		return ""
	}
}

func TestResumableCarriesBothWays(t *testing.T) {
	c, s := newLink(t, Options{}).open()
	if _, err := c.Write([]byte("to server\n")); err != nil {
		t.Fatal(err)
	}
	if got := readLine(t, bufio.NewReader(s)); got != "to server\n" {
		t.Errorf("server read %q", got)
	}
	if _, err := s.Write([]byte("to client\n")); err != nil {
		t.Fatal(err)
	}
	if got := readLine(t, bufio.NewReader(c)); got != "to client\n" {
		t.Errorf("client read %q", got)
	}
	if c.Session() == "" || c.Session() != s.Session() {
		t.Errorf("session ids %q and %q", c.Session(), s.Session())
	}
	c.Close()
	if _, err := io.ReadAll(s); err != nil {
		t.Errorf("after the client's close the server read %v, want EOF", err)
	}
}

// TestResumableSurvivesCuts: lines written both ways while the link is
// cut again and again all arrive, once each, in order.
func TestResumableSurvivesCuts(t *testing.T) {
	k := newLink(t, Options{})
	c, s := k.open()
	const n, ahead = 300, 10
	// A writer keeps at most ahead lines in front of what the other side
	// has read, so that each cut finds lines still to be written both
	// ways, which only a resumed connection carries.
	toServer, toClient := make(chan struct{}, ahead), make(chan struct{}, ahead)
	for range ahead {
		toServer <- struct{}{}
		toClient <- struct{}{}
	}
	write := func(w io.Writer, who string, room <-chan struct{}) {
		for i := range n {
			<-room
			if _, err := fmt.Fprintf(w, "%s %d\n", who, i); err != nil {
				t.Errorf("%s write %d: %v", who, i, err)
				return
			}
		}
	}
	go write(c, "client", toServer)
	go write(s, "server", toClient)
	// Both sides keep a read pending, as a frame reader does: a side
	// notices a lost connection by reading or writing it. Reading one
	// side at a time is not enough: a server whose acknowledgement fails
	// gives the connection up, with the client's lines still unread on
	// it, and waits for a resume that only the client can make, while a
	// client that is not being read, and has nothing to write or to
	// acknowledge, never learns that the connection is gone. The cuts come
	// as the server reads.
	cr := readLines(c, n, func(int) { toClient <- struct{}{} })
	sr := readLines(s, n, func(i int) {
		toServer <- struct{}{}
		if i%50 == 24 {
			k.cut(false)
		}
	})
	for i := range n {
		if got, want := nextLine(t, sr), fmt.Sprintf("client %d\n", i); got != want {
			t.Fatalf("server read %q, want %q", got, want)
		}
		if got, want := nextLine(t, cr), fmt.Sprintf("server %d\n", i); got != want {
			t.Fatalf("client read %q, want %q", got, want)
		}
	}
	k.mu.Lock()
	dials := k.dials
	k.mu.Unlock()
	if dials < 2 {
		t.Errorf("%d dials: the cuts were never resumed", dials)
	}
}

// TestResumableRefusesAnOvertakenResume: a resume whose connection is
// attached only after a later resume of the session was accepted is
// refused: what the client said on it is out of date.
func TestResumableRefusesAnOvertakenResume(t *testing.T) {
	k := newLink(t, Options{})
	c, s := k.open()
	// A read is kept pending on both sides, as a frame reader does, so
	// that a lost connection is noticed at once.
	cr, sr := readLines(c, 16, nil), readLines(s, 16, nil)
	exchange := func(line string) {
		t.Helper()
		if _, err := io.WriteString(s, "to client "+line); err != nil {
			t.Fatal(err)
		}
		if got := nextLine(t, cr); got != "to client "+line {
			t.Fatalf("client read %q", got)
		}
		if _, err := io.WriteString(c, "to server "+line); err != nil {
			t.Fatal(err)
		}
		if got := nextLine(t, sr); got != "to server "+line {
			t.Fatalf("server read %q", got)
		}
	}
	exchange("1\n")
	hold, held, attached := make(chan struct{}), make(chan struct{}), make(chan error, 2)
	k.mu.Lock()
	k.hold, k.held, k.attached = hold, held, attached
	k.mu.Unlock()
	// The first resume is held before it is attached, with the client's
	// greeting (its acknowledgement so far) waiting on its connection.
	k.cut(false)
	<-held
	for {
		// The client attaches under wmu and writes its greeting before
		// it lets go.
		c.wmu.Lock()
		c.mu.Lock()
		l := c.link
		c.mu.Unlock()
		c.wmu.Unlock()
		if l != nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	// That connection is lost too; the second resume is attached, and
	// the client acknowledges more.
	k.cut(false)
	exchange("2\n")
	if err := <-attached; err != nil {
		t.Fatalf("the second resume: %v", err)
	}
	close(hold)
	err := <-attached
	exchange("3\n")
	if !errors.Is(err, ErrResumeSuperseded) {
		t.Errorf("the overtaken resume's Attach = %v, want ErrResumeSuperseded", err)
	}
}

func TestResumableNotResumedWithinWindow(t *testing.T) {
	k := newLink(t, Options{ResumeWindow: 500 * time.Millisecond})
	c, s := k.open()
	if _, err := c.Write([]byte("x\n")); err != nil {
		t.Fatal(err)
	}
	readLine(t, bufio.NewReader(s))
	k.cut(true)
	for _, r := range []*Resumable{c, s} {
		_, err := io.ReadAll(r)
		if !errors.Is(err, ErrNotResumed) || !strings.Contains(err.Error(), "within 500ms") {
			t.Errorf("read = %v, want ErrNotResumed naming the window", err)
		}
		select {
		case <-r.Done():
		case <-time.After(30 * time.Second):
			t.Error("Done not closed")
		}
	}
	if _, err := c.Write([]byte("y\n")); !errors.Is(err, ErrNotResumed) {
		t.Errorf("write after the window: %v, want ErrNotResumed", err)
	}
	if _, err := s.CheckResume(resumeCredential(s.key, s.id, 99)); !errors.Is(err, ErrSessionEnded) {
		t.Errorf("a resume after the end: %v, want ErrSessionEnded", err)
	}
}

func TestCheckResume(t *testing.T) {
	k := newLink(t, Options{})
	_, s := k.open()
	good := resumeCredential(s.key, s.id, 1)
	forged := resumeCredential([]byte(strings.Repeat("k", keyBytes)), s.id, 2)
	other := resumeCredential(s.key, "another", 3)
	for _, tc := range []struct {
		name, cred string
		want       error
	}{
		{"malformed", "cr1.x", ErrResumeRefused},
		{"another key", forged, ErrResumeRefused},
		{"another session", other, ErrOtherSession},
		{"good", good, nil},
		{"replayed", good, ErrResumeReplayed},
		{"an older attempt", resumeCredential(s.key, s.id, 1), ErrResumeReplayed},
		{"the next attempt", resumeCredential(s.key, s.id, 2), nil},
	} {
		if _, err := s.CheckResume(tc.cred); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("%s: CheckResume = %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestResumableClosesOnOversizeMessage(t *testing.T) {
	opts := Options{MaxMessageBytes: 1000}
	c, s := newLink(t, opts).open()
	// A well-behaved writer splits; a peer that sends one big message
	// anyway is refused.
	c.mu.Lock()
	l := c.link
	c.mu.Unlock()
	for l != nil && !c.greetedLink(l) {
		time.Sleep(10 * time.Millisecond)
	}
	c.wmu.Lock()
	err := l.writeMessage(appendData(nil, 0, 0, bytes.Repeat([]byte("x"), 1100)))
	c.wmu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(s)
	var le *LimitError
	if !errors.As(err, &le) || le.What != "message size" {
		t.Fatalf("server read %v, want a message size LimitError", err)
	}
	_, err = io.ReadAll(c)
	if !websocket.IsCloseError(err, websocket.CloseMessageTooBig) || !strings.Contains(err.Error(), "message size exceeds 1000 bytes") {
		t.Fatalf("client read %v, want close 1009 naming the limit", err)
	}
}

func (r *Resumable) greetedLink(l *Stream) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return l.greeted && r.sending == l
}

func TestResumableSplitsLargeWritesAtLines(t *testing.T) {
	c, s := newLink(t, Options{MaxMessageBytes: 10}).open()
	if _, err := c.Write([]byte("aaaa\nbbbb\ncccccc\n")); err != nil {
		t.Fatal(err)
	}
	sr := bufio.NewReader(s)
	for _, want := range []string{"aaaa\n", "bbbb\n", "cccccc\n"} {
		if got := readLine(t, sr); got != want {
			t.Errorf("read %q, want %q", got, want)
		}
	}
	s.mu.Lock()
	got := s.recvd
	s.mu.Unlock()
	if got != 2 {
		t.Errorf("%d data messages, want 2", got)
	}
}

// TestResumableOverflow: a peer that reads nothing and so acknowledges
// nothing ends the session once the unacknowledged data stays over its
// bound, with a reason.
func TestResumableOverflow(t *testing.T) {
	opts := Options{MaxUnackedBytes: 64 << 10, WriteTimeout: 500 * time.Millisecond}
	// The server's reader is held back by a full queue: nothing it gets is
	// read, so past two messages' worth its acknowledgements stop.
	c, _ := newLinks(t, opts, Options{MaxMessageBytes: 1024}).open()
	line := bytes.Repeat([]byte("y"), 1023)
	line = append(line, '\n')
	var err error
	for range 10_000 {
		if _, err = c.Write(line); err != nil {
			break
		}
	}
	var le *LimitError
	if !errors.As(err, &le) || le.What != "unacknowledged data" {
		t.Fatalf("write = %v, want an unacknowledged data LimitError", err)
	}
}

func TestStreamIdleLinkIsLost(t *testing.T) {
	// The server neither pings nor answers pings: the client's reads
	// time out.
	k := newLinks(t, Options{IdleTimeout: 500 * time.Millisecond, ResumeWindow: -1}, Options{IdleTimeout: time.Hour, ResumeWindow: -1})
	c, s := k.open()
	s.mu.Lock()
	l := s.link
	s.mu.Unlock()
	l.ws.SetPingHandler(func(string) error { return nil })
	_, err := io.ReadAll(c)
	if !errors.Is(err, ErrNotResumed) || !strings.Contains(err.Error(), "not even a pong, for 500ms") {
		t.Fatalf("read = %v, want the link lost for idleness", err)
	}
}

func TestStreamPingsKeepAnIdleLinkAlive(t *testing.T) {
	c, _ := newLink(t, Options{IdleTimeout: time.Second, ResumeWindow: -1}).open()
	read := make(chan error, 1)
	go func() { _, err := c.Read(make([]byte, 1)); read <- err }()
	select {
	case err := <-read:
		t.Fatalf("an answered link ended: %v", err)
	case <-time.After(3 * time.Second):
	}
}
