package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/adk-codemode/codemode/backend/jail"
	"github.com/adk-codemode/codemode/backend/unsandboxed"
	"github.com/adk-codemode/codemode/transport"
)

// backendInfo describes a backend the CLI can use.
type backendInfo struct {
	summary string
	open    func(python string) transport.Backend
}

var backends = map[string]backendInfo{
	"jail": {
		summary: "daemonless Linux namespace jail (default)",
		open: func(python string) transport.Backend {
			return &jail.Backend{Config: jail.Config{Python: python}}
		},
	},
	"unsandboxed": {
		summary: "plain child process, NO isolation: development only",
		open: func(python string) transport.Backend {
			return &unsandboxed.Backend{Python: python}
		},
	},
}

const defaultBackend = "jail"

func backendNames() string {
	names := make([]string, 0, len(backends))
	for n := range backends {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func newBackend(name, python string) (transport.Backend, error) {
	b, ok := backends[name]
	if !ok {
		return nil, fmt.Errorf("unknown backend %q (choose one of: %s)", name, backendNames())
	}
	return b.open(python), nil
}
