package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/mcptoolset"

	"github.com/adk-codemode/codemode/backend/docker"
	"github.com/adk-codemode/codemode/backend/jail"
	"github.com/adk-codemode/codemode/mcpserver"
	"github.com/adk-codemode/codemode/plugin/codemode"
	"github.com/adk-codemode/codemode/toolset/mcpcommand"
	"github.com/adk-codemode/codemode/toolset/openapi"
)

const mcpUsage = `Usage: codemode mcp [flags]

Serves Code Mode as an MCP server: its tools are execute (run Python that
calls the upstream tools as typed functions from the tools package),
search and describe. The upstreams are MCP servers (--mcp for a command
spoken to over stdio, --mcp-url for streamable HTTP) and OpenAPI
documents (--openapi), named on the command line or in a --config file;
each name is the namespace of its tools (tools.NAME). Each client
session gets its own sandbox, kept across its execute calls.

Serves over standard input and output, or over streamable HTTP with
--http ADDR (a loopback address unless --http-public: the server has no
authentication of its own).

Flags:
`

// mcpFileConfig is the --config file.
type mcpFileConfig struct {
	// MCP are MCP servers by namespace: Command for stdio, URL for
	// streamable HTTP.
	MCP map[string]struct {
		Command []string          `json:"command"`
		Env     map[string]string `json:"env"`
		URL     string            `json:"url"`
		// Approve are the server's tools that need a person's
		// approval.
		Approve []string `json:"approve"`
	} `json:"mcp"`
	// OpenAPI are OpenAPI documents by namespace.
	OpenAPI map[string]struct {
		File    string `json:"file"`
		BaseURL string `json:"base_url"`
		// Auth names, by security scheme, the environment variables
		// that hold the credentials.
		Auth map[string]struct {
			TokenEnv        string `json:"token_env"`
			APIKeyEnv       string `json:"api_key_env"`
			UsernameEnv     string `json:"username_env"`
			PasswordEnv     string `json:"password_env"`
			ClientIDEnv     string `json:"client_id_env"`
			ClientSecretEnv string `json:"client_secret_env"`
		} `json:"auth"`
	} `json:"openapi"`
}

// listFlags are repeatable flags.
type listFlags []string

func (l *listFlags) String() string { return strings.Join(*l, ",") }
func (l *listFlags) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// pairFlags are repeatable name=value flags.
type pairFlags []string

func (p *pairFlags) String() string { return strings.Join(*p, ",") }
func (p *pairFlags) Set(v string) error {
	name, value, ok := strings.Cut(v, "=")
	if !ok || strings.TrimSpace(name) == "" || strings.TrimSpace(value) == "" {
		return fmt.Errorf("want NAME=VALUE, got %q", v)
	}
	*p = append(*p, v)
	return nil
}

// upstreams are the toolsets the server fronts, and what to stop at exit.
type upstreams struct {
	toolsets   []tool.Toolset
	namespaces []codemode.Namespace
	names      map[string]string // namespace -> where it came from
	procs      []*mcpcommand.Transport
	// approve are the tools that need a person's approval, by MCP
	// server namespace, in the form approvalKey gives.
	approve map[string]map[string]bool
}

// approvalKey is the form a tool name is compared in for --approve: lower
// case, anything but letters and digits an underscore, so that both the
// name a server lists (get-sum) and the one Python imports (get_sum)
// match.
func approvalKey(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		}
		return '_'
	}, name)
}

// setApproval records that tool of the MCP server named ns needs a
// person's approval.
func (u *upstreams) setApproval(ns, tool string) error {
	if strings.TrimSpace(ns) == "" || strings.TrimSpace(tool) == "" {
		return fmt.Errorf("approval of %q: want NAME.TOOL, an MCP server's namespace and one of its tools", ns+"."+tool)
	}
	if u.approve == nil {
		u.approve = map[string]map[string]bool{}
	}
	if u.approve[ns] == nil {
		u.approve[ns] = map[string]bool{}
	}
	u.approve[ns][approvalKey(tool)] = true
	return nil
}

// confirmation is the mcptoolset provider of the MCP server named ns:
// whether a call of its tool needs approval.
func (u *upstreams) confirmation(ns string) tool.ConfirmationProvider {
	set := u.approve[ns]
	if len(set) == 0 {
		return nil
	}
	return func(name string, _ any) bool { return set[approvalKey(name)] }
}

