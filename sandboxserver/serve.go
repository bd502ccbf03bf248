package sandboxserver

import (
	"context"
	"io"

	"github.com/adk-codemode/codemode/internal/both/server"
	"github.com/adk-codemode/codemode/internal/protocol/wire"
)

// Serve serves one session of the frame protocol (docs/protocol.md),
// reading the host's frames from r and writing its own to w, until the
// host ends the session, r ends or ctx is cancelled. It starts the Python
// worker, tells the host it is ready, and keeps the worker for the whole
// session. It fails at once if cfg lacks Python or Workdir, and on systems
// other than Linux.
func Serve(ctx context.Context, r io.Reader, w io.Writer, cfg Config) error {
	return server.Serve(ctx, wire.NewConn(r, w, nil, wire.MaxFrameSize), cfg.server())
}

// server is cfg as the session's server takes it.
func (c Config) server() server.Config {
	return server.Config{
		Python:             c.Python,
		Workdir:            c.Workdir,
		FilesDir:           c.FilesDir,
		Env:                c.Env,
		MaxOutputBytes:     c.MaxOutputBytes,
		MaxFileBytes:       c.MaxFileBytes,
		MaxFiles:           c.MaxFiles,
		WorkerAddressSpace: c.WorkerAddressSpace,
		WorkerProcesses:    c.WorkerProcesses,
		StartTimeout:       c.StartTimeout,
	}
}
