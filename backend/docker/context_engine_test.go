package docker_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/backend/docker"
	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
	"github.com/adk-codemode/codemode/transport"
)

// TestContextReachesEngine finds the engine through a docker CLI context
// (the current one of a config directory, as `docker context use` leaves
// it) whose endpoint is the engine of DOCKER_HOST, with DOCKER_HOST unset,
// and runs a session through it.
func TestContextReachesEngine(t *testing.T) {
	engine(t, docker.Config{}) // the engine of DOCKER_HOST is there, or skip
	host := os.Getenv("DOCKER_HOST")
	if host == "" || os.Getenv("DOCKER_CERT_PATH") != "" {
		hostcap.Missing(t, hostcap.Docker, "this test copies a plain DOCKER_HOST (no DOCKER_CERT_PATH) into a docker context; set DOCKER_HOST to the engine's socket")
	}
	dir := t.TempDir()
	const name = "codemode-test"
	sum := sha256.Sum256([]byte(name))
	meta, _ := json.Marshal(map[string]any{
		"Name": name, "Metadata": map[string]any{},
		"Endpoints": map[string]any{"docker": map[string]any{"Host": host, "SkipTLSVerify": false}},
	})
	metaDir := filepath.Join(dir, "contexts", "meta", hex.EncodeToString(sum[:]))
	if err := os.MkdirAll(metaDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(metaDir, "meta.json"), meta, 0o600); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "config.json")
	if err := os.WriteFile(config, []byte(`{"currentContext": "`+name+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_HOST", "")
	t.Setenv("DOCKER_CONTEXT", "")
	t.Setenv("DOCKER_CONFIG", dir)

	b, err := docker.New(docker.Config{Image: os.Getenv(imageEnv)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Close() }()
	wantSource := `context "` + name + `" (currentContext in ` + config + `)`
	if b.Host() != host || b.HostSource() != wantSource {
		t.Fatalf("the backend uses %s from %s; want %s from %s", b.Host(), b.HostSource(), host, wantSource)
	}
	e, err := b.Enforced(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if e.Host != host || e.HostSource != wantSource {
		t.Fatalf("Enforced reports %s from %s", e.Host, e.HostSource)
	}
	s, err := b.Open(t.Context(), transport.SessionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	r, err := s.Exec(t.Context(), transport.Block{Code: "print('through the context')", Timeout: 60 * time.Second})
	if err != nil || strings.TrimSpace(r.Stdout) != "through the context" {
		t.Fatalf("%v %+v", err, r)
	}

	// A context that names no stored context fails with what to do.
	t.Setenv("DOCKER_CONTEXT", "codemode-missing")
	if _, err := docker.New(docker.Config{}); err == nil || !strings.Contains(err.Error(), "docker context create codemode-missing") {
		t.Fatalf("a missing context: %v", err)
	}
}
