package remote

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/gorilla/websocket"
	"go.opentelemetry.io/otel/attribute"

	"github.com/adk-codemode/codemode/egress"
	"github.com/adk-codemode/codemode/internal/both/observe"
	"github.com/adk-codemode/codemode/internal/protocol/wire"
	"github.com/adk-codemode/codemode/internal/protocol/wsproto"
	"github.com/adk-codemode/codemode/transport"
)

// Config configures a [Backend].
type Config struct {
	// URL is the sandbox server's address: ws://, wss://, http:// or
	// https:// (rewritten to ws and wss), or host:port (wss). Required
	// unless Provision is set.
	URL string
	// Provision, if set, is called for each start attempt and returns the
	// URL of a fresh sandbox for it and a function that releases that
	// sandbox, which is called once when the session ends or the attempt
	// fails. Platforms that hand out a sandbox per claim plug in here.
	Provision func(ctx context.Context) (url string, release func(), err error)
	// Secret is the sandbox server's secret (its CODEMODE_SANDBOX_TOKEN):
	// each connection sends a token signed with it, never the secret.
	Secret []byte
	// Token, if set instead of Secret, returns the bearer token for one
	// connection: a token signed elsewhere, or for an upstream-compatible
	// server the secret itself.
	Token func(ctx context.Context) (string, error)
	// TokenLifetime is how long a signed token is valid. Zero means 5
	// minutes, also the most a server allows by default.
	TokenLifetime time.Duration
	// Header is sent with every connection request.
	Header http.Header
	// DialContext, if set, makes the network connections.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// Proxy, if set, chooses the proxy for a request; nil means the
	// environment's (http.ProxyFromEnvironment).
	Proxy func(*http.Request) (*url.URL, error)
	// TLS configures wss connections; nil means the system's roots.
	TLS *tls.Config
	// ConnectTimeout bounds one attempt's connection and WebSocket
	// handshake. Zero means 10s.
	ConnectTimeout time.Duration
	// ReadyTimeout bounds the wait for the sandbox's ready frame after the
	// handshake. Zero means 60s.
	ReadyTimeout time.Duration
	// StartAttempts is how many times a start is tried. Zero means 3.
	StartAttempts int
	// RetryDelay and RetryJitter space the attempts: before attempt k+1
	// the backend waits k*RetryDelay plus up to RetryJitter. Zero means 1s
	// and 0.25s.
	RetryDelay, RetryJitter time.Duration
	// ResumeWindow is how long a session waits, after its connection is
	// lost, for a new connection to the same sandbox to resume it; the
	// backend dials again at once, then after the backoff of RetryDelay
	// and RetryJitter. The sandbox keeps the session for its own window
	// (codemode-sandbox --resume-window). Zero means 30s; negative means a
	// lost connection ends the session.
	ResumeWindow time.Duration
	// MaxMessageBytes bounds one message received from the sandbox. Zero
	// means 64 MiB and a byte, the server's default: one frame of the
	// largest size.
	MaxMessageBytes int64
	// IdleTimeout gives up a connection that receives nothing, not even a
	// pong, for this long (the session may then be resumed). Zero means
	// 60s, the server's default.
	IdleTimeout time.Duration
	// MaxFilesBytes and MaxFiles bound the files sent at session start,
	// the tools package among them. Zero means 100 MiB and 10,000 files,
	// the server's defaults.
	MaxFilesBytes int64
	MaxFiles      int
	// Name, if set, names the sandbox image in [Backend.Name] instead of
	// the URL, so that sandboxes from one image share a cached
	// environment.
	Name string
	// Logger receives the sandbox's log frames and the retries. Nil means
	// slog.Default().
	Logger *slog.Logger
	// Egress declares the egress allowlist the sandbox server enforces
	// (codemode-sandbox --listen --jail --egress), entries as in
	// egress.Policy.Allow. The server reports its list when a session
	// starts, and a session whose server reports another list, or none,
	// is refused; [Backend.DescribeNetwork] then names these hosts to the
	// model. Empty expects a server that reports no list, and says
	// nothing of the network, which the sandbox's platform sets.
	Egress []string
}

