package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
)

// TestEgressSocketRefusals: --egress-socket is for a server on
// stdin/stdout that runs its session itself; with --listen or --jail it
// is refused, saying why, before anything is served.
func TestEgressSocketRefusals(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		hostcap.Missing(t, hostcap.Python, err)
	}
	for _, extra := range [][]string{
		{"--jail"},
		{"--listen", "127.0.0.1:0", "--insecure-no-auth"},
		{"--listen", "127.0.0.1:0", "--insecure-no-auth", "--jail"},
	} {
		args := append([]string{"--egress-socket", "/run/codemode-egress/proxy.sock", "--python", "/usr/bin/python3", "--workdir", t.TempDir()}, extra...)
		var stdout, stderr bytes.Buffer
		code := run(args, strings.NewReader(""), &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), "--egress-socket is for stdin/stdout without --jail") {
			t.Errorf("%v: exit %d, stderr %q: want 2 and the reason", extra, code, stderr.String())
		}
	}
}
