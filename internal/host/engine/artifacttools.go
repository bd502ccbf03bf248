package engine

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strings"
	"unicode/utf8"

	"google.golang.org/genai"
)

// ArtifactStore is what the built-in artifact tools need of a session's
// artifacts; an adapter implements it on its ADK's artifact service.
type ArtifactStore interface {
	// Save saves part as the artifact name and returns its new version.
	Save(ctx context.Context, name string, part *genai.Part) (int64, error)
	// Load returns a version of the artifact name, the latest for 0; an
	// error that is fs.ErrNotExist for no such artifact or version.
	Load(ctx context.Context, name string, version int) (*genai.Part, error)
	// List returns the names of the session's artifacts.
	List(ctx context.Context) ([]string, error)
}

// ArtifactRefusal is save_artifact's refusal of a name or MIME type; the
// adapter reports it as its public error type.
type ArtifactRefusal struct {
	Name, Reason string
}

func (e *ArtifactRefusal) Error() string { return fmt.Sprintf("artifact %q: %s", e.Name, e.Reason) }

// ArtifactTool is one of the built-in artifact tools that code may call:
// save_artifact, load_artifact, list_artifacts. The value Run returns is
// what the code gets.
type ArtifactTool struct {
	Decl *genai.FunctionDeclaration
	Run  func(ctx context.Context, s ArtifactStore, args map[string]any) (any, error)
}

// ArtifactTools returns the three built-in artifact tools.
func ArtifactTools() []ArtifactTool {
	str := func(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }
	return []ArtifactTool{
		{
			Decl: &genai.FunctionDeclaration{
				Name: "save_artifact",
				Description: "Save content as an artifact, which outlives the turn, and return its new version. " +
					"Text MIME types (text/*, application/json, application/xml, application/javascript, */*+json, */*+xml) take the text itself; " +
					"any other type, and no type (application/octet-stream), takes base64.",
				ParametersJsonSchema: map[string]any{
					"type": "object",
					"properties": map[string]any{
						"filename":  str("The artifact name; no '/' or '\\', and not starting with 'codemode-'. A 'user:' prefix shares it across the user's sessions."),
						"content":   str("The text, or the base64 of the bytes."),
						"mime_type": str("The MIME type; application/octet-stream if left out."),
					},
					"required": []any{"filename", "content"},
				},
			},
			Run: saveArtifact,
		},
		{
			Decl: &genai.FunctionDeclaration{
				Name: "load_artifact",
				Description: "Load an artifact: {'kind': 'text', 'data': str, 'mime_type': str} for text, " +
					"{'kind': 'bytes', 'data': base64 str, 'mime_type': str} for anything else, or None if there is no such artifact or version.",
				ParametersJsonSchema: map[string]any{
					"type": "object",
					"properties": map[string]any{
						"filename": str("The artifact name."),
						"version":  map[string]any{"type": "integer", "minimum": 1, "description": "The version to load; the latest if left out."},
					},
					"required": []any{"filename"},
				},
			},
			Run: loadArtifact,
		},
		{
			Decl: &genai.FunctionDeclaration{
				Name:                 "list_artifacts",
				Description:          "List the names of the session's artifacts.",
				ParametersJsonSchema: map[string]any{"type": "object", "properties": map[string]any{}},
			},
			Run: listArtifacts,
		},
	}
}

