//go:build linux

package unsandboxed_test

import (
	"testing"

	"github.com/adk-codemode/codemode/transport"
	"github.com/adk-codemode/codemode/transport/transporttest"
	"github.com/adk-codemode/codemode/transport/unsandboxed"
)

func TestBackend(t *testing.T) {
	transporttest.Run(t, func(t *testing.T) transport.Backend { return &unsandboxed.Backend{} }, transporttest.Options{})
}
