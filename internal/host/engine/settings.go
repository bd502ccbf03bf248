package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/adk-codemode/codemode/egress"
	"github.com/adk-codemode/codemode/transport"
)

// Settings are the plugin Config's durations, numbers, egress policy and
// backend, which Validate checks.
type Settings struct {
	Timeout, Grace, ToolTimeout, IdleTimeout, ApprovalTimeout time.Duration
	MaxOutputChars, BlockBudget                               int
	Egress                                                    *egress.Policy
	Backend                                                   transport.Backend
}

// Validate reports the first setting that cannot be meant, naming the
// Config field and what to write instead: zero always means the default,
// and the fields documented to take a negative value take it; any other
// negative value is refused, and so is a duration under a millisecond,
// since a bare number is nanoseconds (Timeout: 30 is 30ns).
func (cfg Settings) Validate() error {
	for _, d := range []struct {
		name     string
		v        time.Duration
		negative bool // a negative value has a meaning
	}{
		{"Timeout", cfg.Timeout, true},
		{"Grace", cfg.Grace, false},
		{"ToolTimeout", cfg.ToolTimeout, false},
		{"IdleTimeout", cfg.IdleTimeout, false},
		{"ApprovalTimeout", cfg.ApprovalTimeout, false},
	} {
		switch {
		case d.v < 0 && !d.negative:
			return fmt.Errorf("codemode: Config.%s is %v: it cannot be negative; leave it 0 for the default", d.name, d.v)
		case d.v > 0 && d.v < time.Millisecond:
			return fmt.Errorf("codemode: Config.%s is %v, under a millisecond: a duration is in nanoseconds, so write it with its unit, such as 30 * time.Second", d.name, d.v)
		}
	}
	for _, n := range []struct {
		name string
		v    int
	}{
		{"MaxOutputChars", cfg.MaxOutputChars},
		{"BlockBudget", cfg.BlockBudget},
	} {
		if n.v < 0 {
			return fmt.Errorf("codemode: Config.%s is %d: it cannot be negative; leave it 0 for the default", n.name, n.v)
		}
	}
	if cfg.Egress != nil {
		if _, err := egress.New(*cfg.Egress); err != nil {
			return fmt.Errorf("codemode: Config.Egress: %w", err)
		}
	}
	if cfg.Egress != nil && cfg.Backend != nil {
		return fmt.Errorf("codemode: Config.Egress applies to the default backend only, and Config.Backend (%s) is set: "+
			"give the policy to that backend (jail.Backend's Egress) and leave Config.Egress nil", cfg.Backend.Name())
	}
	if v, ok := cfg.Backend.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return fmt.Errorf("codemode: Config.Backend (%s): %w", cfg.Backend.Name(), err)
		}
	}
	return nil
}

// CheckBackend opens a session of b, runs a block printing Python's major
// version in it, and closes it: the plugin's Check.
func CheckBackend(ctx context.Context, b transport.Backend) error {
	s, err := b.Open(ctx, transport.SessionConfig{})
	if err != nil {
		return fmt.Errorf("codemode: %s: the sandbox did not start: %w", b.Name(), err)
	}
	res, err := s.Exec(ctx, transport.Block{Code: "import sys\nprint(sys.version_info[0])", Timeout: ProbeTimeout})
	cerr := s.Close()
	switch {
	case err != nil:
		return fmt.Errorf("codemode: %s: the sandbox started but did not run Python: %w", b.Name(), err)
	case res.ExitCode != 0 || res.Stdout != "3\n":
		return fmt.Errorf("codemode: %s: the sandbox started but a block printing Python's major version gave exit code %d, %q on stdout and %q on stderr",
			b.Name(), res.ExitCode, res.Stdout, res.Stderr)
	case cerr != nil && !errors.Is(cerr, transport.ErrClosed):
		return fmt.Errorf("codemode: %s: closing the sandbox: %w", b.Name(), cerr)
	}
	return nil
}

// CheckEgressBudget fails when a budget of egress bytes is set for a
// backend whose sessions do not meter their egress.
func CheckEgressBudget(egressBytes int64, backend transport.Backend) error {
	if egressBytes > 0 && !transport.MetersEgress(backend) {
		return fmt.Errorf("codemode: Budgets.EgressBytes is %d, but the backend %s has no egress proxy that meters each block's bytes: set Config.Egress (or the jail backend's Egress), or leave Budgets.EgressBytes zero",
			egressBytes, backend.Name())
	}
	return nil
}

// CheckToolNames refuses two of the plugin's Config.Tools, by their names
// in order, with one name, and a tool named like a built-in artifact tool
// while those are on, naming both: the error the catalog would give knows
// neither where the names came from nor that one of them is Code Mode's.
func CheckToolNames(names []string, artifactToolsOn bool) error {
	seen := map[string]int{}
	if artifactToolsOn {
		for _, b := range ArtifactTools() {
			seen[b.Decl.Name] = -1
		}
	}
	for i, name := range names {
		j, dup := seen[name]
		switch {
		case dup && j < 0:
			return fmt.Errorf("codemode: Config.Tools[%d] is named %q, as Code Mode's built-in artifact tool is: rename it, or set Config.DisableArtifactTools to leave the built-in tools out", i, name)
		case dup:
			return fmt.Errorf("codemode: Config.Tools[%d] and Config.Tools[%d] are both named %q: give them names of their own", j, i, name)
		}
		seen[name] = i
	}
	return nil
}

// CheckDirect refuses a name in the plugin's Config.Direct that names no
// tool: one of tools, unless there are toolsets (their tools are known
// only per invocation, so a name there is looked for on each model
// request).
func CheckDirect(direct, tools []string, toolsets bool) error {
	for _, n := range direct {
		if n == "" {
			return errors.New("codemode: Config.Direct has an empty name; list the names of tools the model may call directly")
		}
		if !slices.Contains(tools, n) && !toolsets {
			return fmt.Errorf("codemode: Config.Direct names %q, which is not one of Config.Tools; name a tool the code can call (its Name())", n)
		}
	}
	return nil
}
