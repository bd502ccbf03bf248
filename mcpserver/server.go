package mcpserver

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"google.golang.org/adk/v2/artifact"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/session"

	"github.com/adk-codemode/codemode/internal/host/hooklink"
	"github.com/adk-codemode/codemode/plugin/codemode"
)

// Defaults of [Config].
const (
	DefaultMaxSessions = 16
	DefaultIdleTimeout = 10 * time.Minute
	// DefaultProgressInterval is Config.ProgressInterval when it is zero.
	DefaultProgressInterval = 5 * time.Second
	// DefaultName is the server's name in the MCP handshake.
	DefaultName = "codemode"
)

// appName is the ADK app the sessions' invocations run in.
const appName = "codemode-mcp"

// userID is the ADK user of every session: the sessions are told apart by
// their ids, and each client session has an artifact service of its own.
const userID = "mcp"

// stopWait is how long a session's invocation may take to end on its own
// before it is cancelled.
const stopWait = 5 * time.Second

// Config configures the server.
type Config struct {
	// CodeMode configures the Code Mode plugin behind the server: the
	// tools and toolsets the code may call, the backend, the limits. The
	// server sets Budgets.BlocksPerTurn to no bound (a client session is
	// one long turn) and turns the artifact tools and the saving of tool
	// results off (DisableArtifactTools, DisableToolResultArtifacts): the
	// files a block writes come back in its result instead. DisableBlock
	// is set too, since no model reads the system instruction. A Backend given is the caller's to
	// close.
	CodeMode codemode.Config
	// MaxSessions bounds the client sessions that hold a sandbox at a
	// time. A session past it closes the sandbox of the one idle longest,
	// or is refused when every other one is running code. Zero means 16.
	MaxSessions int
	// IdleTimeout closes the sandbox of a client session that has run no
	// code for this long; its next call starts a fresh one. Zero means
	// 10m.
	IdleTimeout time.Duration
	// ProgressInterval is how often an execute call that asked for
	// progress (its request has a progress token) is told how long its
	// code has run. Zero means 5s.
	ProgressInterval time.Duration
	// Name and Version identify the server in the MCP handshake. Empty
	// Name means "codemode".
	Name, Version string
}

// Server is Code Mode as an MCP server. Close it to stop every sandbox
// it started.
type Server struct {
	cfg    Config
	mcp    *mcp.Server
	plugin *plugin.Plugin
	// interrupt stops the block an invocation runs, keeping its
	// variables; grace is how long the plugin gives it to stop.
	interrupt hooklink.Interrupt
	grace     time.Duration
	// timeout bounds one block, or is zero.
	timeout  time.Duration
	sessions session.Service

	mu     sync.Mutex
	byMCP  map[*mcp.ServerSession]*client
	nextID int
	// starting counts sessions admitted whose invocation is not set yet.
	starting int
	closed   bool
	stopGC   chan struct{}
	gcDone   chan struct{}
}

// New returns a server for cfg.
func New(cfg Config) (*Server, error) {
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.Name == "" {
		cfg.Name = DefaultName
	}
	if cfg.ProgressInterval <= 0 {
		cfg.ProgressInterval = DefaultProgressInterval
	}
	cm := cfg.CodeMode
	cm.Budgets.BlocksPerTurn = -1
	cm.DisableArtifactTools = true
	cm.DisableToolResultArtifacts = true
	cm.DisableBlock = true
	if cm.IdleTimeout < cfg.IdleTimeout {
		// The plugin's own reaper must not close a sandbox the server
		// still holds.
		cm.IdleTimeout = cfg.IdleTimeout + time.Minute
	}
	p, interrupt, err := hooklink.NewInterruptible(cm)
	if err != nil {
		return nil, fmt.Errorf("mcpserver: %w", err)
	}
	s := &Server{
		cfg:       cfg,
		plugin:    p,
		interrupt: interrupt,
		grace:     cmp.Or(max(cm.Grace, 0), codemode.DefaultGrace),
		sessions:  session.InMemoryService(),
		byMCP:     map[*mcp.ServerSession]*client{},
		stopGC:    make(chan struct{}),
		gcDone:    make(chan struct{}),
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: cfg.Name, Version: cfg.Version}, nil)
	s.addTools(cm)
	s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{
		Name:        "file",
		URITemplate: fileTemplate,
		Description: "A file the code of an execute call wrote, too large to come back in the call's result; readable by the session that ran the code only.",
	}, s.readFile)
	go s.reap()
	return s, nil
}

