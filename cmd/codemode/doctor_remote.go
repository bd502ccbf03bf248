package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"os"
	"strings"
	"time"

	"github.com/adk-codemode/codemode/backend/remote"
	"github.com/adk-codemode/codemode/transport"
)

// doctorRemote checks a remote sandbox server: health, auth, a round trip.
// egress is the allowlist the server must report (--egress).
func doctorRemote(url string, egress []string, stdout, stderr io.Writer) int {
	fail := func(step string, err error) int {
		fmt.Fprintf(stdout, "%s: FAILED\n", step)
		fmt.Fprintf(stderr, "\ncodemode doctor: %s: %v\n", step, err)
		return 1
	}
	b, err := remoteBackend(url, 1, egress)
	if err != nil {
		fmt.Fprintf(stderr, "codemode doctor: %v\n", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	fmt.Fprintf(stdout, "sandbox server: %s\n", strings.TrimPrefix(b.Name(), "remote:"))
	start := time.Now()
	if err := checkHealth(ctx, url); err != nil {
		return fail("health", err)
	}
	fmt.Fprintf(stdout, "health: ok (%s)\n", time.Since(start).Round(100*time.Microsecond))

	start = time.Now()
	s, err := b.Open(ctx, transport.SessionConfig{Tools: transport.ToolHandlerFunc(func(_ context.Context, c transport.ToolCall) transport.ToolResult {
		return transport.ToolResult{Value: c.Args["x"]}
	})})
	if err != nil {
		var he *remote.HandshakeError
		if errors.As(err, &he) && he.StatusCode == http.StatusUnauthorized {
			return fail("auth", fmt.Errorf("%w (is $%s the server's CODEMODE_SANDBOX_TOKEN?)", err, remoteTokenEnv))
		}
		var me *remote.EgressMismatchError
		if errors.As(err, &me) {
			return fail("egress", err)
		}
		return fail("session", err)
	}
	defer s.Close()
	mode := "a token signed from $" + remoteTokenEnv
	if os.Getenv(remoteTokenEnv) == "" {
		mode = "none ($" + remoteTokenEnv + " is unset; the server runs with --insecure-no-auth)"
	}
	fmt.Fprintf(stdout, "auth: ok, %s\n", mode)
	if len(egress) == 0 {
		fmt.Fprintln(stdout, "egress: the server reports no allowlist: with --jail its code has no network; without, the container's network is the platform's")
	} else {
		fmt.Fprintf(stdout, "egress: the server enforces the declared allowlist (%s) through its own proxy\n", strings.Join(egress, ", "))
	}
	env := s.Environment()
	fmt.Fprintf(stdout, "session ready in %s: Python %s, %d importable packages\n", time.Since(start).Round(100*time.Microsecond), env.PythonVersion, len(env.Packages))

	start = time.Now()
	r, err := s.Exec(ctx, transport.Block{Code: "from codemode_runtime import call\nprint(call('echo', {'x': 41}) + 1)", Timeout: 30 * time.Second})
	if err != nil {
		return fail("round trip", err)
	}
	if r.ExitCode != 0 || r.Stdout != "42\n" {
		return fail("round trip", fmt.Errorf("the block printed %q with exit code %d (stderr %q), want \"42\\n\"", r.Stdout, r.ExitCode, r.Stderr))
	}
	fmt.Fprintf(stdout, "round trip (a block with one tool call): ok (%s)\n", time.Since(start).Round(100*time.Microsecond))
	return 0
}

// checkHealth asks the server's /health over plain HTTP(S).
func checkHealth(ctx context.Context, raw string) error {
	if !strings.Contains(raw, "://") {
		raw = "https://" + raw
	}
	u, err := neturl.Parse(raw)
	if err != nil {
		return err
	}
	switch u.Scheme {
	case "ws":
		u.Scheme = "http"
	case "wss":
		u.Scheme = "https"
	}
	u.Path, u.RawQuery = "/health", ""
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("GET %s: %s %s", u.Redacted(), resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}
