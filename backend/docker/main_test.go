package docker_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/backend/docker"
)

// requireEnv turns a missing engine into a failure (CI sets it).
const requireEnv = "CODEMODE_REQUIRE_DOCKER"

// imageEnv names another image to test instead of docker.DefaultImage.
const imageEnv = "CODEMODE_DOCKER_IMAGE"

// engine returns a backend with cfg on the engine of DOCKER_HOST and the
// image `make image` builds, or skips the test, saying how to run it,
// when there is none.
func engine(t testing.TB, cfg docker.Config) *docker.Backend {
	t.Helper()
	if cfg.Image == "" {
		cfg.Image = os.Getenv(imageEnv)
	}
	b, err := docker.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := b.Enforced(ctx); err != nil {
		msg := "no Docker engine with the sandbox image: " + err.Error() +
			"\nto run these tests, start an engine (Docker, or `podman system service --time 0 unix:///run/podman.sock`), " +
			"set DOCKER_HOST to its socket and run `make image`; CI sets " + requireEnv + "=1 to fail instead of skipping"
		if os.Getenv(requireEnv) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return b
}
