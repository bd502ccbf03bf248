package remote_test

import (
	"strings"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/backend/remote"
	"github.com/adk-codemode/codemode/internal/escapeprobe"
	"github.com/adk-codemode/codemode/internal/hostcap"
	"github.com/adk-codemode/codemode/transport"
	"github.com/adk-codemode/codemode/transport/transporttest"
)

// needJail ends the test where this host cannot build the namespace jail
// (see hostcap.Missing), which a server started with --jail checks and
// says before it listens.
func needJail(t *testing.T) {
	t.Helper()
	s, err := launch(tempDir(t), nil, "--jail")
	if err != nil {
		if strings.Contains(err.Error(), "cannot run here") {
			hostcap.Missing(t, hostcap.UserNS, err)
		}
		t.Fatal(err)
	}
	s.stop()
}

// TestSharedSuiteJailed: with --jail the server runs each session's worker
// in the namespace jail, and the remote backend keeps the contract of an
// isolated backend.
func TestSharedSuiteJailed(t *testing.T) {
	needJail(t)
	transporttest.Run(t, func(t *testing.T) transport.Backend {
		return newBackend(t, remote.Config{Provision: provisioner(t, "--jail"), Secret: testSecret})
	}, transporttest.Options{Isolated: true})
}

// TestJailedServerReports: a jailed session's worker runs in a pid
// namespace of its own, whose pid 1 is the jail's init (the supervisor),
// and the server logs what the jail enforces.
func TestJailedServerReports(t *testing.T) {
	needJail(t)
	s := startServer(t, nil, "--jail")
	b := newBackend(t, remote.Config{URL: s.URL(), Secret: testSecret})
	sess, err := b.Open(t.Context(), transport.SessionConfig{})
	if err != nil {
		t.Fatalf("Open: %v\n%s", err, s.stderr())
	}
	defer sess.Close()
	r, err := sess.Exec(t.Context(), transport.Block{Code: "print(open('/proc/1/cmdline', 'rb').read().split(b'\\0')[0].decode())", Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if r.Stdout != "codemode-jail-init\n" {
		t.Errorf("pid 1 of the worker's pid namespace is %q: want the jail's init", r.Stdout)
	}
	if log := s.stderr(); !strings.Contains(log, "runs in a namespace jail") || !strings.Contains(log, `pid ns:        yes`) {
		t.Errorf("the server's log does not say what the jail enforces:\n%s", log)
	}
}

// TestEscapeProbesJailed runs the escape-probe suite in a session of a
// server that jails its sessions.
func TestEscapeProbesJailed(t *testing.T) {
	needJail(t)
	b := newBackend(t, remote.Config{Provision: provisioner(t, "--jail"), Secret: testSecret})
	escapeprobe.Run(t, func(t *testing.T) transport.Session {
		s, err := b.Open(t.Context(), transport.SessionConfig{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
