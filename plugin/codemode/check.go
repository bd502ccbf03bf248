package codemode

import (
	"context"
	"fmt"

	"github.com/adk-codemode/codemode/backend/jail"
	eng "github.com/adk-codemode/codemode/internal/host/engine"
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
	if err := (eng.Settings{
		Timeout: cfg.Timeout, Grace: cfg.Grace, ToolTimeout: cfg.ToolTimeout, IdleTimeout: cfg.IdleTimeout,
		ApprovalTimeout: cfg.ApprovalTimeout, MaxOutputChars: cfg.MaxOutputChars, BlockBudget: cfg.BlockBudget,
		Egress: cfg.Egress, Backend: cfg.Backend,
	}).Validate(); err != nil {
		return v, err
	}
	var err error
	if v.bare, err = staticTools(cfg.Tools); err != nil {
		return v, err
	}
	names := make([]string, len(cfg.Tools)) // staticTools refused nil tools
	for i, t := range cfg.Tools {
		names[i] = t.Name()
	}
	if err := eng.CheckToolNames(names, !cfg.DisableArtifactTools); err != nil {
		return v, err
	}
	if err := eng.CheckDirect(cfg.Direct, names, len(cfg.Toolsets) > 0); err != nil {
		return v, err
	}
	if v.toolsets, err = namedToolsets(cfg); err != nil {
		return v, err
	}
	backend := cfg.Backend
	if backend == nil {
		backend = defaultJail(cfg)
	}
	if err := eng.CheckEgressBudget(cfg.Budgets.EgressBytes, backend); err != nil {
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
	return eng.CheckBackend(ctx, b)
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
