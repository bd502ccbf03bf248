package schema

import (
	"errors"
	"fmt"
	"sync"

	"google.golang.org/genai"
)

// Limits that keep the walk finite and its output bounded on any input.
const (
	// MaxDepth is the deepest schema position a Node can reach. Deeper
	// positions read as the empty schema.
	MaxDepth = 64
	// maxRefChain caps the $ref and allOf expansions behind one position.
	maxRefChain = 32
	// maxExpansions caps the schema objects merged into one position.
	maxExpansions = 256
	// maxIndexNodes caps the positions visited while indexing anchors.
	maxIndexNodes = 10000
)

// ErrNotJSON reports a declaration value that cannot be turned into JSON.
var ErrNotJSON = errors.New("schema: value is not JSON")

// Document is one declaration's parameter schema, decoded into plain JSON
// values: map[string]any, []any, string, bool, nil and json.Number. The
// walker reads it without decoding into a typed struct, so no keyword is
// hidden from it.
//
// A Document is immutable and safe for concurrent use.
type Document struct {
	root    any
	idxOnce sync.Once
	idx     *anchorIndex

	// memo caches the expansion of each raw schema object, keyed by the
	// object's identity; expansion depends only on the object.
	mu   sync.Mutex
	memo map[uintptr]*expansion
}

// Decode turns any form a schema arrives in into a Document: a
// *genai.Schema, a google/jsonschema-go *jsonschema.Schema, an MCP input
// schema (map[string]any), json.RawMessage or []byte holding JSON text, or
// any other value that encoding/json can marshal. A nil value gives the empty
// schema.
func Decode(v any) (*Document, error) {
	root, err := toJSON(v)
	if err != nil {
		return nil, err
	}
	return &Document{root: root}, nil
}

// Parameters returns the parameter schema of decl. ParametersJsonSchema wins
// when both it and Parameters are set; with neither the tool takes no
// arguments.
func Parameters(decl *genai.FunctionDeclaration) (*Document, error) {
	if decl == nil {
		return Decode(nil)
	}
	if decl.ParametersJsonSchema != nil {
		d, err := Decode(decl.ParametersJsonSchema)
		if err != nil {
			return nil, fmt.Errorf("schema: parametersJsonSchema of %q: %w", decl.Name, err)
		}
		return d, nil
	}
	if decl.Parameters != nil {
		d, err := Decode(decl.Parameters)
		if err != nil {
			return nil, fmt.Errorf("schema: parameters of %q: %w", decl.Name, err)
		}
		return d, nil
	}
	return Decode(nil)
}

// Response returns the document of decl's declared result schema:
// ResponseJsonSchema (JSON Schema, as ADK's functiontool and mcptoolset set
// it) wins over Response (genai.Schema). ok is false when decl declares
// neither.
func Response(decl *genai.FunctionDeclaration) (doc *Document, ok bool, err error) {
	if decl == nil {
		return nil, false, nil
	}
	var v any
	switch {
	case decl.ResponseJsonSchema != nil:
		v = decl.ResponseJsonSchema
	case decl.Response != nil:
		v = decl.Response
	default:
		return nil, false, nil
	}
	d, err := Decode(v)
	if err != nil {
		return nil, false, fmt.Errorf("schema: response schema of %q: %w", decl.Name, err)
	}
	return d, true, nil
}

// Raw returns the decoded JSON value of the whole document. Callers must not
// modify it.
func (d *Document) Raw() any { return d.root }

// Root returns the effective top-level schema.
func (d *Document) Root() Node { return d.node(d.root, 0) }
