package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// relativeServerDoc is an OpenAPI document whose server URL is relative,
// as an API's own copy of its description often is.
const relativeServerDoc = `openapi: 3.0.3
info: {title: Swagger Petstore - OpenAPI 3.0, version: "1"}
servers: [{url: /api/v3}]
paths:
  /pet/{petId}:
    get:
      operationId: getPetById
      parameters:
        - {name: petId, in: path, required: true, schema: {type: integer}}
      responses:
        "200": {description: the pet}
`

func writeSpec(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "openapi.yaml")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// commands are the commands that take the input flags.
var commands = map[string]func(args []string, stdout, stderr io.Writer) int{
	"catalog":  runCatalog,
	"stubs":    runStubs,
	"fidelity": runFidelity,
}

// TestOpenAPIInputFlags: every command that takes an OpenAPI document reads
// one whose server URL is relative, with a note unless --base-url gives
// the base, and puts its tools in the namespace --namespace names.
func TestOpenAPIInputFlags(t *testing.T) {
	spec := writeSpec(t, relativeServerDoc)
	for name, run := range commands {
		t.Run(name, func(t *testing.T) {
			for _, tc := range []struct {
				args []string
				note bool
			}{
				{[]string{"--openapi", spec, "--namespace", "pets"}, true},
				{[]string{"--openapi", spec, "--namespace", "pets", "--base-url", "https://petstore3.swagger.io/api/v3"}, false},
			} {
				var out, errb bytes.Buffer
				if code := run(tc.args, &out, &errb); code != 0 {
					t.Fatalf("%v: exit %d: %s", tc.args, code, errb.String())
				}
				if !strings.Contains(out.String(), "pets") || strings.Contains(out.String(), "swagger_petstore") {
					t.Errorf("%v: the tools are not in the namespace pets:\n%s", tc.args, out.String())
				}
				note := "codemode " + name + ": " + spec + ": note: openapi: /servers: no absolute http or https server URL (got \"/api/v3\"); set Config.BaseURL: " +
					"an agent needs that to call the API; the tools do not, and were read without one (--base-url gives one here)\n"
				if got := errb.String(); tc.note && got != note || !tc.note && got != "" {
					t.Errorf("%v: stderr %q; want the note: %v", tc.args, got, tc.note)
				}
			}
		})
	}
}

// TestInputFlagErrors: --base-url and --namespace go with --openapi, and a
// base URL must be absolute; each command refuses them otherwise as a
// usage error, by name.
func TestInputFlagErrors(t *testing.T) {
	decls := writeDecls(t, testDecls)
	spec := writeSpec(t, relativeServerDoc)
	for name, run := range commands {
		for _, tc := range []struct {
			args    []string
			message string
		}{
			{[]string{"--decls", decls, "--base-url", "https://api.example.com"}, "--base-url goes with --openapi"},
			{[]string{"--mcp", "true", "--namespace", "x"}, `--namespace goes with --openapi: a --decls declaration names its namespace in its "namespace" field`},
			{[]string{"--decls", decls, "--namespace", "x"}, "--namespace goes with --openapi"},
			{[]string{"--openapi", spec, "--base-url", "api.example.com/v1"}, `--base-url "api.example.com/v1" is not an absolute http or https URL`},
			{[]string{"--openapi", spec, "--base-url", "ftp://api.example.com"}, `--base-url "ftp://api.example.com" is not an absolute http or https URL; give one such as https://`},
		} {
			var out, errb bytes.Buffer
			code := run(tc.args, &out, &errb)
			if code != 2 || !strings.HasPrefix(errb.String(), "codemode "+name+": "+tc.message) {
				t.Errorf("%s %v: exit %d, stderr %q; want 2 and %q", name, tc.args, code, errb.String(), tc.message)
			}
		}
	}
}
