package docker_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/backend/docker"
	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
)

// imageEnv names another image to test instead of docker.DefaultImage.
const imageEnv = "CODEMODE_DOCKER_IMAGE"

// engine returns a backend with cfg on the engine of DOCKER_HOST and the
// image `make image` builds; where there is none, it skips the test, saying
// how to run it, or fails it under CODEMODE_REQUIRE_ALL=1 or
// CODEMODE_REQUIRE_DOCKER=1 (see hostcap).
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
		hostcap.Missing(t, hostcap.Docker, err)
	}
	return b
}
