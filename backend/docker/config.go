package docker

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/adk-codemode/codemode/egress"
)

// DefaultImage is the image that `make image` builds.
const DefaultImage = "codemode-sandbox:latest"

// Config configures a [Backend]. Every limit has a default; the engine's
// view of each is read back after the container is created (see
// [Backend.Enforced]), and a session whose container did not get the limits
// asked for is refused.
type Config struct {
	// Image is the sandbox image. Empty means [DefaultImage].
	Image string
	// Host is the engine's address, for example unix:///run/podman.sock or
	// tcp://127.0.0.1:2376. Empty means what the docker CLI would use:
	// $DOCKER_HOST; else the docker CLI context named by $DOCKER_CONTEXT,
	// else by currentContext in $DOCKER_CONFIG/config.json (or
	// ~/.docker/config.json), whose docker endpoint and TLS material are
	// read from the CLI's context store; else (or for the context
	// "default") the platform's default socket (/var/run/docker.sock on
	// Linux and macOS). $DOCKER_API_VERSION applies, and without a context
	// $DOCKER_CERT_PATH and $DOCKER_TLS_VERIFY, as for the docker CLI.
	// [Backend.HostSource] says which was used.
	Host string
	// User runs the container's processes, as uid:gid. Empty means
	// "1000:1000", the image's sandbox user. Root ("0", "root") is refused.
	User string
	// MemoryBytes bounds the container's memory; swap is set equal, so the
	// container cannot swap. Zero means 1 GiB; negative means no bound.
	MemoryBytes int64
	// PidsLimit bounds the container's tasks (processes and threads). Zero
	// means 256; negative means no bound.
	PidsLimit int64
	// CPUs is the container's CPU quota in CPUs, for example 0.5. Zero
	// means no quota.
	CPUs float64
	// WorkspaceBytes, TmpBytes and ToolsBytes size the tmpfs mounts at
	// /workspace, /tmp and /tools. Zero means 1 GiB, 256 MiB and 64 MiB.
	WorkspaceBytes, TmpBytes, ToolsBytes int64
	// Runtime, if set, is the engine's OCI runtime for the container, for
	// example "runsc" for gVisor.
	Runtime string
	// Labels are added to each container's labels.
	Labels map[string]string
	// ReadyTimeout bounds the wait for the sandbox's ready frame after the
	// container starts. Zero means 60s.
	ReadyTimeout time.Duration
	// StopTimeout is how long a closing session waits for its container to
	// exit by itself before it is killed. Zero means 3s.
	StopTimeout time.Duration
	// MaxFilesBytes and MaxFiles bound the files sent at session start,
	// the tools package among them. Zero means 100 MiB and 10,000 files,
	// the server's defaults.
	MaxFilesBytes int64
	MaxFiles      int
	// Logger receives the sandbox's log frames and the clean-up of
	// containers left behind. Nil means slog.Default().
	Logger *slog.Logger
	// Egress, if set, lets code reach the hosts the policy allows through
	// a proxy on this host, one per session; nil means no network at all.
	// The container's network mode stays "none": the proxy listens on a
	// Unix socket in a private directory that the container mounts
	// read-only at /run/codemode-egress, the sandbox server relays the
	// code's connections to 127.0.0.1:3128 to it, and the code's
	// http_proxy and https_proxy variables name that port. It needs an
	// engine on this host, reached through its Unix socket; Open refuses
	// another.
	Egress *egress.Policy
}

// Defaults of [Config].
const (
	defaultUser      = "1000:1000"
	defaultMemory    = 1 << 30
	defaultPids      = 256
	defaultWorkspace = 1 << 30
	defaultTmp       = 256 << 20
	defaultTools     = 64 << 20
)

func (c *Config) setDefaults() error {
	if c.Image == "" {
		c.Image = DefaultImage
	}
	if c.User == "" {
		c.User = defaultUser
	}
	if isRoot(c.User) {
		return fmt.Errorf("docker: Config.User %q is root; the sandbox runs as an unprivileged user (leave it empty for %s)", c.User, defaultUser)
	}
	if c.MemoryBytes == 0 {
		c.MemoryBytes = defaultMemory
	}
	if c.MemoryBytes > 0 && c.MemoryBytes < 32<<20 {
		return fmt.Errorf("docker: Config.MemoryBytes %d is under 32 MiB, too little for Python and the server; set at least 33554432", c.MemoryBytes)
	}
	if c.PidsLimit == 0 {
		c.PidsLimit = defaultPids
	}
	if c.PidsLimit > 0 && c.PidsLimit < 16 {
		return fmt.Errorf("docker: Config.PidsLimit %d is under 16, too few for the server's threads and the worker; set at least 16", c.PidsLimit)
	}
	if c.CPUs < 0 {
		return fmt.Errorf("docker: Config.CPUs %g is negative; set a quota such as 0.5, or zero for none", c.CPUs)
	}
	for _, s := range []struct {
		v    *int64
		def  int64
		name string
	}{{&c.WorkspaceBytes, defaultWorkspace, "WorkspaceBytes"}, {&c.TmpBytes, defaultTmp, "TmpBytes"}, {&c.ToolsBytes, defaultTools, "ToolsBytes"}} {
		if *s.v == 0 {
			*s.v = s.def
		}
		if *s.v < 1<<20 {
			return fmt.Errorf("docker: Config.%s %d is under 1 MiB; set a size in bytes, or zero for the default", s.name, *s.v)
		}
	}
	if c.ReadyTimeout <= 0 {
		c.ReadyTimeout = 60 * time.Second
	}
	if c.StopTimeout <= 0 {
		c.StopTimeout = 3 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	for k := range c.Labels {
		if k == labelSandbox || k == labelOwner {
			return fmt.Errorf("docker: Config.Labels sets %s, which the backend owns", k)
		}
	}
	return nil
}

// isRoot reports whether a uid[:gid] or user name is root.
func isRoot(user string) bool {
	u := user
	for i := 0; i < len(u); i++ {
		if u[i] == ':' {
			u = u[:i]
			break
		}
	}
	return u == "0" || u == "root" || u == ""
}
