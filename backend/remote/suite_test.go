package remote_test

import (
	"testing"

	"github.com/adk-codemode/codemode/backend/remote"
	"github.com/adk-codemode/codemode/transport"
	"github.com/adk-codemode/codemode/transport/transporttest"
)

// TestSharedSuite holds the remote backend to the contract every backend
// keeps, each session with a real server process on 127.0.0.1.
func TestSharedSuite(t *testing.T) {
	transporttest.Run(t, func(t *testing.T) transport.Backend {
		return newBackend(t, remote.Config{Provision: provisioner(t), Secret: testSecret})
	}, transporttest.Options{})
}
