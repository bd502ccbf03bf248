package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCatalog(t *testing.T) {
	decls := writeDecls(t, testDecls)
	for _, tc := range []struct {
		args       []string
		want, skip string
	}{
		{nil, "def send_message(*, channel: str) -> Any:", "<code-mode>"},
		{[]string{"--detail", "names"}, "from tools.slack import send_message", "def "},
		{[]string{"--block"}, "def get_weather(", "python-version"},
		{[]string{"--detail", "signatures"}, "def get_weather(*, city: str | None = ...) -> Any:\n    \"\"\"Weather.\"\"\"\n", "Args:"},
		// The block points to search and describe, as the plugin's does;
		// here the hint with even the names does not fit below the full
		// catalog's 1,325 characters.
		{[]string{"--block", "--budget", "1146"}, "def get_weather(", "search(query)"},
		{[]string{"--block", "--budget", "1145"}, "`from tools import search, describe`", "# tools"},
		{[]string{"--block", "--budget", "10"}, "too large to show", "# tools"},
	} {
		var out, errb bytes.Buffer
		code := runCatalog(append([]string{"--decls", decls}, tc.args...), &out, &errb)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, errb.String())
		}
		if !strings.Contains(out.String(), tc.want) || strings.Contains(out.String(), tc.skip) {
			t.Errorf("%v: output lacks %q or has %q:\n%s", tc.args, tc.want, tc.skip, out.String())
		}
	}
}

func TestCatalogErrors(t *testing.T) {
	decls := writeDecls(t, testDecls)
	for _, tc := range []struct {
		args    []string
		code    int
		message string
	}{
		{[]string{}, 2, "an input is required"},
		{[]string{"--decls", decls, "--format", "html"}, 2, "--format must be text or md"},
		{[]string{"--decls", decls, "--format", "md", "--block"}, 2, "does not go with --format md"},
		{[]string{"--decls", decls, "--out", t.TempDir()}, 2, "add --format md"},
		{[]string{"--decls", decls, "--detail", "some"}, 2, "--detail must be full, signatures or names"},
		{[]string{"--decls", decls, "--budget", "0"}, 2, "--budget must be positive"},
		{[]string{"--decls", decls, "extra"}, 2, "unexpected argument"},
		{[]string{"--decls", writeDecls(t, "[")}, 1, "want a JSON array"},
		{[]string{"-h"}, 0, "Usage: codemode catalog"},
	} {
		var out, errb bytes.Buffer
		code := runCatalog(tc.args, &out, &errb)
		if code != tc.code || !strings.Contains(errb.String(), tc.message) {
			t.Errorf("%v: exit %d, stderr %q; want %d containing %q", tc.args, code, errb.String(), tc.code, tc.message)
		}
	}
}

func TestCatalogGolden(t *testing.T) {
	runGolden(t, "catalog", func(args []string, stdout, stderr *bytes.Buffer) int {
		return runCatalog(args, stdout, stderr)
	})
}

func TestCatalogPages(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	if code := runCatalog([]string{"--decls", writeDecls(t, testDecls), "--format", "md", "--out", dir}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if got, want := strings.Join(names, " "), "index.md tools.md tools.slack.md"; got != want {
		t.Errorf("pages = %s, want %s", got, want)
	}
	index, err := os.ReadFile(filepath.Join(dir, "index.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(index), "(tools.slack.md#tool-slack-send_message)") {
		t.Errorf("index.md does not link to the slack page's tool anchor:\n%s", index)
	}
}
