package jail_test

import (
	"testing"

	"github.com/adk-codemode/codemode/transport"
	"github.com/adk-codemode/codemode/transport/jail"
	"github.com/adk-codemode/codemode/transport/transporttest"
)

func TestBackend(t *testing.T) {
	transporttest.Run(t, func(t *testing.T) transport.Backend { return &jail.Backend{} }, transporttest.Options{Isolated: true})
}
