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
// [Pool] wraps a backend and keeps sessions started ahead of need.
//
// This package has no wire types: how frames travel is the business of
// package internal/wire, and how a sandbox is started that of the
// backends (package backend/jail, backend/unsandboxed) and of
// internal/launch's Launch, their shared recipe.
//
// # Concurrency
//
// A Session's Exec calls are serialised by the session itself; Close may be
// called at any time from any goroutine and unblocks a running Exec.
package transport