// checkApprovals refuses an approval that names no MCP server.
func (u *upstreams) checkApprovals() error {
	for _, ns := range sortedKeys(u.approve) {
		src, ok := u.names[ns]
		if !ok {
			return fmt.Errorf("--approve names %q, which no upstream is called", ns)
		}
		if !strings.HasPrefix(src, "MCP server ") {
			return fmt.Errorf("--approve names %q, the %s: approvals are for MCP servers' tools", ns, src)
		}
	}
	return nil
}

func (u *upstreams) claim(name, source string) error {
	if u.names == nil {
		u.names = map[string]string{}
	}
	if prev, ok := u.names[name]; ok {
		return fmt.Errorf("the namespace %q is given twice (%s and %s): name each upstream differently", name, prev, source)
	}
	u.names[name] = source
	return nil
}

// stop ends the stdio servers started, and keeps them from being started
// again.
func (u *upstreams) stop() {
	var wg sync.WaitGroup
	for _, tr := range u.procs {
		wg.Go(func() { _ = tr.Close() })
	}
	wg.Wait()
}

func (u *upstreams) addMCP(name string, argv []string, env map[string]string, stderr io.Writer) error {
	if len(argv) == 0 {
		return fmt.Errorf("MCP server %q: no command", name)
	}
	if err := u.claim(name, "MCP server "+strings.Join(argv, " ")); err != nil {
		return err
	}
	// A fresh process on every connect: a server that exits is started
	// again when the toolset reconnects.
	tr := &mcpcommand.Transport{Args: argv, Stderr: stderr}
	if len(env) > 0 {
		tr.Env = os.Environ()
		for k, v := range env {
			tr.Env = append(tr.Env, k+"="+v)
		}
	}
	u.procs = append(u.procs, tr)
	ts, err := mcptoolset.New(mcptoolset.Config{Transport: tr, RequireConfirmationProvider: u.confirmation(name)})
	if err != nil {
		return fmt.Errorf("MCP server %q: %w", name, err)
	}
	u.add(name, ts)
	return nil
}

func (u *upstreams) addMCPURL(name, url string) error {
	if !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") {
		return fmt.Errorf("MCP server %q: the URL %q is not http:// or https://", name, url)
	}
	if err := u.claim(name, "MCP server "+url); err != nil {
		return err
	}
	ts, err := mcptoolset.New(mcptoolset.Config{Endpoint: url, RequireConfirmationProvider: u.confirmation(name)})
	if err != nil {
		return fmt.Errorf("MCP server %q: %w", name, err)
	}
	u.add(name, ts)
	return nil
}

func (u *upstreams) addOpenAPI(cfg openapi.Config, stderr io.Writer) error {
	if err := u.claim(cfg.Name, "OpenAPI document "+cfg.File); err != nil {
		return err
	}
	ts, err := openapi.New(context.Background(), cfg)
	if err != nil {
		return fmt.Errorf("OpenAPI document %s: %w", cfg.File, err)
	}
	for _, un := range ts.Report().Unsupported {
		fmt.Fprintf(stderr, "codemode mcp: %s: not covered: %v\n", cfg.File, un)
	}
	u.toolsets = append(u.toolsets, ts)
	return nil
}

func (u *upstreams) add(name string, ts tool.Toolset) {
	u.toolsets = append(u.toolsets, ts)
	u.namespaces = append(u.namespaces, codemode.Namespace{Toolset: ts, Name: name})
}

// readEnv sets each field of a credential from the environment variable
// named for it; each variable named must be set.
func readEnv(doc, scheme string, vars map[*string]string) error {
	for dst, name := range vars {
		if name == "" {
			continue
		}
		v := os.Getenv(name)
		if v == "" {
			return fmt.Errorf("OpenAPI %q, scheme %q: the environment variable %s is not set", doc, scheme, name)
		}
		*dst = v
	}
	return nil
}

