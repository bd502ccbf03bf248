package jail

import (
	"errors"
	"fmt"

	"github.com/adk-codemode/codemode/egress"
)

// Validate reports the first value of c that no jail can use, naming the
// field and what to write instead: a negative limit (but AddressSpaceBytes,
// where negative means none), a host id out of range or equal to the
// other, a Files key that is not a clean relative path or Files over
// [MaxFilesBytes], an ExtraReadOnly path the jail cannot bind. It looks at
// nothing on the host: [Check] and a session's start find what only a
// real jail can (a limit too small to start Python, an interpreter that is
// not Python).
func (c Config) Validate() error {
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"MemoryBytes", c.MemoryBytes},
		{"Processes", int64(c.Processes)},
		{"WorkspaceBytes", c.WorkspaceBytes},
		{"TmpBytes", c.TmpBytes},
		{"OpenFiles", int64(c.OpenFiles)},
		{"FileSizeBytes", c.FileSizeBytes},
		{"CPUSeconds", int64(c.CPUSeconds)},
		{"SetupHostID", int64(c.SetupHostID)},
		{"PayloadHostID", int64(c.PayloadHostID)},
	} {
		if f.v < 0 {
			return fmt.Errorf("jail: Config.%s is %d: it cannot be negative; leave it 0 for the default", f.name, f.v)
		}
	}
	if c.SetupHostID != 0 || c.PayloadHostID != 0 {
		if err := checkHostIDs(c.withDefaults()); err != nil {
			return err
		}
	}
	if _, err := checkFiles(c.Files); err != nil {
		return err
	}
	for _, p := range c.ExtraReadOnly {
		if err := checkExtraPath(p); err != nil {
			return err
		}
	}
	return nil
}

// Validate reports what is wrong with the backend's Config ([Config.Validate])
// and whether its interpreter can be found ([Config.Interpreter]). It starts
// nothing.
func (b *Backend) Validate() error {
	if err := b.Config.Validate(); err != nil {
		return err
	}
	if b.Egress != nil {
		if _, err := egress.New(*b.Egress); err != nil {
			return fmt.Errorf("jail: Backend.Egress: %w", err)
		}
	}
	_, err := b.Config.Interpreter()
	return err // it names Config.Python
}

// LimitError reports a jail, or a session's Python worker in it, that did
// not start because one of its limits is too small: while it started, its
// memory cgroup OOM-killed a process or its pids cgroup refused a fork.
type LimitError struct {
	// Field is the Config field of the limit: "MemoryBytes" or "Processes".
	Field string
	// Value is the limit as the jail applied it, defaults resolved.
	Value int64
	// Err is how the start failed.
	Err error
}

func (e *LimitError) Error() string {
	var what, unit string
	switch e.Field {
	case "MemoryBytes":
		what, unit = "the memory limit", fmt.Sprintf("%d MiB", e.Value>>20)
	default:
		what, unit = "the task limit (processes and threads)", fmt.Sprint(e.Value)
	}
	return fmt.Sprintf("jail: %s, Config.%s = %s, is too small for the Python worker and its supervisor to start; raise it, or leave it 0 for the default: %v",
		what, e.Field, unit, e.Err)
}

func (e *LimitError) Unwrap() error { return e.Err }

// limitHit returns err as a [LimitError] when usage shows that a limit of
// cfg (defaults resolved) stopped a start, and err otherwise.
func limitHit(err error, usage Usage, cfg Config) error {
	var le *LimitError
	if err == nil || errors.As(err, &le) {
		return err
	}
	switch {
	case usage.OOMKills > 0:
		return &LimitError{Field: "MemoryBytes", Value: cfg.MemoryBytes, Err: err}
	case usage.PidsLimitHits > 0:
		return &LimitError{Field: "Processes", Value: int64(cfg.Processes), Err: err}
	}
	return err
}
