//go:build linux

package wsserve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/adk-codemode/codemode/internal/both/server"
	"github.com/adk-codemode/codemode/internal/protocol/wire"
	"github.com/adk-codemode/codemode/internal/protocol/wsproto"
)

// listener answers requests; the first accepted WebSocket runs the session.
type listener struct {
	cfg     Config
	verify  *wsproto.Verifier
	ctx     context.Context // the session's
	claimed atomic.Bool
	ended   chan error // the session's end, once
	sess    atomic.Pointer[wsproto.Resumable]
}

// Serve serves one session on ln and returns when it has ended, or when
// ctx is done and the session has then ended. It returns nil when the
// session ended normally (the host's shutdown or a closed connection) and
// the error otherwise. ln is closed on return.
func Serve(ctx context.Context, ln net.Listener, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		ln.Close()
		return err
	}
	cfg.setDefaults()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &listener{cfg: cfg, ctx: ctx, ended: make(chan error, 1)}
	if len(cfg.Secret) > 0 {
		s.verify = &wsproto.Verifier{Secret: cfg.Secret, MaxLifetime: cfg.MaxTokenLifetime, Skew: cfg.ClockSkew}
	}
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: cfg.HandshakeTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelDebug),
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	var err error
	select {
	case err = <-s.ended:
	case <-ctx.Done():
		if s.claimed.Load() {
			// The session sees ctx too; wait for its end.
			err = <-s.ended
		}
	case err = <-served:
		err = fmt.Errorf("wsserve: %w", err)
	}
	_ = hs.Close()
	return err
}

func (s *listener) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	switch {
	case r.URL.Path == "/health":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "use GET /health", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
		return
	case r.URL.Path != "/":
		http.Error(w, "not found: the sandbox serves its session at / and its health at /health", http.StatusNotFound)
		return
	}
	session := ""
	if s.verify != nil {
		id, err := s.verify.Verify(r.Header.Get("Authorization"))
		if err != nil {
			s.cfg.Logger.Warn("refused a connection", "from", r.RemoteAddr, "reason", err)
			http.Error(w, "unauthorized: "+err.Error(), http.StatusUnauthorized)
			return
		}
		session = id
	}
	if !slices.Contains(websocket.Subprotocols(r), wsproto.Subprotocol) {
		http.Error(w, "bad request: open a WebSocket with the subprotocol "+wsproto.Subprotocol+" (the codemode remote backend does)", http.StatusBadRequest)
		return
	}
	if cred := r.Header.Get(wsproto.ResumeHeader); cred != "" {
		s.resume(w, r, cred, start)
		return
	}
	if !s.claimed.CompareAndSwap(false, true) {
		http.Error(w, "busy: this sandbox serves one session per process and has already served or is serving one; start a fresh sandbox", http.StatusConflict)
		return
	}
	up := websocket.Upgrader{
		HandshakeTimeout: time.Until(start.Add(s.cfg.HandshakeTimeout)),
		Subprotocols:     []string{wsproto.Subprotocol},
	}
	var h http.Header
	if len(s.cfg.Egress) > 0 {
		v, _ := wsproto.FormatEgress(s.cfg.Egress) // checked by Validate
		h = http.Header{wsproto.EgressHeader: {v}}
	}
	ws, err := up.Upgrade(w, r, h)
	if err != nil {
		s.ended <- fmt.Errorf("wsserve: the WebSocket handshake failed: %w", err)
		return
	}
	s.cfg.Logger.Info("session started", "from", r.RemoteAddr, "session", session)
	err = s.run(ws, start.Add(s.cfg.HandshakeTimeout))
	s.cfg.Logger.Info("session ended", "session", session, "err", err)
	s.ended <- err
}

// resume attaches a client's new connection to the session, if its
// credential is good.
func (s *listener) resume(w http.ResponseWriter, r *http.Request, cred string, start time.Time) {
	sess := s.sess.Load()
	if sess == nil {
		http.Error(w, "conflict: there is no session to resume on this sandbox; start a fresh sandbox", http.StatusConflict)
		return
	}
	res, err := sess.CheckResume(cred)
	if err != nil {
		status := http.StatusUnauthorized
		if errors.Is(err, wsproto.ErrSessionEnded) || errors.Is(err, wsproto.ErrOtherSession) {
			status = http.StatusConflict
		}
		s.cfg.Logger.Warn("refused a resume", "from", r.RemoteAddr, "reason", err)
		http.Error(w, "resume refused: "+err.Error(), status)
		return
	}
	up := websocket.Upgrader{
		HandshakeTimeout: time.Until(start.Add(s.cfg.HandshakeTimeout)),
		Subprotocols:     []string{wsproto.Subprotocol},
	}
	ws, err := up.Upgrade(w, r, nil)
	if err != nil {
		s.cfg.Logger.Warn("a resume's WebSocket handshake failed", "from", r.RemoteAddr, "err", err)
		return
	}
	if err := sess.Attach(ws, res); err != nil {
		s.cfg.Logger.Warn("a resume came too late", "from", r.RemoteAddr, "err", err)
		return
	}
	s.cfg.Logger.Info("session resumed", "from", r.RemoteAddr, "resume id", sess.Session())
}

// run serves the session on ws: the files message by deadline, then the
// frame protocol, over as many connections as the client resumes it on.
func (s *listener) run(ws *websocket.Conn, deadline time.Time) error {
	stream := wsproto.NewStream(ws, s.cfg.Stream)
	files, err := stream.ReadFiles(s.cfg.Files, deadline)
	if err != nil {
		_ = stream.Close() // after a refusal with a reason, a no-op
		waitDone(stream.Done())
		return fmt.Errorf("wsserve: the session's files: %w", err)
	}
	if s.cfg.ServeSession == nil {
		if err := WriteFiles(s.cfg.Session.FilesDir, files); err != nil {
			stream.CloseWith(websocket.CloseInternalServerErr, "the sandbox could not write the session's files")
			waitDone(stream.Done())
			return err
		}
	}
	sess := wsproto.NewServer(stream, s.cfg.Stream)
	s.sess.Store(sess)
	defer waitDone(sess.Done())
	if s.cfg.ServeSession != nil {
		err = s.cfg.ServeSession(s.ctx, sess, files)
	} else {
		conn := wire.NewConn(sess, sess, sess, s.cfg.Stream.MaxFrame())
		err = server.Serve(s.ctx, conn, s.cfg.Session)
		conn.Close()
	}
	var le *wsproto.LimitError
	if err == nil || errors.As(err, &le) {
		return err
	}
	if errors.Is(err, wsproto.ErrNotResumed) || websocket.IsUnexpectedCloseError(err) || errors.Is(err, net.ErrClosed) {
		s.cfg.Logger.Info("the host went away", "err", err)
		return nil // the host went away: the session is over
	}
	return err
}

// waitDone lets a close reason reach the client, for a while.
func waitDone(done <-chan struct{}) {
	select {
	case <-done:
	case <-time.After(3 * time.Second):
	}
}
