package sandboxserver

import (
	"time"

	"github.com/adk-codemode/codemode/internal/supervisor"
)

// SupervisorStage is the argv[0] under which a program that imports this
// package runs the supervisor instead of its own main: argv[1] is the JSON
// encoding of a [Config] and fd 3 the host's socket.
const SupervisorStage = supervisor.Stage

// Config configures [Serve].
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
	// builds it (see [ProbeInterpreter]). The worker then starts without
	// site, which is much faster; the builtins that site adds (exit,
	// quit, help, ...) are still there. The .pth files' import lines are
	// not run.
	SysPath []string `json:"sys_path,omitempty"`
	// RunnerCode, if set, is the runner compiled to marshal format by an
	// interpreter whose sys.version is RunnerVersion (see
	// [ProbeInterpreter]). A worker whose interpreter reports the same
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
}

// The supervisor decodes its own copy of Config (package
// internal/supervisor, which the jail's init stage imports without this
// package's dependencies). The conversions between the two fail to compile
// if their fields differ; TestConfigMatchesSupervisor holds their JSON
// names together.

// sup is c as the supervisor takes it.
func (c *Config) sup() *supervisor.Config {
	s := supervisor.Config(*c)
	return &s
}

func (c *Config) setDefaults() error {
	s := c.sup()
	err := s.SetDefaults()
	*c = Config(*s)
	return err
}

// maxOutputBytes is the default and largest bound on what is kept of each
// output stream per block.
const maxOutputBytes = supervisor.MaxOutputBytes

// supervisorArgs returns the argv that starts the supervisor with cfg in a
// re-executed binary: argv[0] is [SupervisorStage].
func supervisorArgs(cfg Config) ([]string, error) { return supervisor.Args(*cfg.sup()) }
