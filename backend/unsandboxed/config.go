package unsandboxed

import (
	"os"
	"os/exec"

	"github.com/adk-codemode/codemode/transport"
)

// Backend starts unsandboxed sessions. The zero value uses the host's
// python3.
type Backend struct {
	// Python is the interpreter; empty means /usr/bin/python3 if present,
	// else python3 from PATH.
	Python string
	// MaxOutputBytes bounds each output stream per block; zero means the
	// server default.
	MaxOutputBytes int64
}

var _ transport.Backend = (*Backend)(nil)

// Name identifies the backend and its interpreter.
func (b *Backend) Name() string { return "unsandboxed:" + b.python() }

// DescribeNetwork says that code reaches whatever the host reaches: this
// backend is no sandbox ([transport.NetworkDescriber]).
func (b *Backend) DescribeNetwork() string {
	return "the host's own: this development backend is not a sandbox, so the code reaches whatever the host reaches"
}

func (b *Backend) python() string {
	if b.Python != "" {
		return b.Python
	}
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		return "/usr/bin/python3"
	}
	if p, err := exec.LookPath("python3"); err == nil {
		return p
	}
	return "python3"
}
