package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/adk-codemode/codemode/internal/both/clip"
)

// Probe is what a backend learns about an interpreter once, outside any
// sandbox, so that each sandbox's worker starts faster: the sys.path that
// the site module builds, and the runner compiled to bytecode.
type Probe struct {
	// SysPath is sys.path as python -I builds it (without user
	// site-packages and PYTHON* variables).
	SysPath []string
	// Version is the interpreter's sys.version; the worker uses Code only
	// if its own sys.version is the same.
	Version string
	// Code is the runner compiled by this interpreter, in marshal format.
	Code []byte
}

// Apply sets the probe's findings in cfg.
func (p *Probe) Apply(cfg *Config) {
	cfg.SysPath = p.SysPath
	cfg.RunnerVersion = p.Version
	cfg.RunnerCode = p.Code
}

type probeKey struct {
	python string
	mtime  time.Time
	size   int64
}

var probes sync.Map // probeKey → *Probe

// probeScript prints sys.path, sys.version and the runner (read from
// stdin) compiled under the same file name that -c gives, so tracebacks
// look the same either way.
const probeScript = `import base64, json, marshal, sys
code = compile(sys.stdin.read(), "<string>", "exec")
print(json.dumps({"sys_path": sys.path, "version": sys.version,
                  "code": base64.b64encode(marshal.dumps(code)).decode()}))
`

// ProbeInterpreter runs python once per process and binary (keyed by path,
// size and modification time) to learn what [Probe] holds. The
// interpreter must see the same paths inside the sandbox, which holds for
// the jail (the prefix is mounted at the same path) and for the
// unsandboxed backend.
func ProbeInterpreter(ctx context.Context, python string) (*Probe, error) {
	st, err := os.Stat(python)
	if err != nil {
		return nil, err
	}
	key := probeKey{python, st.ModTime(), st.Size()}
	if v, ok := probes.Load(key); ok {
		return v.(*Probe), nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-I", "-B", "-c", probeScript)
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"}
	cmd.Stdin = strings.NewReader(RunnerSource())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("sandboxserver: %s does not run as Python 3 (probing it: %w: %s); set the interpreter to python3's path",
			python, err, clip.String(stderr.String(), 400))
	}
	var r struct {
		SysPath []string `json:"sys_path"`
		Version string   `json:"version"`
		Code    []byte   `json:"code"`
	}
	if err := json.Unmarshal(out, &r); err != nil || len(r.SysPath) == 0 || r.Version == "" || len(r.Code) == 0 {
		return nil, fmt.Errorf("sandboxserver: %s does not run as Python 3 (probing it printed %q, not the report Python prints); set the interpreter to python3's path",
			python, clip.String(string(out), 200))
	}
	p := &Probe{SysPath: r.SysPath, Version: r.Version, Code: r.Code}
	probes.Store(key, p)
	return p, nil
}
