package supervisor

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/adk-codemode/codemode/internal/both/egressrelay"
)

// Stage is the argv[0] under which the sandbox program (internal/host/sandboxbin)
// runs the supervisor ([Run]): argv[1] is the JSON encoding of a [Config]
// and fd 3 the host's socket.
const Stage = "codemode-supervisor"

// Config configures a session's server (package internal/both/server, whose
// Config it is) and the supervisor, which decodes it from its argv; the
// public sandboxserver.Config is the part a sandbox server's user sets.
type Config struct {
	// Python is the interpreter to run. Required.
	Python string `json:"python"`
	// Workdir is the worker's working directory, whose new and changed
	// files are reported after each block. Required.
	Workdir string `json:"workdir"`
	// FilesDir, if set, is put first on sys.path (the generated tools
	// package lives there).
	FilesDir string `json:"files_dir,omitempty"`
	// Env is the worker's environment. The runner removes everything that
	// is not on its allowlist before user code runs.
	Env []string `json:"env,omitempty"`
	// MaxOutputBytes is the default bound per stream and block; a run frame
	// may set another. Zero means 4 MiB, which is also the most a run
	// frame may ask for: even escaped as JSON, the output of both streams
	// then fits in one frame.
	MaxOutputBytes int64 `json:"max_output_bytes,omitempty"`
	// MaxFileBytes bounds a file sent with get_file. Zero means 32 MiB.
	MaxFileBytes int64 `json:"max_file_bytes,omitempty"`
	// MaxFiles bounds the workspace entries examined after a block. Zero
	// means 100,000.
	MaxFiles int `json:"max_files,omitempty"`
	// SysPath, if set, is the interpreter's sys.path as the site module
	// builds it (see internal/both/server's ProbeInterpreter). The worker then
	// starts without site, which is much faster; the builtins that site
	// adds (exit, quit, help, ...) are still there. The .pth files' import
	// lines are not run.
	SysPath []string `json:"sys_path,omitempty"`
	// RunnerCode, if set, is the runner compiled to marshal format by an
	// interpreter whose sys.version is RunnerVersion (see internal/both/server's
	// ProbeInterpreter). A worker whose interpreter reports the same
	// version runs it instead of compiling the runner's source, which
	// saves a good part of its start-up; any other compiles the source.
	RunnerCode    []byte `json:"runner_code,omitempty"`
	RunnerVersion string `json:"runner_version,omitempty"`
	// WorkerAddressSpace, if positive, is the RLIMIT_AS of the Python
	// worker, set before it reads its first block.
	WorkerAddressSpace int64 `json:"worker_address_space,omitempty"`
	// WorkerProcesses, if positive, is the RLIMIT_NPROC of the Python
	// worker. Set it below the sandbox's own task limit so that a fork
	// bomb in the code leaves the server the threads it needs.
	WorkerProcesses int64 `json:"worker_processes,omitempty"`
	// StartTimeout bounds the worker's start. Zero means 30s.
	StartTimeout time.Duration `json:"start_timeout,omitempty"`
	// Adopt, if set, is a worker already running as a child of the
	// supervisor's process, which [Run] takes for its first instead of
	// starting one: a jailed session forked from a template forks its
	// first worker from the template's loaded runner, sends the host the
	// "spawned" message with the worker's pipes itself, and then execs the
	// supervisor, which keeps the child. [Run] then reaps, signals and
	// kills it as a worker it started, and reports its exit.
	Adopt *Adopted `json:"adopt,omitempty"`
	// EgressFD, if positive, is the descriptor of the connector to the
	// host's egress proxy: a SOCK_SEQPACKET Unix socket over which the
	// supervisor passes the host one descriptor a message, a stream
	// socket for each connection the code opens to the proxy port. Zero
	// means the sandbox has no egress.
	EgressFD int `json:"egress_fd,omitempty"`
	// EgressPort is the port on 127.0.0.1 on which the supervisor takes
	// the code's proxy connections. Zero means [DefaultEgressPort].
	EgressPort int `json:"egress_port,omitempty"`
	// EgressListenFD, if positive, is a socket already listening on the
	// proxy port, which the supervisor takes instead of listening itself
	// (a forked session listens before its first worker starts).
	EgressListenFD int `json:"egress_listen_fd,omitempty"`
	// EgressSocket, if set, is the path of a Unix stream socket on which
	// the host's egress proxy serves one client a connection (the Docker
	// backend bind-mounts it into the container): a server that runs the
	// session itself (internal/both/server's Serve) listens on
	// 127.0.0.1:EgressPort before the first worker starts and connects to
	// it for each connection the code opens there. The jail uses EgressFD.
	EgressSocket string `json:"egress_socket,omitempty"`
}

// Adopted is a worker that [Run] adopts (Config.Adopt).
type Adopted struct {
	// Pid is the worker's pid, a child of the supervisor's process.
	Pid int `json:"pid"`
}

// SetDefaults checks the required fields and fills the zero ones.
func (c *Config) SetDefaults() error {
	if c.Python == "" || c.Workdir == "" {
		return errors.New("sandboxserver: Config.Python and Config.Workdir are required")
	}
	if c.MaxOutputBytes <= 0 || c.MaxOutputBytes > MaxOutputBytes {
		c.MaxOutputBytes = MaxOutputBytes
	}
	if c.MaxFileBytes <= 0 {
		c.MaxFileBytes = 32 << 20
	}
	if c.MaxFiles <= 0 {
		c.MaxFiles = 100_000
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = 30 * time.Second
	}
	if c.EgressPort <= 0 || c.EgressPort > 65535 {
		c.EgressPort = DefaultEgressPort
	}
	return nil
}

// DefaultEgressPort is the loopback port on which the supervisor takes the
// code's proxy connections when Config.EgressPort is zero.
const DefaultEgressPort = egressrelay.DefaultPort

// MaxEgressConns bounds the proxy connections the supervisor relays at
// once. A connection accepted beyond them waits EgressSlotWait for one to
// end (connections the code has just closed are still winding down through
// the host), then is closed.
const MaxEgressConns = egressrelay.DefaultMaxConns

// EgressSlotWait is how long a connection past MaxEgressConns waits for a
// slot before the supervisor closes it.
const EgressSlotWait = egressrelay.DefaultSlotWait

// MaxOutputBytes is the default and largest bound on what is kept of each
// output stream per block: even escaped as JSON, the output of both streams
// then fits in one frame.
const MaxOutputBytes = 4 << 20

// Args returns the argv that starts the supervisor with cfg in a
// re-executed binary: argv[0] is [Stage].
func Args(cfg Config) ([]string, error) {
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	return []string{Stage, string(b)}, nil
}
