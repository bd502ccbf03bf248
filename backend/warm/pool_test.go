package warm

import (
	"context"
	"errors"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"sync"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/transport"
)

// poolBackend counts the sessions it opens and can be told to fail.
type poolBackend struct {
	mu     sync.Mutex
	opened []*poolSession
	fail   error
	delay  time.Duration
}

type poolSession struct {
	cfg    transport.SessionConfig
	closed bool
	dead   error
}

func (s *poolSession) Environment() transport.Environment { return transport.Environment{} }
func (s *poolSession) Exec(ctx context.Context, b transport.Block) (*transport.Result, error) {
	return nil, errors.New("not used")
}
func (s *poolSession) ReadFile(ctx context.Context, path string) ([]byte, error) {
	return nil, errors.New("not used")
}
func (s *poolSession) Close() error { s.closed = true; return nil }
func (s *poolSession) Err() error   { return s.dead }

func (b *poolBackend) Name() string { return "fake" }

func (b *poolBackend) Open(ctx context.Context, cfg transport.SessionConfig) (transport.Session, error) {
	time.Sleep(b.delay)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fail != nil {
		return nil, b.fail
	}
	s := &poolSession{cfg: cfg}
	b.opened = append(b.opened, s)
	return s, nil
}

// pooled is the session that the pool started for itself: of the first
// two opened, the one that the first Open (a miss, started directly while
// the refill runs in the background, in either order) did not return.
func (b *poolBackend) pooled(t *testing.T, direct transport.Session) *poolSession {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.opened) < 2 {
		t.Fatalf("%d sessions opened, want 2", len(b.opened))
	}
	if transport.Session(b.opened[0]) == direct {
		return b.opened[1]
	}
	return b.opened[0]
}

func (b *poolBackend) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.opened)
}

func waitReady(t *testing.T, p *Pool, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for p.Ready() != n {
		if time.Now().After(deadline) {
			t.Fatalf("pool has %d ready sessions, want %d", p.Ready(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func handler(v string) transport.ToolHandler {
	return transport.ToolHandlerFunc(func(ctx context.Context, c transport.ToolCall) transport.ToolResult {
		return transport.ToolResult{Value: v}
	})
}

func TestPoolHandsOverStartedSessions(t *testing.T) {
	b := &poolBackend{}
	reader := sdkmetric.NewManualReader()
	p := &Pool{Backend: b, Size: 2, MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))}
	defer p.Close()
	files := map[string][]byte{"tools/__init__.py": []byte("")}

	// A miss: the caller's session is started for it, and the pool fills.
	s1, err := p.Open(t.Context(), transport.SessionConfig{Files: files, Tools: handler("first")})
	if err != nil {
		t.Fatal(err)
	}
	if got := s1.(*poolSession).cfg.Tools.CallTool(t.Context(), transport.ToolCall{}).Value; got != "first" {
		t.Errorf("cold session's tool answered %v", got)
	}
	waitReady(t, p, 2)
	if b.count() != 3 {
		t.Fatalf("opened %d sessions, want 3", b.count())
	}

	// A hit: a started session, with this Open's tools, and a refill.
	s2, err := p.Open(t.Context(), transport.SessionConfig{Files: files, Tools: handler("second")})
	if err != nil {
		t.Fatal(err)
	}
	if path, _ := s2.(transport.StartReporter).StartPath(); path != "pooled" {
		t.Errorf("a pooled session's start path %q, want pooled", path)
	}
	if _, ok := s1.(transport.StartReporter); ok {
		t.Error("the session started on a miss says it was pooled")
	}
	ps := s2.(pooledSession).Session.(*poolSession)
	if ps == s1 || ps.closed {
		t.Fatalf("got the cold session or a closed one")
	}
	if got := ps.cfg.Tools.CallTool(t.Context(), transport.ToolCall{}).Value; got != "second" {
		t.Errorf("pooled session's tool answered %v, want the handler given to Open", got)
	}
	waitReady(t, p, 2)
	if b.count() != 4 {
		t.Errorf("opened %d sessions, want 4 (one refill)", b.count())
	}
	// A session is handed out once.
	s3, _ := p.Open(t.Context(), transport.SessionConfig{Files: files})
	if s3 == s2 || s3 == s1 {
		t.Error("a session was handed out twice")
	}
	// One miss (the first Open), and the sessions waiting, as metrics.
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				got[m.Name] = d.DataPoints[0].Value
			case metricdata.Gauge[int64]:
				got[m.Name] = d.DataPoints[0].Value
			}
		}
	}
	if got["codemode.pool.misses"] != 1 || got["codemode.pool.size"] < 1 {
		t.Errorf("pool metrics %v, want one miss and a size", got)
	}
	if r := s3.(pooledSession).Session.(*poolSession).cfg.Tools.CallTool(t.Context(), transport.ToolCall{Name: "x"}); r.Err == nil || r.Err.Type != "ToolNotFound" {
		t.Errorf("nil tools: %+v, want ToolNotFound", r)
	}
}

