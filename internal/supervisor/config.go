package supervisor

import (
	"encoding/json"
	"errors"
	"time"
)

// Stage is the argv[0] under which a program that imports this package runs
// the supervisor ([Run]) instead of its own main: argv[1] is the JSON
// encoding of a [Config] and fd 3 the host's socket.
const Stage = "codemode-supervisor"

// Config is sandboxserver.Config, which documents its fields, as the
// supervisor decodes it. The two must keep the same fields, in the same
// order, with the same JSON names: sandboxserver converts one into the
// other.
type Config struct {
	Python             string        `json:"python"`
	Workdir            string        `json:"workdir"`
	FilesDir           string        `json:"files_dir,omitempty"`
	Env                []string      `json:"env,omitempty"`
	MaxOutputBytes     int64         `json:"max_output_bytes,omitempty"`
	MaxFileBytes       int64         `json:"max_file_bytes,omitempty"`
	MaxFiles           int           `json:"max_files,omitempty"`
	SysPath            []string      `json:"sys_path,omitempty"`
	RunnerCode         []byte        `json:"runner_code,omitempty"`
	RunnerVersion      string        `json:"runner_version,omitempty"`
	WorkerAddressSpace int64         `json:"worker_address_space,omitempty"`
	WorkerProcesses    int64         `json:"worker_processes,omitempty"`
	StartTimeout       time.Duration `json:"start_timeout,omitempty"`
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
	return nil
}

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