func saveArtifact(ctx context.Context, s ArtifactStore, args map[string]any) (any, error) {
	name, _ := args["filename"].(string)
	content, _ := args["content"].(string)
	mimeType, _ := args["mime_type"].(string)
	switch {
	case name == "":
		return nil, &ArtifactRefusal{Name: name, Reason: "the name is empty"}
	case strings.ContainsAny(name, "/\\"):
		return nil, &ArtifactRefusal{Name: name, Reason: "artifact names cannot contain '/' or '\\'"}
	case strings.HasPrefix(name, ReservedPrefix):
		return nil, &ArtifactRefusal{Name: name, Reason: "names starting with " + ReservedPrefix + " are reserved for the artifacts Code Mode saves itself"}
	}
	if mimeType == "" {
		mimeType = "application/octet-stream"
	}
	if IsToolResultMIME(mimeType) {
		return nil, &ArtifactRefusal{Name: name, Reason: "the MIME type " + BaseMIME(mimeType) + " is reserved for tool results; choose another, such as application/json"}
	}
	var data []byte
	if IsTextMIME(mimeType) {
		data = []byte(content)
	} else {
		var err error
		if data, err = decodeBase64(content); err != nil {
			return nil, fmt.Errorf("save_artifact: content of MIME type %s must be base64: %w", mimeType, err)
		}
	}
	return s.Save(ctx, name, &genai.Part{InlineData: &genai.Blob{MIMEType: mimeType, Data: data}})
}

func decodeBase64(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if b, err := base64.StdEncoding.DecodeString(s); err == nil {
		return b, nil
	}
	return base64.RawStdEncoding.DecodeString(strings.TrimRight(s, "="))
}

func loadArtifact(ctx context.Context, s ArtifactStore, args map[string]any) (any, error) {
	name, _ := args["filename"].(string)
	version, err := intArg(args["version"])
	if err != nil {
		return nil, fmt.Errorf("load_artifact: version: %w", err)
	}
	part, err := s.Load(ctx, name, version)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil // None to the code
	case err != nil:
		return nil, err
	case part == nil:
		return nil, nil
	}
	return partValue(part), nil
}

// partValue is how load_artifact shows an artifact to code.
func partValue(p *genai.Part) map[string]any {
	switch {
	case p.InlineData != nil:
		mt := p.InlineData.MIMEType
		if IsTextMIME(mt) && utf8.Valid(p.InlineData.Data) {
			return map[string]any{"kind": "text", "data": string(p.InlineData.Data), "mime_type": mt}
		}
		if mt == "" {
			mt = "application/octet-stream"
		}
		return map[string]any{"kind": "bytes", "data": base64.StdEncoding.EncodeToString(p.InlineData.Data), "mime_type": mt}
	case p.FileData != nil:
		return map[string]any{"kind": "uri", "data": p.FileData.FileURI, "mime_type": p.FileData.MIMEType}
	default:
		return map[string]any{"kind": "text", "data": p.Text, "mime_type": "text/plain"}
	}
}

func listArtifacts(ctx context.Context, s ArtifactStore, _ map[string]any) (any, error) {
	names, err := s.List(ctx)
	if err != nil {
		return nil, err
	}
	if names == nil {
		names = []string{}
	}
	return names, nil
}

// intArg reads an optional integer argument as decoded from JSON.
func intArg(v any) (int, error) {
	switch n := v.(type) {
	case nil:
		return 0, nil
	case int:
		return n, nil
	case int64:
		return int(n), nil
	case float64:
		if n != math.Trunc(n) || n < 0 || n > math.MaxInt32 {
			return 0, fmt.Errorf("%v is not a version number", n)
		}
		return int(n), nil
	case json.Number:
		i, err := n.Int64()
		if err != nil || i < 0 || i > math.MaxInt32 {
			return 0, fmt.Errorf("%v is not a version number", n)
		}
		return int(i), nil
	}
	return 0, fmt.Errorf("%T is not a version number", v)
}

// IsTextMIME says whether content of MIME type t is text: text/*,
// application/json, application/xml, application/javascript, and any
// +json or +xml type. An empty type is not text.
func IsTextMIME(t string) bool {
	t = BaseMIME(t)
	switch {
	case t == "":
		return false
	case strings.HasPrefix(t, "text/"),
		t == "application/json", t == "application/xml", t == "application/javascript",
		strings.HasSuffix(t, "+json"), strings.HasSuffix(t, "+xml"):
		return true
	}
	return false
}
