package codemode

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/adk/v2/tool"

	"github.com/adk-codemode/codemode/backend/jail"
	"github.com/adk-codemode/codemode/egress"
	eng "github.com/adk-codemode/codemode/internal/host/engine"
	"github.com/adk-codemode/codemode/transport"
)

// validated is what validate built of a Config that passed: its tools,
// its toolsets with their namespaces, and, without toolsets, its surface
// ([1] with the artifact tools and parameters, [0] without), whose catalog
// refuses two tools that become one Python name and schemas it cannot
// render.
type validated struct {
	bare     []namespacedTool
	toolsets []namedToolset
	static   [2]*surface
}

// validate reports the first setting of cfg that cannot be meant, naming
// the field and what to write instead, and returns what it built to check
// the tools. It is the one place a Config is checked: New, the callbacks
// and Check call it, and New builds from what it returns. In order: the
// durations and numbers (zero always means the default, and the fields
// documented to take a negative value take it; any other negative value,
// and a duration under a millisecond, since a bare number is nanoseconds:
// Timeout: 30 is 30ns), the egress policy and the backend, the tools (none
// nil, none only for a direct call, each runnable, no two with one name,
// none named like a built-in artifact tool while those are on), the names
// in Direct, the toolsets' namespaces, a budget of egress bytes on a
// backend that meters them, and, without toolsets, the catalog of the
// tools (with toolsets it is built per invocation).
func (cfg Config) validate() (validated, error) {
	var v validated
	if err := cfg.validateSettings(); err != nil {
		return v, err
	}
	var err error
	if v.bare, err = staticTools(cfg.Tools); err != nil {
		return v, err
	}
	if err := checkToolNames(cfg.Tools, !cfg.DisableArtifactTools); err != nil {
		return v, err
	}
	if err := checkDirect(cfg); err != nil {
		return v, err
	}
	if v.toolsets, err = namedToolsets(cfg); err != nil {
		return v, err
	}
	backend := cfg.Backend
	if backend == nil {
		backend = defaultJail(cfg)
	}
	if err := checkEgressBudget(cfg.Budgets, backend); err != nil {
		return v, err
	}
	if len(cfg.Toolsets) == 0 {
		d := cfg.withDefaults()
		for _, art := range []bool{true, false} {
			if v.static[index(art)], err = buildSurface(v.bare, d.surfaceOptions(art)); err != nil {
				return v, err
			}
		}
	}
	return v, nil
}

// validateSettings checks cfg's durations, numbers, egress policy and
// backend (see validate).
func (cfg Config) validateSettings() error {
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

// Check validates cfg as [New] does, then starts one sandbox of its
// backend, runs a block in it and closes it, and returns why it failed,
// if it did: an interpreter that is not Python, a limit too small for
// Python to start (a *jail.LimitError for the jail), a container image
// missing, a remote sandbox out of reach. Call it where the program starts,
// so that such a mistake reaches the developer rather than the model.
// With no Backend it checks the default jail, and stops the template
// process it started.
func Check(ctx context.Context, cfg Config) error {
	if _, err := cfg.validate(); err != nil {
		return err
	}
	b := cfg.Backend
	if b == nil {
		jb, err := defaultBackend(cfg)
		if err != nil {
			return err
		}
		defer func() { _ = jb.Close() }() // it stops the template this check started
		b = jb
	}
	return checkBackend(ctx, b)
}

// defaultJail is the backend a Config without one runs its code in.
func defaultJail(cfg Config) *jail.Backend { return &jail.Backend{Egress: cfg.Egress} }

// defaultBackend is the backend of a Config without one: the jail, with
// the host's python3, which must be there, and cfg's egress policy.
func defaultBackend(cfg Config) (*jail.Backend, error) {
	jb := defaultJail(cfg)
	if err := jb.Validate(); err != nil {
		return nil, fmt.Errorf("codemode: Config.Backend is nil, so the default, the namespace jail with the host's python3, runs the code: %w; install python3, or set Config.Backend", err)
	}
	return jb, nil
}

// checkBackend opens a session of b and runs a block in it.
func checkBackend(ctx context.Context, b transport.Backend) error {
	s, err := b.Open(ctx, transport.SessionConfig{})
	if err != nil {
		return fmt.Errorf("codemode: %s: the sandbox did not start: %w", b.Name(), err)
	}
	res, err := s.Exec(ctx, transport.Block{Code: "import sys\nprint(sys.version_info[0])", Timeout: eng.ProbeTimeout})
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

// checkDirect refuses a name in Config.Direct that names no tool: one of
// Tools, unless Toolsets are set (their tools are known only per
// invocation, so a name there is looked for on each model request).
func checkDirect(cfg Config) error {
	known := map[string]bool{}
	for _, t := range cfg.Tools {
		if t != nil {
			known[t.Name()] = true
		}
	}
	for _, n := range cfg.Direct {
		if n == "" {
			return errors.New("codemode: Config.Direct has an empty name; list the names of tools the model may call directly")
		}
		if !known[n] && len(cfg.Toolsets) == 0 {
			return fmt.Errorf("codemode: Config.Direct names %q, which is not one of Config.Tools; name a tool the code can call (its Name())", n)
		}
	}
	return nil
}

// checkToolNames refuses two tools of Config.Tools with one name, and a
// tool named like a built-in artifact tool while those are on, naming
// both: the error the catalog would give knows neither where the names
// came from nor that one of them is Code Mode's.
func checkToolNames(tools []tool.Tool, artifactToolsOn bool) error {
	seen := map[string]int{}
	if artifactToolsOn {
		for _, b := range artifactTools() {
			seen[b.Name()] = -1
		}
	}
	for i, t := range tools {
		j, dup := seen[t.Name()]
		switch {
		case dup && j < 0:
			return fmt.Errorf("codemode: Config.Tools[%d] is named %q, as Code Mode's built-in artifact tool is: rename it, or set Config.DisableArtifactTools to leave the built-in tools out", i, t.Name())
		case dup:
			return fmt.Errorf("codemode: Config.Tools[%d] and Config.Tools[%d] are both named %q: give them names of their own", j, i, t.Name())
		}
		seen[t.Name()] = i
	}
	return nil
}

// checkEgressBudget fails when b sets Budgets.EgressBytes for a backend
// whose sessions do not meter their egress.
func checkEgressBudget(b Budgets, backend transport.Backend) error {
	if b.EgressBytes > 0 && !transport.MetersEgress(backend) {
		return fmt.Errorf("codemode: Budgets.EgressBytes is %d, but the backend %s has no egress proxy that meters each block's bytes: set Config.Egress (or the jail backend's Egress), or leave Budgets.EgressBytes zero",
			b.EgressBytes, backend.Name())
	}
	return nil
}
