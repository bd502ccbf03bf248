package sandboxserver

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"time"
)

type sysPathKey struct {
	python string
	mtime  time.Time
	size   int64
}

var sysPaths sync.Map // sysPathKey → []string

// ProbeSysPath returns the sys.path that python builds at start-up (with
// -I, so without user site-packages and PYTHON* variables), running the
// interpreter once per process and binary. Backends pass it in
// [Config.SysPath] so that each sandbox's worker can skip the site
// module. The interpreter must see the same paths inside the sandbox,
// which holds for the jail (the prefix is mounted at the same path) and
// for the unsandboxed backend.
func ProbeSysPath(ctx context.Context, python string) ([]string, error) {
	st, err := os.Stat(python)
	if err != nil {
		return nil, err
	}
	key := sysPathKey{python, st.ModTime(), st.Size()}
	if v, ok := sysPaths.Load(key); ok {
		return v.([]string), nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-I", "-c", "import json, sys; print(json.dumps(sys.path))")
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"}
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("sandboxserver: probe sys.path of %s: %w", python, err)
	}
	var path []string
	if err := json.Unmarshal(out, &path); err != nil || len(path) == 0 {
		return nil, fmt.Errorf("sandboxserver: probe sys.path of %s: unexpected output %q", python, truncate(string(out), 200))
	}
	sysPaths.Store(key, path)
	return path, nil
}
