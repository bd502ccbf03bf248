package launch

import (
	"context"
	"io"
	"os"
)

// A Starter starts the process that runs the supervisor. It is the one part
// of a local backend that is its own: a jail, a plain child process, a
// container with the socket passed in.
type Starter interface {
	// Start starts a process that runs the supervisor and returns once it
	// has started; ctx bounds only the start. The process must run the
	// sandbox program (internal/host/sandboxbin) with argv cmd.Args (argv[0]
	// is server.SupervisorStage), with cmd.Socket as its descriptor 3 and
	// its standard error written to cmd.Stderr. Start must not keep
	// cmd.Socket: Launch closes its copy once Start returns.
	Start(ctx context.Context, cmd Command) (Process, error)
}

// StarterFunc adapts a function to [Starter].
type StarterFunc func(ctx context.Context, cmd Command) (Process, error)

// Start calls f.
func (f StarterFunc) Start(ctx context.Context, cmd Command) (Process, error) { return f(ctx, cmd) }

// Command is what a [Starter] runs.
type Command struct {
	Args   []string  // the supervisor's argv; Args[0] is server.SupervisorStage
	Socket *os.File  // the supervisor's end of its socket to the host: descriptor 3
	Stderr io.Writer // where the process's standard error goes
}

// MemoryReporter is a [Process] whose sandbox has a memory limit it can
// read back: MemoryKills says how many processes the limit has killed so
// far and the limit in bytes (0 if unknown), ok false when it cannot
// tell. A session over such a process tells the model when its worker was
// killed for memory (see server.MemoryCounter).
type MemoryReporter interface {
	MemoryKills() (kills int, limit int64, ok bool)
}

// Process is a started supervisor's process.
type Process interface {
	// Wait waits for the process to exit, then releases what it held (a
	// cgroup, a temporary directory). Its error is about the release
	// only: once a session has ended, how its supervisor exited does not
	// matter, but something left behind does.
	Wait() error
	// Kill ends the process and every process it started.
	Kill() error
}
