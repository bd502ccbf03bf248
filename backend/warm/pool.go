package warm

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/adk-codemode/codemode/internal/both/clip"
	"github.com/adk-codemode/codemode/internal/both/observe"
	"github.com/adk-codemode/codemode/transport"
)

// Pool is a [transport.Backend] that keeps sessions of another backend
// started ahead of need, so that Open hands over a ready sandbox instead
// of starting one. A pooled session has never run code: each is used by
// one Open only, and its sandbox is as fresh as a cold one. Sessions are
// pooled per set of [transport.SessionConfig.Files] (the generated tools
// package), which is the same for every turn of an agent; an Open with
// other files starts a session the usual way, and the pool then fills with
// sessions for those files. The tool handler is attached when the session
// is handed over.
//
// A pooled sandbox holds its memory while it waits. Close the pool to end
// the sessions it holds; they also end with the process.
type Pool struct {
	// Backend starts the sessions.
	Backend transport.Backend
	// Size is how many sessions are kept ready. Zero means 1.
	Size int
	// StartTimeout bounds the start of a session in the background. Zero
	// means two minutes.
	StartTimeout time.Duration
	// MeterProvider records how many sessions wait (codemode.pool.size)
	// and how many Opens found none (codemode.pool.misses); nil means the
	// global provider. See docs/observability.md.
	MeterProvider metric.MeterProvider

	obsOnce  sync.Once
	obs      *observe.Observer
	mu       sync.Mutex
	key      [32]byte
	ready    []*pooled
	starting int
	closed   bool
	failed   error // the last background start failed: wait for a miss
	wg       sync.WaitGroup
}

var _ transport.Backend = (*Pool)(nil)

type pooled struct {
	s     transport.Session
	tools *lateTools
}

// lateTools is the tool handler of a pooled session: calls go to the
// handler set when the session is handed over.
type lateTools struct {
	h atomic.Pointer[transport.ToolHandler]
}

func (l *lateTools) CallTool(ctx context.Context, call transport.ToolCall) transport.ToolResult {
	if h := l.h.Load(); h != nil && *h != nil {
		return (*h).CallTool(ctx, call)
	}
	return transport.Errorf("ToolNotFound", "no tool named %q: this session has no tools", clip.String(call.Name, 200))
}

// Name is the pooled backend's name.
func (p *Pool) Name() string { return p.Backend.Name() }

// DescribeNetwork is the pooled backend's (see [transport.NetworkOf]).
func (p *Pool) DescribeNetwork() string { return transport.NetworkOf(p.Backend) }

// MetersEgress passes the backend's [transport.EgressMetering] through.
func (p *Pool) MetersEgress() bool { return transport.MetersEgress(p.Backend) }

func (p *Pool) size() int { return max(p.Size, 1) }

// poolKey identifies the sessions that can stand in for one another.
func poolKey(cfg transport.SessionConfig) [32]byte {
	h := sha256.New()
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(cfg.MaxConcurrentCalls))
	h.Write(n[:])
	names := make([]string, 0, len(cfg.Files))
	for name := range cfg.Files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		for _, b := range [][]byte{[]byte(name), cfg.Files[name]} {
			binary.LittleEndian.PutUint64(n[:], uint64(len(b)))
			h.Write(n[:])
			h.Write(b)
		}
	}
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// Open hands over a ready session started with the same files, and starts
// another in the background; without one, it starts a session itself.
func (p *Pool) Open(ctx context.Context, cfg transport.SessionConfig) (transport.Session, error) {
	key := poolKey(cfg)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errors.New("warm: the pool is closed")
	}
	var stale []*pooled
	if key != p.key {
		stale, p.ready = p.ready, nil
		p.key = key
		p.failed = nil
		// Starts still running are for the old files: they are dropped
		// when they end, and count no longer against the new files'
		// refill.
		p.starting = 0
	}
	var got *pooled
	for len(p.ready) > 0 && got == nil {
		got, p.ready = p.ready[0], p.ready[1:]
		if failed(got.s) {
			stale = append(stale, got)
			got = nil
		}
	}
	if got == nil {
		p.failed = nil // a miss: try the background again
	}
	p.refillLocked(cfg)
	ready := p.liveLocked()
	p.mu.Unlock()
	p.observer().PoolSize(p.Name(), ready)
	if got == nil {
		p.observer().PoolMiss(p.Name())
	}
	for _, s := range stale {
		_ = s.s.Close()
	}
	if got != nil {
		got.tools.h.Store(&cfg.Tools)
		return pooledSession{got.s}, nil
	}
	return p.Backend.Open(ctx, cfg)
}

// observer records the pool's metrics.
func (p *Pool) observer() *observe.Observer {
	p.obsOnce.Do(func() { p.obs = observe.New(observe.Config{MeterProvider: p.MeterProvider}) })
	return p.obs
}

// pooledSession is a session handed over from the pool, which says so to
// traces ([transport.StartReporter]).
type pooledSession struct{ transport.Session }

// StartPath is "pooled": the session was started ahead, before it was
// asked for.
func (pooledSession) StartPath() (path, reason string) { return "pooled", "" }

// Unwrap is the session the pool started ([transport.EgressMeterOf]).
func (s pooledSession) Unwrap() transport.Session { return s.Session }

// Err passes the pooled session's liveness through.
func (s pooledSession) Err() error {
	if e, ok := s.Session.(interface{ Err() error }); ok {
		return e.Err()
	}
	return nil
}

// failed reports whether a session's connection has already ended.
func failed(s transport.Session) bool {
	e, ok := s.(interface{ Err() error })
	return ok && e.Err() != nil
}

// refillLocked starts sessions in the background until ready and starting
// ones make Size. Callers hold mu.
func (p *Pool) refillLocked(cfg transport.SessionConfig) {
	if p.closed || p.failed != nil {
		return
	}
	key := p.key
	for len(p.ready)+p.starting < p.size() {
		p.starting++
		tools := &lateTools{}
		bg := transport.SessionConfig{Files: cfg.Files, Tools: tools, MaxConcurrentCalls: cfg.MaxConcurrentCalls}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			timeout := p.StartTimeout
			if timeout <= 0 {
				timeout = 2 * time.Minute
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			s, err := p.Backend.Open(ctx, bg)
			cancel()
			p.mu.Lock()
			if p.key == key {
				p.starting--
			}
			keep := err == nil && !p.closed && p.key == key
			if keep {
				p.ready = append(p.ready, &pooled{s: s, tools: tools})
			} else if err != nil && p.key == key {
				p.failed = err
			}
			ready := p.liveLocked()
			p.mu.Unlock()
			p.observer().PoolSize(p.Name(), ready)
			if err == nil && !keep {
				_ = s.Close()
			}
		}()
	}
}

// Ready reports how many sessions wait in the pool, leaving out those
// whose backend says they died while they waited (Open skips those too).
func (p *Pool) Ready() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.liveLocked()
}

// liveLocked counts the waiting sessions not known to be dead, which Ready
// and the codemode.pool.size metric report. Callers hold mu.
func (p *Pool) liveLocked() int {
	n := 0
	for _, r := range p.ready {
		if !failed(r.s) {
			n++
		}
	}
	return n
}

// Close ends the sessions that wait in the pool, and waits for those still
// starting to start and end. Sessions handed out are not affected. Open
// fails after Close.
func (p *Pool) Close() error {
	p.mu.Lock()
	p.closed = true
	ready := p.ready
	p.ready = nil
	p.mu.Unlock()
	var errs []error
	for _, s := range ready {
		errs = append(errs, s.s.Close())
	}
	p.wg.Wait()
	return errors.Join(errs...)
}