// Backend opens sessions with remote sandbox servers.
type Backend struct {
	cfg    Config
	egress []string           // cfg.Egress, normalised (wsproto.NormalizeEgress)
	stream wsproto.Options    // the connection's bounds, from cfg
	files  wsproto.FileLimits // the files message's, from cfg
	dialer websocket.Dialer
}

var _ transport.Backend = (*Backend)(nil)

// New checks cfg and returns a backend.
func New(cfg Config) (*Backend, error) {
	if cfg.URL == "" && cfg.Provision == nil {
		return nil, errors.New("remote: Config.URL or Config.Provision is required")
	}
	if cfg.URL != "" {
		u, err := wsURL(cfg.URL)
		if err != nil {
			return nil, err
		}
		cfg.URL = u
	}
	if len(cfg.Secret) > 0 && cfg.Token != nil {
		return nil, errors.New("remote: set Config.Secret or Config.Token, not both")
	}
	if cfg.TokenLifetime <= 0 {
		cfg.TokenLifetime = 5 * time.Minute
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = 10 * time.Second
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = 60 * time.Second
	}
	if cfg.StartAttempts <= 0 {
		cfg.StartAttempts = 3
	}
	if cfg.RetryDelay <= 0 {
		cfg.RetryDelay = time.Second
	}
	if cfg.RetryJitter <= 0 {
		cfg.RetryJitter = 250 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	declared, err := wsproto.NormalizeEgress(cfg.Egress)
	if err == nil && len(cfg.Egress) > 0 {
		_, err = egress.New(egress.Policy{Allow: cfg.Egress})
	}
	if err != nil {
		return nil, fmt.Errorf("remote: Config.Egress: %w", err)
	}
	proxy := cfg.Proxy
	if proxy == nil {
		proxy = http.ProxyFromEnvironment
	}
	b := &Backend{cfg: cfg, egress: declared, stream: wsproto.Options{
		MaxMessageBytes: cfg.MaxMessageBytes,
		IdleTimeout:     cfg.IdleTimeout,
		ResumeWindow:    cfg.ResumeWindow,
		Logger:          cfg.Logger,
	}, files: wsproto.FileLimits{MaxBytes: cfg.MaxFilesBytes, MaxFiles: cfg.MaxFiles}, dialer: websocket.Dialer{
		NetDialContext:   cfg.DialContext,
		Proxy:            proxy,
		TLSClientConfig:  cfg.TLS,
		HandshakeTimeout: cfg.ConnectTimeout,
		Subprotocols:     []string{wsproto.Subprotocol},
		ReadBufferSize:   64 << 10,
		WriteBufferSize:  64 << 10,
	}}
	return b, nil
}

// wsURL rewrites a sandbox address to a WebSocket URL.
func wsURL(raw string) (string, error) {
	if !strings.Contains(raw, "://") {
		raw = "wss://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("remote: sandbox URL %q: %w", raw, err)
	}
	switch u.Scheme {
	case "http":
		u.Scheme = "ws"
	case "https":
		u.Scheme = "wss"
	case "ws", "wss":
	default:
		return "", fmt.Errorf("remote: sandbox URL %q: the scheme must be ws, wss, http or https", raw)
	}
	if u.Host == "" {
		return "", fmt.Errorf("remote: sandbox URL %q has no host", raw)
	}
	if u.Path == "" {
		u.Path = "/"
	}
	return u.String(), nil
}

// DescribeNetwork names the hosts of Config.Egress, which the server was
// checked to enforce when the session started
// ([transport.NetworkDescriber]); without Config.Egress it is "", as the
// sandbox's network is its platform's.
func (b *Backend) DescribeNetwork() string {
	if len(b.cfg.Egress) == 0 {
		return ""
	}
	return egress.Policy{Allow: b.cfg.Egress}.Describe()
}

// Name is "remote:" and Config.Name, or the URL without user or query.
func (b *Backend) Name() string {
	if b.cfg.Name != "" {
		return "remote:" + b.cfg.Name
	}
	if b.cfg.URL == "" {
		return "remote:provisioned"
	}
	u, _ := url.Parse(b.cfg.URL)
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return "remote:" + u.String()
}

// Open starts a session, trying again after a transient failure.
func (b *Backend) Open(ctx context.Context, cfg transport.SessionConfig) (transport.Session, error) {
	var err error
	for attempt := 1; attempt <= b.cfg.StartAttempts; attempt++ {
		if attempt > 1 {
			wait := b.backoff(attempt - 1)
			b.cfg.Logger.Warn("remote: retrying the sandbox start", "attempt", attempt, "after", wait, "err", err)
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, fmt.Errorf("remote: %w (after: %w)", ctx.Err(), err)
			case <-t.C:
			}
		}
		if attempt > 1 {
			observe.Event(ctx, "codemode.sandbox.retry", attribute.Int("codemode.attempt", attempt))
		}
		var s transport.Session
		s, err = b.start(ctx, cfg)
		if err == nil {
			return s, nil
		}
		if ctx.Err() != nil || !Transient(err) {
			break
		}
	}
	return nil, err
}

