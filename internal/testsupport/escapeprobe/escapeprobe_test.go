package escapeprobe

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
	"github.com/adk-codemode/codemode/transport"
)

// plainProcess is a session with no sandbox at all: each block is a
// python3 process of the host's.
type plainProcess struct{ python string }

func (p plainProcess) Environment() transport.Environment { return transport.Environment{} }

func (p plainProcess) Exec(ctx context.Context, b transport.Block) (*transport.Result, error) {
	cmd := exec.CommandContext(ctx, p.python, "-c", b.Code)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := &transport.Result{Stdout: stdout.String(), Stderr: stderr.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.ExitCode, err = ee.ExitCode(), nil
	}
	return r, err
}

func (p plainProcess) ReadFile(context.Context, string) ([]byte, error) { return nil, os.ErrNotExist }
func (p plainProcess) Close() error                                     { return nil }

// TestProbesFindHoles runs probes in a plain process, which contains
// nothing: they find their holes there, so a sandbox that passes them is
// not passing by accident. Only probes that change nothing on the host
// run here (never the ones that mount, unshare, trace or make nodes).
func TestProbesFindHoles(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		hostcap.Missing(t, hostcap.Python, err)
	}
	p := plantOnHost(t)
	names := []string{"host-objects-through-proc", "host-loopback", "host-environment", "privileges"}
	if os.Geteuid() == 0 {
		names = append(names, "raw-and-packet-sockets")
	}
	for _, name := range names {
		i := slices.IndexFunc(Probes, func(p Probe) bool { return p.Name == name })
		res, err := try(plainProcess{python}, p, Probes[i])
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Holes) == 0 || res.Checked == 0 {
			t.Errorf("%s: no hole found in a plain process (checked %d)", name, res.Checked)
		}
		t.Logf("%s: %d checked, %d holes", name, res.Checked, len(res.Holes))
	}
}

// TestEveryProbeStatesContainment: a probe says what it holds the sandbox
// to, and names are unique, since they name subtests.
func TestEveryProbeStatesContainment(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range Probes {
		if p.Name == "" || p.Containment == "" || strings.TrimSpace(p.Code) == "" || seen[p.Name] {
			t.Errorf("probe %q: a name of its own, a containment and code are needed", p.Name)
		}
		seen[p.Name] = true
	}
}
