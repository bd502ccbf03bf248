package sandboxserver

import "time"

// Config configures [Serve]. Only Python and Workdir are required; a zero
// value of any other field means its default.
type Config struct {
	// Python is the interpreter to run. Required.
	Python string
	// Workdir is the worker's working directory, whose new and changed
	// files are reported after each block. Required.
	Workdir string
	// FilesDir, if set, is put first on sys.path: the host's tools
	// package is written there (codemode-sandbox --files-over-stdin does
	// it before serving).
	FilesDir string
	// Env is the worker's environment. The runner removes everything that
	// is not on its allowlist before user code runs.
	Env []string
	// MaxOutputBytes is the default bound per stream and block; a block
	// may ask for another. Zero means 4 MiB, which is also the most a
	// block may ask for.
	MaxOutputBytes int64
	// MaxFileBytes bounds a file the host fetches from the workspace. Zero
	// means 32 MiB.
	MaxFileBytes int64
	// MaxFiles bounds the workspace entries examined after a block. Zero
	// means 100,000.
	MaxFiles int
	// WorkerAddressSpace, if positive, is the RLIMIT_AS of the Python
	// worker, set before it reads its first block.
	WorkerAddressSpace int64
	// WorkerProcesses, if positive, is the RLIMIT_NPROC of the Python
	// worker. Set it below the sandbox's own task limit so that a fork
	// bomb in the code leaves the server the threads it needs.
	WorkerProcesses int64
	// StartTimeout bounds the worker's start. Zero means 30s.
	StartTimeout time.Duration
}
