package openapi

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/genai"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/tool"

	oas "github.com/adk-codemode/codemode/openapi"
)

// These are the types of package github.com/adk-codemode/codemode/openapi
// (imported here as oas), where the document is read and its operations
// are called, with no ADK; its documentation has their fields. This
// package makes the operations ADK tools.
type (
	// Config says which document to load, which of its operations become
	// tools and how they are called.
	Config = oas.Config
	// Credential is one security scheme's credentials.
	Credential = oas.Credential
	// Operation describes an operation, for Config.Include and the report.
	Operation = oas.Operation
	// Report says what building the toolset changed or left out.
	Report = oas.Report
	// Rename is a tool whose name differs from what its operation asked
	// for.
	Rename = oas.Rename
	// DocumentError is a document that cannot be used, at a JSON pointer.
	DocumentError = oas.DocumentError
	// StatusError is a response outside 2xx.
	StatusError = oas.StatusError
)

const (
	// DefaultMaxDocumentBytes bounds a document read from a file or a URL,
	// and each file or URL it refers to.
	DefaultMaxDocumentBytes = oas.DefaultMaxDocumentBytes
	// DefaultMaxResponseBytes bounds a response body read by a tool.
	DefaultMaxResponseBytes = oas.DefaultMaxResponseBytes
)

// ErrNoServerURL is what the error of [New] wraps when an operation has no
// absolute server URL and Config.BaseURL is empty.
var ErrNoServerURL = oas.ErrNoServerURL

// Toolset is an ADK tool.Toolset with one tool per operation of an
// OpenAPI document. It is safe for concurrent use.
type Toolset struct {
	api   *oas.API
	tools []tool.Tool
}

var _ tool.Toolset = (*Toolset)(nil)

// New reads the document cfg names and builds its tools. ctx bounds the
// fetching of a document and its references from URLs.
func New(ctx context.Context, cfg Config) (*Toolset, error) {
	api, err := oas.Load(ctx, cfg)
	if err != nil {
		return nil, err
	}
	ts := &Toolset{api: api}
	for _, op := range api.Ops() {
		ts.tools = append(ts.tools, &opTool{op})
	}
	return ts, nil
}

// Name returns the toolset's name.
func (s *Toolset) Name() string { return s.api.Name() }

// Tools returns one tool per selected operation, in document order.
func (s *Toolset) Tools(agent.ReadonlyContext) ([]tool.Tool, error) {
	return slices.Clone(s.tools), nil
}

// Call runs the tool called name with args outside any agent, as the
// tool's Run does: for scripts and tests that call an API directly.
func (s *Toolset) Call(ctx context.Context, name string, args map[string]any) (map[string]any, error) {
	return s.api.Call(ctx, name, args)
}

// Report says which tools were renamed and what the toolset does not
// cover.
func (s *Toolset) Report() Report { return s.api.Report() }

// opTool is the ADK tool of one operation.
type opTool struct{ *oas.Op }

var _ tool.Tool = (*opTool)(nil)

func (t *opTool) IsLongRunning() bool { return false }

// ProcessRequest adds the tool to a model request, as ADK's own tools do,
// so that the toolset also works on an agent without Code Mode.
func (t *opTool) ProcessRequest(_ agent.Context, req *model.LLMRequest) error {
	if req.Tools == nil {
		req.Tools = map[string]any{}
	}
	name, decl := t.Name(), t.Declaration()
	if _, ok := req.Tools[name]; ok {
		return fmt.Errorf("openapi: duplicate tool %q", name)
	}
	req.Tools[name] = t
	if req.Config == nil {
		req.Config = &genai.GenerateContentConfig{}
	}
	for _, gt := range req.Config.Tools {
		if gt != nil && gt.FunctionDeclarations != nil {
			gt.FunctionDeclarations = append(gt.FunctionDeclarations, decl)
			return nil
		}
	}
	req.Config.Tools = append(req.Config.Tools, &genai.Tool{FunctionDeclarations: []*genai.FunctionDeclaration{decl}})
	return nil
}

// Run sends the operation's request built from args and returns the
// response body, as the core package's Op.Call does. A status outside 2xx is a
// *StatusError.
func (t *opTool) Run(ctx agent.Context, args any) (map[string]any, error) {
	return t.Call(ctx, args)
}
