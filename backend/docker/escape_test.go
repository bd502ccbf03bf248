package docker_test

import (
	"testing"

	"github.com/adk-codemode/codemode/backend/docker"
	"github.com/adk-codemode/codemode/internal/testsupport/escapeprobe"
	"github.com/adk-codemode/codemode/transport"
)

// TestEscapeProbes runs the escape-probe suite in a container of the
// engine at DOCKER_HOST.
func TestEscapeProbes(t *testing.T) {
	b := engine(t, docker.Config{})
	escapeprobe.Run(t, func(t *testing.T) transport.Session { return open(t, b) })
}
