//go:build linux

package server

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/adk-codemode/codemode/internal/protocol/wire"
	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
	"github.com/adk-codemode/codemode/transport"
)

const testPython = "/usr/bin/python3"

func needPython(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(testPython); err != nil {
		hostcap.Missing(t, hostcap.Python, err)
	}
}

// TestServeWithProbe runs blocks in a server whose worker starts from the
// probed, compiled runner, including a traceback, which must point at the
// block's own lines as the source-compiled runner's does.
func TestServeWithProbe(t *testing.T) {
	needPython(t)
	p, err := ProbeInterpreter(t.Context(), testPython)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.SysPath) == 0 || len(p.Code) == 0 || p.Version == "" {
		t.Fatalf("probe: %+v", p)
	}
	var stderrs []string
	for _, probed := range []bool{true, false} {
		host, sb, err := SocketPair()
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{Python: testPython, Workdir: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin"}}
		if probed {
			p.Apply(&cfg)
		}
		done := make(chan error, 1)
		go func() { done <- Serve(context.Background(), wire.NewConn(sb, sb, sb, 0), cfg); sb.Close() }()
		s, err := wire.NewClient(t.Context(), wire.NewConn(host, host, host, 0), transport.SessionConfig{}, wire.ClientOptions{})
		if err != nil {
			t.Fatal(err)
		}
		r, err := s.Exec(t.Context(), transport.Block{Code: "x = 1\nprint(x)\n1/0\n"})
		if err != nil {
			t.Fatal(err)
		}
		if r.Stdout != "1\n" || r.ExitCode != 1 ||
			!strings.HasPrefix(r.Stderr, "Traceback (most recent call last):\n  File \"<code-mode>\", line 3, in <module>\n    1/0\n") ||
			!strings.HasSuffix(r.Stderr, "ZeroDivisionError: division by zero\n") {
			t.Errorf("probed=%v: %+v", probed, r)
		}
		stderrs = append(stderrs, r.Stderr)
		s.Close()
		if err := <-done; err != nil {
			t.Errorf("probed=%v: Serve: %v", probed, err)
		}
	}
	if stderrs[0] != stderrs[1] {
		t.Errorf("tracebacks differ:\n%s\n%s", stderrs[0], stderrs[1])
	}
}
