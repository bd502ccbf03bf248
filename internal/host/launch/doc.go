// Package launch is the host's side of a local sandbox: the one recipe
// every local backend (the jail, the unsandboxed backend) starts a session
// with, and that a sandbox server uses to give each remote session a jail
// of its own.
//
// [Launch] probes the interpreter, makes the socket to the supervisor,
// has the backend's [Starter] start a process that runs the supervisor (the
// sandbox program, internal/host/sandboxbin, under server.SupervisorStage), and
// attaches the session to the worker the supervisor starts: the session's
// server runs in the host's process (package internal/both/server) and talks
// to the worker over pipes passed through the socket. [ServeLaunched] does
// the same for a session whose host is at the other end of a frame
// stream.
//
// A backend's own code is its starter and the [Process] it returns: how
// the process is started and what it releases when it exits.
//
// The package runs on Linux; elsewhere its functions return an error that
// says so.
package launch
