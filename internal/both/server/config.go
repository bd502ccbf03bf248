package server

import "github.com/adk-codemode/codemode/internal/sandbox/supervisor"

// SupervisorStage is the argv[0] under which the sandbox program
// (internal/host/sandboxbin) runs the supervisor: argv[1] is the JSON encoding
// of a [Config] and fd 3 the host's socket.
const SupervisorStage = supervisor.Stage

// DefaultEgressPort and MaxEgressConns are the supervisor's: the loopback
// port of the egress proxy in a sandbox, and the most connections to it
// relayed at once.
const (
	DefaultEgressPort = supervisor.DefaultEgressPort
	MaxEgressConns    = supervisor.MaxEgressConns
)

// Config configures a session's server and its supervisor, which
// documents its fields. It is the supervisor's own type, which the jail's
// init stage decodes without this package's dependencies.
type Config = supervisor.Config

// maxOutputBytes is the default and largest bound on what is kept of each
// output stream per block.
const maxOutputBytes = supervisor.MaxOutputBytes

// MemoryCounter reports how many processes the sandbox's memory limit has
// killed so far (the kernel's OOM killer in its memory cgroup) and the
// limit in bytes (0 if unknown). ok is false when it cannot tell.
type MemoryCounter func() (kills int, limit int64, ok bool)
