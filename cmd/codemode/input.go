package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/mcptoolset"
	"google.golang.org/genai"

	"github.com/adk-codemode/codemode/render"
	"github.com/adk-codemode/codemode/toolset/mcpcommand"
	"github.com/adk-codemode/codemode/toolset/openapi"
)

// declarer is a tool that has a function declaration, as ADK's tools do.
type declarer interface {
	Declaration() *genai.FunctionDeclaration
}

// inputs are the flags that name where a command's tools come from, and
// those that go with one of them.
type inputs struct {
	decls, spec, mcp string
	// with --openapi
	baseURL, namespace string
}

func (in *inputs) register(fs *flag.FlagSet) {
	fs.StringVar(&in.decls, "decls", "", "JSON `file` of function declarations")
	fs.StringVar(&in.spec, "openapi", "", "OpenAPI document `file`")
	fs.StringVar(&in.mcp, "mcp", "", "a stdio MCP server's `command` and arguments, split at spaces; it is started, asked for its tools and stopped")
	fs.StringVar(&in.baseURL, "base-url", "", "with --openapi: the API's base `URL`, as openapi.Config.BaseURL. No request is sent, and the tools do not depend on it: "+
		"without it, a document whose server URL is relative is read all the same, with a note")
	fs.StringVar(&in.namespace, "namespace", "", "with --openapi: the tools' `namespace`, as openapi.Config.Name (default: the document's info.title, sanitised)")
}

// check reports a usage error in the input flags: a flag that goes with
// an input that was not given, or a --base-url that cannot be one.
func (in *inputs) check() error {
	if in.spec == "" {
		if in.baseURL != "" {
			return errors.New("--base-url goes with --openapi")
		}
		if in.namespace != "" {
			return errors.New("--namespace goes with --openapi: a --decls declaration names its namespace in its \"namespace\" field, " +
				"and an --mcp server's tools go in its toolset's namespace")
		}
	}
	if in.baseURL != "" {
		if u, err := url.Parse(in.baseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--base-url %q is not an absolute http or https URL; give one such as https://api.example.com/v1", in.baseURL)
		}
	}
	return nil
}

func (in *inputs) none() bool { return in.decls == "" && in.spec == "" && in.mcp == "" }

// given reports whether the command's flags name one usable input, and
// says on stderr what is wrong when they do not: the command then exits 2.
func (in *inputs) given(fs *flag.FlagSet, cmd string, stderr io.Writer) bool {
	if err := in.check(); err != nil {
		fmt.Fprintf(stderr, "codemode %s: %v\n", cmd, err)
		return false
	}
	if in.none() {
		fmt.Fprintf(stderr, "codemode %s: an input is required: --decls FILE, --openapi SPEC or --mcp COMMAND\n", cmd)
		fs.Usage()
		return false
	}
	return true
}

// name is the input as the user gave it, for messages.
func (in *inputs) name() string { return in.decls + in.spec + in.mcp }

// load reads the tools of the one input given: a --decls file, an OpenAPI
// document (--openapi) or a stdio MCP server (--mcp). What the OpenAPI
// toolset does not cover is noted on stderr.
func (in *inputs) load(stderr io.Writer, cmd string) ([]render.Tool, error) {
	given := 0
	for _, v := range []string{in.decls, in.spec, in.mcp} {
		if v != "" {
			given++
		}
	}
	switch {
	case given > 1:
		return nil, errors.New("give one input: --decls, --openapi or --mcp, not several")
	case in.decls != "":
		return loadDecls(in.decls)
	case in.spec != "":
		return loadOpenAPI(openapi.Config{File: in.spec, BaseURL: in.baseURL, Name: in.namespace}, stderr, cmd)
	case in.mcp != "":
		return loadMCP(in.mcp)
	}
	return nil, errors.New("an input is required: --decls FILE, --openapi SPEC or --mcp 'COMMAND [ARGS...]'")
}

// mcpTimeout bounds starting an MCP server and listing its tools.
const mcpTimeout = 60 * time.Second

// loadMCP starts the stdio MCP server that command names, lists its tools
// through ADK's mcptoolset, as an agent would, and stops it.
func loadMCP(command string) ([]render.Tool, error) {
	argv := strings.Fields(command)
	if len(argv) == 0 {
		return nil, errors.New("--mcp: give the server's command, for example --mcp 'npx -y @modelcontextprotocol/server-everything'")
	}
	ctx, cancel := context.WithTimeout(context.Background(), mcpTimeout)
	defer cancel()
	tr := &mcpcommand.Transport{Args: argv, TerminateDuration: time.Second}
	defer func() { _ = tr.Close() }()
	ts, err := mcptoolset.New(mcptoolset.Config{Transport: tr})
	if err != nil {
		return nil, fmt.Errorf("--mcp %q: %w", command, err)
	}
	list, err := ts.Tools(listContext{ctx})
	if err != nil {
		return nil, fmt.Errorf("--mcp %q: list the server's tools: %w", command, err)
	}
	return declared(list, ts.Name(), command)
}

// listContext is the read-only context a toolset lists its tools in, for
// a command that runs outside any invocation.
type listContext struct{ context.Context }

func (listContext) UserContent() *genai.Content          { return nil }
func (listContext) InvocationID() string                 { return "" }
func (listContext) AgentName() string                    { return "" }
func (listContext) ReadonlyState() session.ReadonlyState { return nil }
func (listContext) UserID() string                       { return "" }
func (listContext) AppName() string                      { return "codemode" }
func (listContext) SessionID() string                    { return "" }
func (listContext) Branch() string                       { return "" }

var _ agent.ReadonlyContext = listContext{}

// declared is a toolset's tools as the catalog renders them, in ns.
func declared(list []tool.Tool, ns, source string) ([]render.Tool, error) {
	tools := make([]render.Tool, 0, len(list))
	for _, t := range list {
		d, ok := t.(declarer)
		if !ok || d.Declaration() == nil {
			return nil, fmt.Errorf("%s: tool %q has no declaration", source, t.Name())
		}
		tools = append(tools, render.Tool{Namespace: ns, Declaration: d.Declaration()})
	}
	return tools, nil
}

// listingBaseURL is the base URL the tools of a document without an
// absolute server URL are read with. Nothing is sent to it: the commands
// only list the tools, which do not depend on it.
const listingBaseURL = "https://base-url.invalid"

// loadOpenAPI builds the tools of the OpenAPI document in the file
// cfg.File, in the toolset's namespace. A document whose operations have
// no absolute server URL is read all the same, with a note: the tools are
// the same whatever the base URL, which an agent needs only to call them.
func loadOpenAPI(cfg openapi.Config, stderr io.Writer, cmd string) ([]render.Tool, error) {
	spec := cfg.File
	ts, err := openapi.New(context.Background(), cfg)
	if errors.Is(err, openapi.ErrNoServerURL) {
		fmt.Fprintf(stderr, "codemode %s: %s: note: %v: an agent needs that to call the API; the tools do not, and were read without one (--base-url gives one here)\n", cmd, spec, err)
		cfg.BaseURL = listingBaseURL
		ts, err = openapi.New(context.Background(), cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", spec, err)
	}
	for _, u := range ts.Report().Unsupported {
		fmt.Fprintf(stderr, "codemode %s: %s: not covered: %v\n", cmd, spec, u)
	}
	list, err := ts.Tools(nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", spec, err)
	}
	return declared(list, ts.Name(), spec)
}
