package openapi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
)

// DefaultMaxResponseBytes bounds a response body read by a tool.
const DefaultMaxResponseBytes = 8 << 20

// Config says which document to load, which of its operations to keep
// and how to call them. Exactly one of Spec, File and URL names
// the document.
type Config struct {
	// Spec is the document itself, JSON or YAML.
	Spec []byte
	// BasePath is the directory that relative file references in Spec
	// resolve against. Empty: Spec may not refer to other files.
	BasePath string
	// File is the path of the document; references to relative files
	// resolve against its directory.
	File string
	// URL is fetched by the host with HTTPClient; references to relative
	// URLs resolve against it.
	URL string
	// MaxDocumentBytes bounds the document read from File or URL and each
	// file or URL it refers to. Zero means DefaultMaxDocumentBytes.
	MaxDocumentBytes int64

	// Name is the toolset's name, which Code Mode uses as the tools'
	// namespace. Empty: the document's info.title, sanitised.
	Name string

	// BaseURL replaces the document's server URLs for every operation.
	BaseURL string
	// ServerVariables fill the variables of the chosen server URL; a
	// variable not given takes its default. A value outside the
	// variable's enum is an error.
	ServerVariables map[string]string

	// Tags, OperationIDs and PathPrefixes select the operations that become
	// tools: an operation is kept when it matches every list that is not
	// empty (one of the tags, one of the operation ids, a path starting
	// with one of the prefixes). Include, if set, is asked last.
	Tags         []string
	OperationIDs []string
	PathPrefixes []string
	Include      func(Operation) bool

	// Auth holds credentials by the name of the document's security
	// scheme (components.securitySchemes). They stay on the host: no tool
	// parameter carries them and the sandbox never sees them.
	Auth map[string]Credential

	// HTTPClient sends every request (the document, OAuth2 token
	// requests, operations). Nil means http.DefaultClient.
	HTTPClient *http.Client
	// MaxResponseBytes bounds the body of each response. Zero means
	// DefaultMaxResponseBytes.
	MaxResponseBytes int64

	// SkipInvalid leaves out operations that are invalid or unsupported
	// (reporting each in [Report]) instead of failing [Load].
	SkipInvalid bool
}

func (cfg *Config) client() *http.Client {
	if cfg.HTTPClient != nil {
		return cfg.HTTPClient
	}
	return http.DefaultClient
}

// Operation describes an operation of the document, for Config.Include
// and the report.
type Operation struct {
	ID         string // operationId, may be empty
	Method     string // upper case
	Path       string // the path template, e.g. /pets/{petId}
	Tags       []string
	Deprecated bool
	Pointer    string // e.g. /paths/~1pets~1{petId}/get
}

// Report says what building the toolset changed or left out.
type Report struct {
	// Renamed lists tools whose names differ from what their operation
	// asked for.
	Renamed []Rename
	// Unsupported lists parts of the document that no tool covers:
	// webhooks, callbacks and links.
	Unsupported []*DocumentError
	// Skipped lists operations left out with Config.SkipInvalid.
	Skipped []*DocumentError
}

// API is an OpenAPI document loaded as operations. It is safe for
// concurrent use.
type API struct {
	name   string
	ops    []*Op
	report Report
}

// Load reads the document cfg names and builds one [Op] per selected
// operation. ctx bounds the fetching of a document and its references
// from URLs.
func Load(ctx context.Context, cfg Config) (*API, error) {
	src, err := readSource(ctx, &cfg)
	if err != nil {
		return nil, err
	}
	p, err := parse(src)
	if err != nil {
		return nil, err
	}
	doc := p.doc
	if err := checkAuth(&cfg, doc); err != nil {
		return nil, err
	}
	b := &builder{cfg: &cfg, src: src, doc: doc, conv: newConverter(p.is30, doc.Index), links: p.links, auth: newAuthenticator(&cfg)}
	if err := b.build(); err != nil {
		return nil, err
	}
	b.report.Renamed = b.names.renamed
	name := cfg.Name
	if name == "" && doc.Info != nil {
		name = sanitise(doc.Info.Title)
	}
	if name == "" || name == "operation" {
		name = "api"
	}
	return &API{name: name, ops: b.ops, report: b.report}, nil
}

// Name is Config.Name, or the document's info.title sanitised, or "api".
func (a *API) Name() string { return a.name }

// Ops returns the selected operations, in document order.
func (a *API) Ops() []*Op { return slices.Clone(a.ops) }

// Call runs the operation whose tool name is name with args.
func (a *API) Call(ctx context.Context, name string, args map[string]any) (map[string]any, error) {
	for _, o := range a.ops {
		if o.name == name {
			return o.Call(ctx, args)
		}
	}
	return nil, fmt.Errorf("openapi: toolset %s has no tool %q", a.name, name)
}

// Report says which operations were renamed and what the operations do
// not cover.
func (a *API) Report() Report { return a.report }

// selected reports whether cfg keeps op.
func (cfg *Config) selected(op Operation) bool {
	if len(cfg.Tags) > 0 && !slices.ContainsFunc(op.Tags, func(t string) bool { return slices.Contains(cfg.Tags, t) }) {
		return false
	}
	if len(cfg.OperationIDs) > 0 && !slices.Contains(cfg.OperationIDs, op.ID) {
		return false
	}
	if len(cfg.PathPrefixes) > 0 && !slices.ContainsFunc(cfg.PathPrefixes, func(p string) bool { return strings.HasPrefix(op.Path, p) }) {
		return false
	}
	return cfg.Include == nil || cfg.Include(op)
}

// asDocumentError returns err's *DocumentError, or one wrapping it.
func asDocumentError(err error, ptr string) *DocumentError {
	var de *DocumentError
	if errors.As(err, &de) {
		return de
	}
	return &DocumentError{Pointer: ptr, Problem: err.Error()}
}

// checkAuth refuses credentials for a security scheme the document does
// not declare: a misspelt name would send requests without them.
func checkAuth(cfg *Config, doc *v3.Document) error {
	var declared []string
	if doc.Components != nil {
		for name := range doc.Components.SecuritySchemes.FromOldest() {
			declared = append(declared, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Auth)) {
		if slices.Contains(declared, name) {
			continue
		}
		if len(declared) == 0 {
			return fmt.Errorf("openapi: Config.Auth names the security scheme %q, but the document declares none; send credentials with Config.HTTPClient instead", name)
		}
		return fmt.Errorf("openapi: Config.Auth names the security scheme %q, which the document does not declare; it declares %s", name, strings.Join(declared, ", "))
	}
	return nil
}