// backoff is the wait before attempt k+1.
func (b *Backend) backoff(k int) time.Duration {
	return time.Duration(k)*b.cfg.RetryDelay + rand.N(b.cfg.RetryJitter)
}

func isStatus(err error, code int) bool {
	var he *HandshakeError
	return errors.As(err, &he) && he.StatusCode == code
}

// start makes one attempt.
func (b *Backend) start(ctx context.Context, cfg transport.SessionConfig) (transport.Session, error) {
	target, release := b.cfg.URL, func() {}
	if b.cfg.Provision != nil {
		u, rel, err := b.cfg.Provision(ctx)
		if err != nil {
			return nil, fmt.Errorf("remote: provision a sandbox: %w", err)
		}
		if rel != nil {
			release = rel
		}
		if target, err = wsURL(u); err != nil {
			release()
			return nil, err
		}
		observe.Event(ctx, "codemode.sandbox.provisioned")
	}
	ws, header, err := b.dial(ctx, target, "")
	if err != nil {
		release()
		return nil, err
	}
	if err := b.checkEgress(target, header); err != nil {
		_ = ws.Close()
		release()
		return nil, err
	}
	observe.Event(ctx, "codemode.sandbox.connected")
	stream := wsproto.NewStream(ws, b.stream)
	if err := stream.SendFiles(cfg.Files, b.files); err != nil {
		_ = stream.Close()
		release()
		return nil, fmt.Errorf("remote: send the session's files to %s: %w", redact(target), err)
	}
	observe.Event(ctx, "codemode.sandbox.files_sent")
	attempts := 0
	res := wsproto.NewClient(stream, b.stream, wsproto.Redial{
		Dial: func(ctx context.Context, credential string) (*websocket.Conn, error) {
			attempts++
			started := time.Now()
			ws, _, err := b.dial(ctx, target, credential)
			observe.Resumed(ctx, b.Name(), attempts, started, err)
			if err != nil {
				b.cfg.Logger.Warn("remote: resuming the session failed", "sandbox", redact(target), "err", err)
			} else {
				b.cfg.Logger.Info("remote: resumed the session", "sandbox", redact(target))
			}
			return ws, err
		},
		Delay:     b.backoff,
		Permanent: func(err error) bool { return !Transient(err) || isStatus(err, http.StatusConflict) },
	})
	conn := wire.NewConn(res, res, res, b.stream.MaxFrame())
	s, err := wire.NewClient(ctx, conn, cfg, wire.ClientOptions{
		ReadyTimeout: b.cfg.ReadyTimeout,
		Logger:       b.cfg.Logger,
		OnClose:      func() error { release(); return nil },
	})
	if err != nil {
		return nil, fmt.Errorf("remote: the sandbox at %s did not start: %w", redact(target), err)
	}
	return s, nil
}

// EgressMismatchError is the refusal of a session whose server enforces
// another egress allowlist than Config.Egress declares.
type EgressMismatchError struct {
	URL      string
	Declared []string // Config.Egress, normalised
	Enforced []string // what the server reported
}

func (e *EgressMismatchError) Error() string {
	list := func(l []string) string {
		if len(l) == 0 {
			return "none"
		}
		return strings.Join(l, ", ")
	}
	return fmt.Sprintf("remote: the sandbox at %s enforces the egress allowlist [%s], but this host declares [%s] "+
		"(remote.Config.Egress, codemode --egress): make them the same, so that the model is told what the code can reach "+
		"(a server without --egress, or older than egress, reports none)", e.URL, list(e.Enforced), list(e.Declared))
}

