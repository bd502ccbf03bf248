// Package transport is the contract between Code Mode and a sandbox: what a
// plugin needs to run code, and what every backend provides.
//
// # Sessions
//
// A [Backend] opens [Session]s. One session is one sandbox with one
// persistent Python worker: variables and files survive from one
// [Session.Exec] to the next until [Session.Close]. Tool calls made by the
// code arrive at the [ToolHandler] given in [SessionConfig], concurrently,
// and are answered with a [ToolResult]: a value, or a [ToolError] that the
// code gets as a Python exception.
//
// A [Result] says how a block ended (its exit code, whether it was stopped
// in place or its worker reset, whether it left work in the background)
// and lists the workspace [File]s it created or changed. A lost connection
// is a [*ConnectionError] whose [Stage] says whether the block may have
// run, which decides whether it is safe to run it again.
//
// This package is the contract alone, on the standard library: it has no
// wire types and starts no sandbox. The backends start sandboxes (package
// backend/jail, backend/docker, backend/remote, backend/unsandboxed); a
// backend of your own reaches the server in its sandbox with
// sandboxserver.Connect, over any byte stream, and transporttest.Run
// holds it to the contract; warm.Pool (package backend/warm) wraps any
// backend and keeps sessions started ahead of need.
//
// # Concurrency
//
// A Session's Exec calls are serialised by the session itself; Close may be
// called at any time from any goroutine and unblocks a running Exec.
package transport
