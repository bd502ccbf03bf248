package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestFidelityGolden(t *testing.T) {
	runGolden(t, "fidelity", func(args []string, stdout, stderr *bytes.Buffer) int {
		return runFidelity(args, stdout, stderr)
	})
}

func TestFidelityErrors(t *testing.T) {
	decls := writeDecls(t, testDecls)
	for _, tc := range []struct {
		args    []string
		code    int
		message string
	}{
		{[]string{}, 2, "an input is required"},
		{[]string{"--decls", decls, "--openapi", decls}, 2, "not several"},
		{[]string{"--decls", decls, "--format", "html"}, 2, "--format must be text, json or md"},
		{[]string{"--decls", writeDecls(t, "[")}, 2, "want a JSON array"},
		{[]string{"--openapi", writeDecls(t, "openapi: [")}, 2, "codemode fidelity: "},
		{[]string{"--decls", decls, "extra"}, 2, "unexpected argument"},
		{[]string{"-h"}, 0, "Usage: codemode fidelity"},
	} {
		var out, errb bytes.Buffer
		code := runFidelity(tc.args, &out, &errb)
		if code != tc.code || !strings.Contains(errb.String(), tc.message) {
			t.Errorf("%v: exit %d, stderr %q; want %d containing %q", tc.args, code, errb.String(), tc.code, tc.message)
		}
	}
}