// MCP returns the MCP server, to run over a transport: Run with
// &mcp.StdioTransport{}, or mcp.NewStreamableHTTPHandler for HTTP.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Close closes every session's sandbox and the plugin. Calls in flight
// end with an error.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	all := make([]*client, 0, len(s.byMCP))
	for _, ss := range s.byMCP {
		all = append(all, ss)
	}
	clear(s.byMCP)
	s.mu.Unlock()
	close(s.stopGC)
	<-s.gcDone
	var wg sync.WaitGroup
	for _, ss := range all {
		wg.Go(func() { ss.stop(stopWait, true) })
	}
	wg.Wait()
	return s.plugin.Close()
}

// errServerClosed is a call after Close.
var errServerClosed = errors.New("the Code Mode MCP server is shut down")

// acquire returns the session of the client session mss, made on its first
// call, marked busy until release.
func (s *Server) acquire(mss *mcp.ServerSession) (*client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errServerClosed
	}
	ss, ok := s.byMCP[mss]
	if !ok {
		s.nextID++
		ss = &client{srv: s, id: "mcp" + strconv.Itoa(s.nextID), token: rand.Text(), artifacts: artifact.InMemoryService()}
		s.byMCP[mss] = ss
		if mss != nil {
			go s.watch(mss, ss)
		}
	}
	ss.busy++
	ss.used = time.Now()
	return ss, nil
}

// release ends a call that acquire began.
func (s *Server) release(ss *client) {
	s.mu.Lock()
	ss.busy--
	ss.used = time.Now()
	s.mu.Unlock()
}

// watch closes ss when the client session mss ends.
func (s *Server) watch(mss *mcp.ServerSession, ss *client) {
	_ = mss.Wait()
	s.mu.Lock()
	if s.byMCP[mss] == ss {
		delete(s.byMCP, mss)
	}
	s.mu.Unlock()
	ss.stop(stopWait, true)
}

// admit makes room for one more session with a sandbox, for ss: past
// MaxSessions, the sandbox of the session idle longest is closed. A
// session admitted counts against the bound from then on; call started
// once its invocation is set (or failed to start).
func (s *Server) admit(ss *client) error {
	s.mu.Lock()
	live := s.starting
	var victim *client
	for _, o := range s.byMCP {
		if o == ss || !o.live() {
			continue
		}
		live++
		if o.busy == 0 && (victim == nil || o.used.Before(victim.used)) {
			victim = o
		}
	}
	if live >= s.cfg.MaxSessions && victim == nil {
		s.mu.Unlock()
		return fmt.Errorf("all %d sessions of this server are running code; try again when one ends (the server's session limit is MaxSessions, --max-sessions in the CLI)", s.cfg.MaxSessions)
	}
	s.starting++
	s.mu.Unlock()
	if live >= s.cfg.MaxSessions {
		victim.stop(stopWait, false)
	}
	return nil
}

// started ends the admission of one session.
func (s *Server) started() {
	s.mu.Lock()
	s.starting--
	s.mu.Unlock()
}

// reap closes the sandboxes of sessions idle past IdleTimeout.
func (s *Server) reap() {
	defer close(s.gcDone)
	every := min(s.cfg.IdleTimeout/4, 30*time.Second)
	t := time.NewTicker(max(every, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-s.stopGC:
			return
		case <-t.C:
		}
		var idle []*client
		s.mu.Lock()
		for _, ss := range s.byMCP {
			if ss.busy == 0 && time.Since(ss.used) > s.cfg.IdleTimeout {
				idle = append(idle, ss)
			}
		}
		s.mu.Unlock()
		for _, ss := range idle {
			if ss.live() {
				ss.stop(stopWait, false)
			}
		}
	}
}

// deleteSession drops the events of an ended invocation.
func (s *Server) deleteSession(sid string) error {
	return s.sessions.Delete(context.Background(), &session.DeleteRequest{AppName: appName, UserID: userID, SessionID: sid})
}

// liveSessions counts the sessions that hold a sandbox.
func (s *Server) liveSessions() int {
	s.mu.Lock()
	all := make([]*client, 0, len(s.byMCP))
	for _, c := range s.byMCP {
		all = append(all, c)
	}
	s.mu.Unlock()
	n := 0
	for _, c := range all {
		if c.live() {
			n++
		}
	}
	return n
}
