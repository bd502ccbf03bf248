package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/tools/txtar"
	"google.golang.org/genai"

	"github.com/adk-codemode/codemode/render"
)

const stubsUsage = `Usage: codemode stubs (--decls FILE | --openapi SPEC | --mcp COMMAND) [--out DIR]

Generates the Python "tools" package that Code Mode puts in the sandbox.

FILE is a JSON array of function declarations (name, description,
parameters or parametersJsonSchema, and optionally response or
responseJsonSchema for the result), each with an optional "namespace"
field that places it in tools.<namespace>. SPEC is the path of an OpenAPI
3.0 or 3.1 document, whose operations become tools as in toolset/openapi,
in the namespace --namespace names (default: the document's info.title);
no request is sent, so it needs no base URL, but --base-url takes one.
COMMAND is a stdio MCP server's command line, split at spaces (no
quoting): it is started, asked for its tools through ADK's mcptoolset,
and stopped; its tools go in the toolset's namespace.

With --out the files are written under DIR (DIR/tools/...); without it
they are printed to stdout as one txtar archive.

Flags:
`

// runStubs implements "codemode stubs".
func runStubs(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("stubs", stubsUsage, stderr)
	var in inputs
	in.register(fs)
	out := fs.String("out", "", "`directory` to write the tools package to; stdout as txtar if empty")
	if code, ok := parseFlags(fs, args, 0); !ok {
		return code
	}
	if !in.given(fs, "stubs", stderr) {
		return 2
	}
	tools, err := in.load(stderr, "stubs")
	if err != nil {
		fmt.Fprintf(stderr, "codemode stubs: %v\n", err)
		return 1
	}
	reg, err := render.NewRegistry(tools)
	if err != nil {
		fmt.Fprintf(stderr, "codemode stubs: %s: %v\n", in.name(), err)
		return 1
	}
	files := reg.Stubs()
	if *out == "" {
		ar := &txtar.Archive{}
		for _, f := range files {
			ar.Files = append(ar.Files, txtar.File{Name: f.Path, Data: []byte(f.Content)})
		}
		if _, err := stdout.Write(txtar.Format(ar)); err != nil {
			fmt.Fprintf(stderr, "codemode stubs: %v\n", err)
			return 1
		}
		return 0
	}
	for _, f := range files {
		path := filepath.Join(*out, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			fmt.Fprintf(stderr, "codemode stubs: %v\n", err)
			return 1
		}
		if err := os.WriteFile(path, []byte(f.Content), 0o644); err != nil {
			fmt.Fprintf(stderr, "codemode stubs: %v\n", err)
			return 1
		}
	}
	return 0
}

// stubsDecl is one element of a --decls file: a genai.FunctionDeclaration
// plus an optional namespace.
type stubsDecl struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description"`
	Parameters           json.RawMessage `json:"parameters"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
	Response             json.RawMessage `json:"response"`
	ResponseJSONSchema   json.RawMessage `json:"responseJsonSchema"`
	Namespace            string          `json:"namespace"`
	// ResultKey says the tool's result reaches code as {resultKey: result},
	// as "output" for ADK's MCP tools.
	ResultKey string `json:"resultKey"`
}

// loadDecls reads a --decls file. The parameters of each declaration are kept
// as raw JSON, so that Gemini's snake_case keys reach the renderer instead of
// being dropped by a typed decode.
func loadDecls(path string) ([]render.Tool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var decls []stubsDecl
	if err := dec.Decode(&decls); err != nil {
		return nil, fmt.Errorf("%s: want a JSON array of function declarations: %w", path, err)
	}
	tools := make([]render.Tool, 0, len(decls))
	for i, d := range decls {
		if d.Name == "" {
			return nil, fmt.Errorf("%s: declaration %d has no name", path, i)
		}
		decl := &genai.FunctionDeclaration{Name: d.Name, Description: d.Description}
		hasParams := len(d.Parameters) > 0 && string(d.Parameters) != "null"
		hasSchema := len(d.ParametersJSONSchema) > 0 && string(d.ParametersJSONSchema) != "null"
		switch {
		case hasParams && hasSchema:
			return nil, fmt.Errorf("%s: declaration %q sets both parameters and parametersJsonSchema", path, d.Name)
		case hasSchema:
			decl.ParametersJsonSchema = d.ParametersJSONSchema
		case hasParams:
			decl.ParametersJsonSchema = d.Parameters
		}
		hasResp := len(d.Response) > 0 && string(d.Response) != "null"
		hasRespSchema := len(d.ResponseJSONSchema) > 0 && string(d.ResponseJSONSchema) != "null"
		switch {
		case hasResp && hasRespSchema:
			return nil, fmt.Errorf("%s: declaration %q sets both response and responseJsonSchema", path, d.Name)
		case hasRespSchema:
			decl.ResponseJsonSchema = d.ResponseJSONSchema
		case hasResp:
			// Kept raw like parameters, so that snake_case keys survive.
			decl.ResponseJsonSchema = d.Response
		}
		tools = append(tools, render.Tool{Namespace: d.Namespace, Declaration: decl, ResultKey: d.ResultKey})
	}
	return tools, nil
}