// checkEgress compares the egress allowlist a server reported in its
// handshake response with the declared one.
func (b *Backend) checkEgress(target string, h http.Header) error {
	enforced, err := wsproto.ParseEgress(h.Get(wsproto.EgressHeader))
	if err != nil {
		return fmt.Errorf("remote: the sandbox at %s reported an egress allowlist this host cannot read: %w", redact(target), err)
	}
	if !slices.Equal(enforced, b.egress) {
		return &EgressMismatchError{URL: redact(target), Declared: b.egress, Enforced: enforced}
	}
	return nil
}

// dial opens the WebSocket, with this connection's token and, to resume
// a session, its resume credential. It returns the headers of the
// server's handshake response too.
func (b *Backend) dial(ctx context.Context, target, resume string) (*websocket.Conn, http.Header, error) {
	h := http.Header{}
	for k, v := range b.cfg.Header {
		h[k] = v
	}
	if resume != "" {
		h.Set(wsproto.ResumeHeader, resume)
	}
	switch {
	case len(b.cfg.Secret) > 0:
		tok := wsproto.Sign(b.cfg.Secret, wsproto.Token{Session: wsproto.NewSessionID(), Expires: time.Now().Add(b.cfg.TokenLifetime)})
		h.Set("Authorization", "Bearer "+tok)
	case b.cfg.Token != nil:
		tok, err := b.cfg.Token(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("remote: the token source: %w", err)
		}
		h.Set("Authorization", "Bearer "+tok)
	}
	ctx, cancel := context.WithTimeout(ctx, b.cfg.ConnectTimeout)
	defer cancel()
	ws, resp, err := b.dialer.DialContext(ctx, target, h)
	if err != nil {
		if resp != nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
			resp.Body.Close()
			return nil, nil, &HandshakeError{URL: redact(target), StatusCode: resp.StatusCode, Body: strings.TrimSpace(string(body))}
		}
		if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
			return nil, nil, fmt.Errorf("remote: connect to %s: no WebSocket handshake within %s: %w", redact(target), b.cfg.ConnectTimeout, err)
		}
		return nil, nil, fmt.Errorf("remote: connect to %s: %w", redact(target), err)
	}
	if ws.Subprotocol() != wsproto.Subprotocol {
		_ = ws.Close()
		return nil, nil, fmt.Errorf("remote: %s is not a codemode sandbox server: it did not accept the %s subprotocol", redact(target), wsproto.Subprotocol)
	}
	return ws, resp.Header, nil
}

func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "the sandbox"
	}
	u.User, u.RawQuery = nil, ""
	return u.String()
}

// HandshakeError is a sandbox server's refusal of the WebSocket handshake.
type HandshakeError struct {
	URL        string
	StatusCode int
	Body       string // the server's explanation, at most 1 KiB
}

func (e *HandshakeError) Error() string {
	msg := fmt.Sprintf("remote: the sandbox at %s refused the connection: %d %s", e.URL, e.StatusCode, http.StatusText(e.StatusCode))
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// Transient reports whether a failed start may succeed if tried again: a
// network error or timeout, a connection closed or reset before the
// session was ready, or a server that answered 408, 409 (busy: another
// instance may be free), 425, 429 or 5xx. A refused token, a bad URL, a
// protocol version mismatch or a sandbox that failed to start is not.
func Transient(err error) bool {
	var he *HandshakeError
	if errors.As(err, &he) {
		switch he.StatusCode {
		case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooEarly, http.StatusTooManyRequests:
			return true
		}
		return he.StatusCode >= 500
	}
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		switch ce.Code {
		case websocket.CloseGoingAway, websocket.CloseAbnormalClosure, websocket.CloseInternalServerErr,
			websocket.CloseServiceRestart, websocket.CloseTryAgainLater, 1014: // bad gateway
			return true
		}
		return false
	}
	var ve *transport.VersionError
	if errors.As(err, &ve) || errors.Is(err, context.Canceled) {
		return false
	}
	if isTimeout(err) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var oe *net.OpError
	return errors.As(err, &oe) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