func runMCP(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("mcp", mcpUsage, stderr)
	var mcps, mcpURLs, specs, auths pairFlags
	var approve listFlags
	fs.Var(&mcps, "mcp", "a stdio MCP server, `NAME=COMMAND ARGS...` (split at spaces; repeatable)")
	fs.Var(&mcpURLs, "mcp-url", "a streamable HTTP MCP server, `NAME=URL` (repeatable)")
	fs.Var(&specs, "openapi", "an OpenAPI document, `NAME=FILE` (repeatable)")
	fs.Var(&auths, "openapi-auth", "the credential of an --openapi document's security scheme, `NAME.SCHEME=ENVVAR`: the variable holds its token or API key (repeatable; basic and client-credentials auth go in --config)")
	fs.Var(&approve, "approve", "a tool of an --mcp or --mcp-url server that needs a person's approval, `NAME.TOOL` (repeatable): the client is asked through elicitation, and a client that cannot be asked has the call declined")
	config := fs.String("config", "", "a JSON `file` of upstreams (see docs/mcp-server.md)")
	httpAddr := fs.String("http", "", "serve streamable HTTP on `address` (for example 127.0.0.1:8765) instead of stdio")
	public := fs.Bool("http-public", false, "allow --http on an address that is not loopback: anyone who reaches it can run code")
	backend := fs.String("backend", defaultBackend, "sandbox `name`: "+backendNames())
	url := fs.String("url", "", "with --backend remote: the sandbox server's `address` (its secret comes from $"+remoteTokenEnv+")")
	image := fs.String("image", "", "with --backend docker: the sandbox `image` (default "+docker.DefaultImage+")")
	python := fs.String("python", "", "interpreter `path` (default: /usr/bin/python3, else python3 on PATH)")
	var eg egressFlags
	eg.register(fs)
	timeout := fs.Duration("timeout", codemode.DefaultTimeout, "time limit per execute call; 0 means none")
	maxSessions := fs.Int("max-sessions", mcpserver.DefaultMaxSessions, "client sessions that may hold a sandbox at a time")
	idle := fs.Duration("idle-timeout", mcpserver.DefaultIdleTimeout, "close the sandbox of a client session idle this long")
	progress := fs.Duration("progress-interval", mcpserver.DefaultProgressInterval, "how often an execute call that asks for progress is told how long its code has run")
	if code, ok := parseFlags(fs, args, 0); !ok {
		return code
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "codemode mcp: %v\n", err)
		return 1
	}
	if *httpAddr != "" && !*public {
		if err := loopbackOnly(*httpAddr); err != nil {
			fmt.Fprintf(stderr, "codemode mcp: %v\n", err)
			return 2
		}
	}
	var up upstreams
	defer up.stop()
	for _, a := range approve {
		ns, name, _ := strings.Cut(a, ".")
		if err := up.setApproval(ns, name); err != nil {
			fmt.Fprintf(stderr, "codemode mcp: --approve: %v\n", err)
			return 2
		}
	}
	if err := up.fromFlags(mcps, mcpURLs, specs, auths, stderr); err != nil {
		fmt.Fprintf(stderr, "codemode mcp: %v\n", err)
		return 2
	}
	if *config != "" {
		if err := up.fromFile(*config, stderr); err != nil {
			return fail(err)
		}
	}
	if err := up.checkApprovals(); err != nil {
		return fail(err)
	}
	if len(up.toolsets) == 0 {
		fmt.Fprintln(stderr, "codemode mcp: note: no upstreams (--mcp, --mcp-url, --openapi or --config): the code can call no tools")
	}
	b, err := newBackend(*backend, *python, *url, *image, &eg)
	if err != nil {
		fmt.Fprintf(stderr, "codemode mcp: %v\n", err)
		return 2
	}
	if *backend == "jail" {
		// A server opens many sessions: fork them from a template, which
		// Close stops.
		b = &jail.Backend{Config: jail.Config{Python: *python}, Egress: b.(*jail.Backend).Egress}
	}
	if c, ok := b.(io.Closer); ok {
		defer c.Close()
	}
	to := *timeout
	if to == 0 {
		to = -1
	}
	srv, err := mcpserver.New(mcpserver.Config{
		CodeMode:         codemode.Config{Toolsets: up.toolsets, Namespaces: up.namespaces, Backend: b, Timeout: to},
		MaxSessions:      *maxSessions,
		IdleTimeout:      *idle,
		ProgressInterval: *progress,
		Version:          version(),
	})
	if err != nil {
		return fail(err)
	}
	defer func() {
		if err := srv.Close(); err != nil {
			fmt.Fprintf(stderr, "codemode mcp: close: %v\n", err)
		}
	}()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *httpAddr != "" {
		err = serveHTTP(ctx, srv, *httpAddr, *idle, stderr)
	} else {
		err = srv.MCP().Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}})
	}
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		return fail(err)
	}
	return 0
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// version is the module's version as the binary records it.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "devel"
}

// loopbackOnly refuses an address whose host is not a loopback address.
func loopbackOnly(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--http %q: %w (give HOST:PORT, for example 127.0.0.1:8765)", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("--http %q is not a loopback address: the server has no authentication, and anyone who reaches it can run code with the upstreams' credentials; use 127.0.0.1, or add --http-public behind an authenticating proxy", addr)
}

