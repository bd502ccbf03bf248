// Package sandboxserver is what runs inside a sandbox: the server of one
// session, which speaks the frame protocol (docs/protocol.md) with the host
// and owns the session's persistent Python worker; and the host's end of
// such a session.
//
// [Serve] serves a session over a pair of streams, such as a container's
// standard input and output. The codemode-sandbox command
// (cmd/codemode-sandbox) runs the same server that way, or over a
// WebSocket with --listen, and is what the Docker and remote backends talk
// to. A program that builds its own sandbox image, or its own way of
// reaching one, can run Serve instead.
//
// The server starts the interpreter once per session with an embedded
// runner, so nothing is installed in the sandbox, and keeps it for the
// whole session: variables, imports and files carry from one block to the
// next. The runner removes every environment variable not on its
// allowlist before user code runs. Each stream of a block's output keeps
// at most [Config.MaxOutputBytes], its first and last halves. A block past
// its time limit is interrupted in place; if it does not stop within the
// grace period, or the worker dies, the server starts a fresh worker and
// says that the state is gone. After each block the server lists the
// regular files the block created or changed in the working directory;
// the host fetches them by name, and the server opens them beneath the
// workspace, refusing every symlink.
//
// [Connect] is the other end: the host's side of one session over any
// byte stream to such a server. With it, a backend of your own is a way to
// start a sandbox and reach its server; the package's example test
// (processBackend, a file of under 80 lines) is one, and passes the transporttest
// suite that the library's backends pass.
//
// Local backends do not use this package: they run the same server in the
// host's process, attached to a worker under a supervisor in the sandbox
// (see docs/protocol.md and docs/jail.md).
//
// The package runs on Linux; elsewhere Serve returns an error that says
// so.
package sandboxserver
