package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"
)

const testDecls = `[
 {"name": "send_message", "namespace": "slack", "description": "Post a message.",
  "parametersJsonSchema": {"type": "object", "required": ["channel"], "properties": {"channel": {"type": "string"}}}},
 {"name": "get_weather", "description": "Weather.", "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING", "max_length": 20}}}}
]`

func writeDecls(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "decls.json")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestStubsTxtar(t *testing.T) {
	var out, errb bytes.Buffer
	if code := runStubs([]string{"--decls", writeDecls(t, testDecls)}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	ar := txtar.Parse(out.Bytes())
	var names []string
	for _, f := range ar.Files {
		names = append(names, f.Name)
	}
	want := "tools/__init__.py tools/_discovery.py tools/_discovery_docs.txt tools/_discovery_index.json tools/get_weather.py tools/slack/__init__.py tools/slack/send_message.py"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("files = %s, want %s", got, want)
	}
	if !strings.Contains(out.String(), "(maxLength=20)") {
		t.Errorf("snake_case alias in parameters lost:\n%s", out.String())
	}
}

func TestStubsOut(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	if code := runStubs([]string{"--decls", writeDecls(t, testDecls), "--out", dir}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	data, err := os.ReadFile(filepath.Join(dir, "tools", "slack", "send_message.py"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "_call('slack.send_message', _args)") {
		t.Errorf("stub does not call its dotted path:\n%s", data)
	}
	if out.Len() != 0 {
		t.Errorf("--out also printed %q", out.String())
	}
}

func TestStubsErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		decls   string
		code    int
		message string
	}{
		{"no decls", nil, "", 2, "an input is required"},
		{"extra arg", []string{"x"}, testDecls, 2, "unexpected argument"},
		{"bad flag", []string{"--nope"}, testDecls, 2, "nope"},
		{"bad json", nil, `{"name": 1}`, 1, "want a JSON array"},
		{"unknown field", nil, `[{"name": "a", "param": {}}]`, 1, "param"},
		{"no name", nil, `[{"description": "x"}]`, 1, "declaration 0 has no name"},
		{"both schemas", nil, `[{"name": "a", "parameters": {}, "parametersJsonSchema": {}}]`, 1, "both parameters and parametersJsonSchema"},
		{"both result schemas", nil, `[{"name": "a", "response": {}, "responseJsonSchema": {}}]`, 1, "both response and responseJsonSchema"},
		{"collision", nil, `[{"name": "a-b"}, {"name": "a_b"}]`, 1, "both become the Python name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.decls != "" {
				args = append([]string{"--decls", writeDecls(t, tc.decls)}, args...)
			}
			var out, errb bytes.Buffer
			code := runStubs(args, &out, &errb)
			if code != tc.code || !strings.Contains(errb.String(), tc.message) {
				t.Errorf("exit %d, stderr %q; want %d containing %q", code, errb.String(), tc.code, tc.message)
			}
		})
	}
	var out, errb bytes.Buffer
	if code := runStubs([]string{"--decls", "/nonexistent/decls.json"}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "/nonexistent/decls.json") {
		t.Errorf("missing file: exit %d, stderr %q", code, errb.String())
	}
	errb.Reset()
	if code := runStubs([]string{"--help"}, &out, &errb); code != 0 || !strings.Contains(errb.String(), "Usage: codemode stubs") {
		t.Errorf("--help: exit %d, stderr %q", code, errb.String())
	}
}

func TestStubsTypedReturns(t *testing.T) {
	decls := writeDecls(t, `[
 {"name": "search", "namespace": "mcp", "resultKey": "output",
  "responseJsonSchema": {"type": "object", "properties": {"hits": {"type": "array", "items": {"type": "string"}}}}},
 {"name": "count", "response": {"type": "INTEGER", "minimum": 0}}]`)
	var out, errb bytes.Buffer
	if code := runCatalog([]string{"--decls", decls}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{
		"def count() -> int:", "Returns:\n        int (minimum=0)",
		"def search() -> dict[str, dict[str, Any]]:", "Returns:\n        {'output': dict[str, Any]}\n            hits: list[str]",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("catalog lacks %q:\n%s", want, out.String())
		}
	}
}