func TestPoolOtherFilesStartAfresh(t *testing.T) {
	b := &poolBackend{}
	p := &Pool{Backend: b, Size: 1}
	defer p.Close()
	a := map[string][]byte{"tools/a.py": []byte("a")}
	first, err := p.Open(t.Context(), transport.SessionConfig{Files: a})
	if err != nil {
		t.Fatal(err)
	}
	waitReady(t, p, 1)
	old := b.pooled(t, first)

	other := map[string][]byte{"tools/a.py": []byte("b")}
	s, err := p.Open(t.Context(), transport.SessionConfig{Files: other})
	if err != nil {
		t.Fatal(err)
	}
	if s == old || string(s.(*poolSession).cfg.Files["tools/a.py"]) != "b" {
		t.Fatal("a session started with other files was handed out")
	}
	if !old.closed {
		t.Error("the pooled session for the old files was not closed")
	}
	waitReady(t, p, 1)
	s, _ = p.Open(t.Context(), transport.SessionConfig{Files: other})
	if string(s.(pooledSession).Session.(*poolSession).cfg.Files["tools/a.py"]) != "b" {
		t.Error("the pool did not refill with the new files")
	}
}

func TestPoolSkipsDeadSessions(t *testing.T) {
	b := &poolBackend{}
	p := &Pool{Backend: b, Size: 1}
	defer p.Close()
	first, err := p.Open(t.Context(), transport.SessionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	waitReady(t, p, 1)
	dead := b.pooled(t, first)
	dead.dead = errors.New("the sandbox closed the connection")
	if n := p.Ready(); n != 0 {
		t.Errorf("Ready() = %d with the one waiting session dead, want 0", n)
	}
	s, err := p.Open(t.Context(), transport.SessionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if s == dead || !dead.closed {
		t.Errorf("dead pooled session handed out (%v) or not closed (%v)", s == dead, dead.closed)
	}
}

func TestPoolBackgroundFailure(t *testing.T) {
	b := &poolBackend{fail: errors.New("no sandbox today")}
	p := &Pool{Backend: b, Size: 1}
	defer p.Close()
	if _, err := p.Open(t.Context(), transport.SessionConfig{}); err == nil || err.Error() != "no sandbox today" {
		t.Fatalf("err = %v, want the backend's", err)
	}
	p.wg.Wait()
	b.mu.Lock()
	b.fail = nil
	b.mu.Unlock()
	// The next Open starts its own session and the pool tries again.
	if _, err := p.Open(t.Context(), transport.SessionConfig{}); err != nil {
		t.Fatal(err)
	}
	waitReady(t, p, 1)
}

func TestPoolClose(t *testing.T) {
	b := &poolBackend{delay: 50 * time.Millisecond}
	p := &Pool{Backend: b, Size: 2}
	mine, err := p.Open(t.Context(), transport.SessionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	// Close while the refills are still starting: it waits for them and
	// they end.
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, s := range b.opened {
		if s != mine && !s.closed {
			t.Errorf("pooled session %d still open after Close", i)
		}
	}
	if len(b.opened) != 3 {
		t.Errorf("opened %d sessions, want 3", len(b.opened))
	}
	if _, err := p.Open(context.Background(), transport.SessionConfig{}); err == nil {
		t.Error("Open after Close succeeded")
	}
}

// TestPoolFillsAfterFilesChangeMidStart: an Open with other files while a
// start for the old files still runs fills the pool for the new files;
// the old start is dropped when it ends. (Before, the old start counted
// against the new files' refill, and the pool stayed empty.)
func TestPoolFillsAfterFilesChangeMidStart(t *testing.T) {
	b := &poolBackend{delay: 50 * time.Millisecond}
	p := &Pool{Backend: b, Size: 1}
	defer p.Close()
	if _, err := p.Open(t.Context(), transport.SessionConfig{Files: map[string][]byte{"tools/a.py": []byte("a")}}); err != nil {
		t.Fatal(err)
	}
	// The refill for "a" is still starting (50 ms) when the files change.
	other := map[string][]byte{"tools/a.py": []byte("b")}
	if _, err := p.Open(t.Context(), transport.SessionConfig{Files: other}); err != nil {
		t.Fatal(err)
	}
	waitReady(t, p, 1)
	s, err := p.Open(t.Context(), transport.SessionConfig{Files: other})
	if err != nil {
		t.Fatal(err)
	}
	if path, _ := s.(transport.StartReporter).StartPath(); path != "pooled" || string(s.(pooledSession).Session.(*poolSession).cfg.Files["tools/a.py"]) != "b" {
		t.Errorf("the third Open got a session started for it or for the old files")
	}
}
