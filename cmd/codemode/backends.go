package main

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/adk-codemode/codemode/backend/docker"
	"github.com/adk-codemode/codemode/backend/jail"
	"github.com/adk-codemode/codemode/backend/remote"
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
			// One session per command: a template's start would not be
			// repaid.
			return &jail.Backend{Config: jail.Config{Python: python}, Cold: true}
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
	names := []string{"remote", "docker"}
	for n := range backends {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// remoteTokenEnv names the variable that holds a remote sandbox's secret.
const remoteTokenEnv = "CODEMODE_REMOTE_TOKEN"

// newBackend returns the backend called name; url is for remote only,
// image for docker only. eg is the egress flags: the jail's and docker's
// policy, or for remote the list the server must enforce.
func newBackend(name, python, url, image string, eg *egressFlags) (transport.Backend, error) {
	policy, err := eg.policy()
	if err != nil {
		return nil, err
	}
	if policy != nil && name != "jail" && name != "remote" && name != "docker" {
		return nil, fmt.Errorf("--egress is not supported by the %s backend: use the jail or docker backend, or a remote sandbox server started with --jail --egress", name)
	}
	if image != "" && name != "docker" {
		return nil, fmt.Errorf("--image is for --backend docker, not %s", name)
	}
	if name == "docker" {
		if url != "" {
			return nil, errors.New("--url is for --backend remote; the docker backend finds its engine as the docker CLI does ($DOCKER_HOST, $DOCKER_CONTEXT, the current context)")
		}
		if python != "" {
			return nil, errors.New("--python is not for --backend docker: the image brings its interpreter (choose it with --image)")
		}
		return docker.New(docker.Config{Image: image, Egress: policy})
	}
	if name == "remote" {
		if url == "" {
			return nil, errors.New("--backend remote needs --url, the sandbox server's address")
		}
		if len(eg.addresses) > 0 {
			return nil, errors.New("--egress-allow-address is not for --backend remote: the sandbox server enforces its own (codemode-sandbox --egress-allow-address); --egress declares the hosts it allows")
		}
		return remoteBackend(url, 0, eg.allow)
	}
	if url != "" {
		return nil, fmt.Errorf("--url is for --backend remote, not %s", name)
	}
	b, ok := backends[name]
	if !ok {
		return nil, fmt.Errorf("unknown backend %q (choose one of: %s)", name, backendNames())
	}
	be := b.open(python)
	if j, ok := be.(*jail.Backend); ok {
		j.Egress = policy
	}
	return be, nil
}

// remoteBackend is a sandbox server at url, authenticated with tokens
// signed from $CODEMODE_REMOTE_TOKEN (without it, with none: for a server
// run with --insecure-no-auth). attempts of zero means the default;
// egress is the allowlist the server must report.
func remoteBackend(url string, attempts int, egress []string) (*remote.Backend, error) {
	cfg := remote.Config{URL: url, StartAttempts: attempts, Egress: egress}
	if secret := os.Getenv(remoteTokenEnv); secret != "" {
		cfg.Secret = []byte(secret)
	}
	return remote.New(cfg)
}
