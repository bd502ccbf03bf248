// Package server is the runtime of a session: it serves the frame
// protocol (package internal/protocol/wire) to the host and owns the session's
// persistent Python worker. It runs on either side of a sandbox: inside it
// ([Serve], which the public package sandboxserver and
// cmd/codemode-sandbox run), or in the host's process with the worker in
// the sandbox under a supervisor ([Attach], which internal/host/launch's
// recipe runs for every local backend).
//
// # The worker
//
// The server starts the interpreter once per session with the embedded
// runner ([RunnerSource]: nothing is installed in the sandbox; a backend
// that ran [ProbeInterpreter], as internal/host/launch does, passes it
// compiled, which starts the worker sooner) and keeps it for the whole
// session, so variables, imports and files carry from one block to the
// next. Each block runs in one __main__-like
// namespace, compiled with the file name "<code-mode>"; a SyntaxError or an
// exception prints a traceback of the user's code only and exits 1;
// SystemExit behaves as in a script. The runner removes every environment
// variable that is not on its allowlist before any user code runs, and
// injects the codemode_runtime module through which the generated tools
// package calls the host (call, ToolError, HTTPStatusError, ToolDeniedError,
// CodeTimeout).
//
// The worker's fd 1 and fd 2 are pipes the server reads, so output that
// child processes write to the real descriptors is captured too. The runner
// flushes both before it reports a block's end, and the server then drains
// them: what they held is the block's, and later output the next block's.
// Each stream keeps at most 4 MiB per block, its first and last halves, and
// counts what it dropped.
//
// Blocks, their ends and tool calls travel over a pair of pipes of their
// own (fd 3 and fd 4 of the worker), never over the output streams. Tool
// calls come from any number of Python threads at once, each with its own
// id; the server relays them to the host and the results back as they come,
// and decodes what the worker writes as strictly as the host does.
//
// # Timeouts and resets
//
// A block past its timeout is interrupted in place: the server signals the
// worker, whose handler raises CodeTimeout (a BaseException) in the block,
// again every 100 ms; tool calls in flight are answered with TimeoutError
// and cancelled on the host. If the block stops within the grace period,
// the session keeps its state and done.stopped says so. If not, or if the
// worker dies or breaks its control channel, the server kills the worker
// and every process it started, starts a fresh one, and done.reset says the
// state is gone. Either way a note is added to stderr.
//
// # Files
//
// After each block the server lists the regular files that the block
// created or changed in the working directory, watching it with inotify so
// that the cost follows what changed; symlinks, FIFOs, devices and files
// with more than one link are never listed. The host fetches a listed file
// with get_file; the server opens it with openat2 beneath the workspace,
// refusing every symlink.
//
// # Where it runs
//
// A sandbox on another machine runs [Serve]: cmd/codemode-sandbox serves
// it on standard input and output for containers, or over a WebSocket.
//
// A sandbox on the same machine runs the supervisor instead, and the host
// runs the server with [Attach] (or [ServeAttached], when a sandbox server
// gives a remote session a jail of its own). Backends start the
// supervisor as the library's sandbox program (internal/host/sandboxbin) under
// the argv[0] [SupervisorStage]; the jail runs it in its init process. The
// host program itself never runs in a sandbox. The supervisor
// starts, signals and kills the worker, reaps and tracks what runs in the
// sandbox, and passes the worker's pipes to the host over a Unix socket
// ([SocketPair]), so that blocks and tool calls travel between the host
// and the worker with no process in between; tool calls then run on the
// goroutine that read them. The two talk in JSON lines, decoded as
// strictly as frames.
//
// The supervisor, the worker's launcher and the workspace tracker live in
// package internal/sandbox/supervisor.
//
// The package runs on Linux; elsewhere its functions return an error that
// says so.
package server
