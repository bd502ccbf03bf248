package docker_test

import (
	"testing"

	"github.com/adk-codemode/codemode/backend/docker"
	"github.com/adk-codemode/codemode/transport"
	"github.com/adk-codemode/codemode/transport/transporttest"
)

// TestSharedSuite holds the Docker backend to the contract every backend
// keeps, each session in a real container of the engine at DOCKER_HOST.
func TestSharedSuite(t *testing.T) {
	b := engine(t, docker.Config{})
	transporttest.Run(t, func(t *testing.T) transport.Backend { return b }, transporttest.Options{Isolated: true})
}