// serveHTTP serves srv over streamable HTTP on addr until ctx ends. An
// HTTP session idle for idle is closed, so that clients that go away
// without ending theirs leave nothing behind.
func serveHTTP(ctx context.Context, srv *mcpserver.Server, addr string, idle time.Duration, stderr io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv.MCP() }, &mcp.StreamableHTTPOptions{SessionTimeout: idle})
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stderr, "codemode mcp: serving MCP on http://%s/\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return hs.Shutdown(sctx)
	}
}

// fromFlags adds the upstreams of the command line.
func (u *upstreams) fromFlags(mcps, urls, specs, auths pairFlags, stderr io.Writer) error {
	for _, v := range mcps {
		name, command, _ := strings.Cut(v, "=")
		if err := u.addMCP(name, strings.Fields(command), nil, stderr); err != nil {
			return err
		}
	}
	for _, v := range urls {
		name, url, _ := strings.Cut(v, "=")
		if err := u.addMCPURL(name, url); err != nil {
			return err
		}
	}
	creds := map[string]map[string]openapi.Credential{}
	for _, v := range auths {
		key, env, _ := strings.Cut(v, "=")
		doc, scheme, ok := strings.Cut(key, ".")
		if !ok {
			return fmt.Errorf("--openapi-auth %q: want NAME.SCHEME=ENVVAR, the document's name and a security scheme of its components.securitySchemes", v)
		}
		secret := os.Getenv(env)
		if secret == "" {
			return fmt.Errorf("--openapi-auth %q: the environment variable %s is not set", v, env)
		}
		if creds[doc] == nil {
			creds[doc] = map[string]openapi.Credential{}
		}
		// The scheme's type decides which of the two is used.
		creds[doc][scheme] = openapi.Credential{Token: secret, APIKey: secret}
	}
	for _, v := range specs {
		name, file, _ := strings.Cut(v, "=")
		if err := u.addOpenAPI(openapi.Config{Name: name, File: file, Auth: creds[name]}, stderr); err != nil {
			return err
		}
		delete(creds, name)
	}
	for doc := range creds {
		return fmt.Errorf("--openapi-auth names %q, which no --openapi gives", doc)
	}
	return nil
}

// fromFile adds the upstreams of a --config file.
func (u *upstreams) fromFile(path string, stderr io.Writer) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	var fc mcpFileConfig
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&fc); err != nil {
		return fmt.Errorf("--config %s: %w", path, err)
	}
	for _, name := range sortedKeys(fc.MCP) {
		m := fc.MCP[name]
		for _, t := range m.Approve {
			if err := u.setApproval(name, t); err != nil {
				return fmt.Errorf("--config %s: %w", path, err)
			}
		}
		switch {
		case len(m.Command) > 0 && m.URL != "":
			return fmt.Errorf("--config %s: MCP server %q: give command or url, not both", path, name)
		case m.URL != "":
			err = u.addMCPURL(name, m.URL)
		default:
			err = u.addMCP(name, m.Command, m.Env, stderr)
		}
		if err != nil {
			return fmt.Errorf("--config %s: %w", path, err)
		}
	}
	for _, name := range sortedKeys(fc.OpenAPI) {
		o := fc.OpenAPI[name]
		if o.File == "" {
			return fmt.Errorf("--config %s: OpenAPI %q: no file", path, name)
		}
		auth := map[string]openapi.Credential{}
		for scheme, a := range o.Auth {
			var c openapi.Credential
			if err := readEnv(name, scheme, map[*string]string{
				&c.Token: a.TokenEnv, &c.APIKey: a.APIKeyEnv, &c.Username: a.UsernameEnv,
				&c.Password: a.PasswordEnv, &c.ClientID: a.ClientIDEnv, &c.ClientSecret: a.ClientSecretEnv,
			}); err != nil {
				return fmt.Errorf("--config %s: %w", path, err)
			}
			auth[scheme] = c
		}
		file := o.File
		if !filepath.IsAbs(file) {
			// Relative to the config file, wherever it is run from.
			file = filepath.Join(filepath.Dir(path), file)
		}
		if err := u.addOpenAPI(openapi.Config{Name: name, File: file, BaseURL: o.BaseURL, Auth: auth}, stderr); err != nil {
			return fmt.Errorf("--config %s: %w", path, err)
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
