//go:build linux

package unsandboxed_test

import (
	"testing"

	"github.com/adk-codemode/codemode/backend/unsandboxed"
	"github.com/adk-codemode/codemode/transport"
	"github.com/adk-codemode/codemode/transport/transporttest"
)

func TestBackend(t *testing.T) {
	transporttest.Run(t, func(t *testing.T) transport.Backend { return &unsandboxed.Backend{} }, transporttest.Options{})
}
