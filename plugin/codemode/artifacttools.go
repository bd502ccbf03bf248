package codemode

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strings"
	"unicode/utf8"

	eng "github.com/adk-codemode/codemode/internal/host/engine"
	"google.golang.org/genai"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool"
)

// ArtifactServiceUnavailableError is what an artifact tool called from code
// fails with when the runner has no artifact service; Python sees a
// ToolError whose type is "ArtifactServiceUnavailableError".
type ArtifactServiceUnavailableError struct {
	Tool string
}

func (e *ArtifactServiceUnavailableError) Error() string {
	return fmt.Sprintf("%s: no artifact service is configured for this agent, so artifacts cannot be saved, loaded or listed; keep data in variables or files for this turn instead", e.Tool)
}

// ArtifactNameError reports an artifact name or MIME type that
// save_artifact refuses.
type ArtifactNameError struct {
	Name   string
	Reason string
}

func (e *ArtifactNameError) Error() string {
	return fmt.Sprintf("artifact %q: %s", e.Name, e.Reason)
}

// artifactTool is one of the built-in artifact tools: save_artifact,
// load_artifact, list_artifacts. Its Run wraps the value the code gets in
// {"result": value}, the shape functiontool gives non-map results, and
// says so (ResultKey); the dispatcher unwraps it.
type artifactTool struct {
	decl *genai.FunctionDeclaration
	run  func(ctx agent.Context, a agent.Artifacts, args map[string]any) (any, error)
}

var (
	_ tool.Tool    = (*artifactTool)(nil)
	_ runnableTool = (*artifactTool)(nil)
)

func (t *artifactTool) Name() string                            { return t.decl.Name }
func (t *artifactTool) Description() string                     { return t.decl.Description }
func (t *artifactTool) IsLongRunning() bool                     { return false }
func (t *artifactTool) Declaration() *genai.FunctionDeclaration { return t.decl }
func (t *artifactTool) ResultKey() string                       { return "result" }

func (t *artifactTool) Run(ctx agent.Context, args any) (map[string]any, error) {
	a := artifactsOf(ctx)
	if a == nil {
		return nil, &ArtifactServiceUnavailableError{Tool: t.decl.Name}
	}
	m, _ := args.(map[string]any)
	v, err := t.run(ctx, a, m)
	if err != nil {
		return nil, err
	}
	return map[string]any{"result": v}, nil
}

// artifactTools returns the three built-in artifact tools.
func artifactTools() []tool.Tool {
	str := func(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }
	return []tool.Tool{
		&artifactTool{
			decl: &genai.FunctionDeclaration{
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
			run: saveArtifact,
		},
		&artifactTool{
			decl: &genai.FunctionDeclaration{
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
			run: loadArtifact,
		},
		&artifactTool{
			decl: &genai.FunctionDeclaration{
				Name:                 "list_artifacts",
				Description:          "List the names of the session's artifacts.",
				ParametersJsonSchema: map[string]any{"type": "object", "properties": map[string]any{}},
			},
			run: listArtifacts,
		},
	}
}

func saveArtifact(ctx agent.Context, a agent.Artifacts, args map[string]any) (any, error) {
	name, _ := args["filename"].(string)
	content, _ := args["content"].(string)
	mimeType, _ := args["mime_type"].(string)
	switch {
	case name == "":
		return nil, &ArtifactNameError{Name: name, Reason: "the name is empty"}
	case strings.ContainsAny(name, "/\\"):
		return nil, &ArtifactNameError{Name: name, Reason: "artifact names cannot contain '/' or '\\'"}
	case strings.HasPrefix(name, ReservedPrefix):
		return nil, &ArtifactNameError{Name: name, Reason: "names starting with " + ReservedPrefix + " are reserved for the artifacts Code Mode saves itself"}
	}
	if mimeType == "" {
		mimeType = "application/octet-stream"
	}
	if eng.IsToolResultMIME(mimeType) {
		return nil, &ArtifactNameError{Name: name, Reason: "the MIME type " + eng.BaseMIME(mimeType) + " is reserved for tool results; choose another, such as application/json"}
	}
	var data []byte
	if isTextMIME(mimeType) {
		data = []byte(content)
	} else {
		var err error
		if data, err = decodeBase64(content); err != nil {
			return nil, fmt.Errorf("save_artifact: content of MIME type %s must be base64: %w", mimeType, err)
		}
	}
	resp, err := a.Save(ctx, name, &genai.Part{InlineData: &genai.Blob{MIMEType: mimeType, Data: data}})
	if err != nil {
		return nil, err
	}
	return resp.Version, nil
}

func decodeBase64(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if b, err := base64.StdEncoding.DecodeString(s); err == nil {
		return b, nil
	}
	return base64.RawStdEncoding.DecodeString(strings.TrimRight(s, "="))
}

func loadArtifact(ctx agent.Context, a agent.Artifacts, args map[string]any) (any, error) {
	name, _ := args["filename"].(string)
	version, err := intArg(args["version"])
	if err != nil {
		return nil, fmt.Errorf("load_artifact: version: %w", err)
	}
	var part *genai.Part
	if version > 0 {
		resp, err := a.LoadVersion(ctx, name, version)
		if err != nil {
			return missing(err)
		}
		part = resp.Part
	} else {
		resp, err := a.Load(ctx, name)
		if err != nil {
			return missing(err)
		}
		part = resp.Part
	}
	if part == nil {
		return nil, nil
	}
	return partValue(part), nil
}

// missing turns "no such artifact" into None and passes other errors on.
func missing(err error) (any, error) {
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return nil, err
}

// partValue is how load_artifact shows an artifact to code.
func partValue(p *genai.Part) map[string]any {
	switch {
	case p.InlineData != nil:
		mt := p.InlineData.MIMEType
		if isTextMIME(mt) && utf8.Valid(p.InlineData.Data) {
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

func listArtifacts(ctx agent.Context, a agent.Artifacts, _ map[string]any) (any, error) {
	resp, err := a.List(ctx)
	if err != nil {
		return nil, err
	}
	names := resp.FileNames
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

// isTextMIME says whether content of MIME type t is text: text/*,
// application/json, application/xml, application/javascript, and any
// +json or +xml type. An empty type is not text.
func isTextMIME(t string) bool {
	t = eng.BaseMIME(t)
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
