// Package supervisor is the process side of a local sandbox: the supervisor
// that runs inside it ([Run]), the worker processes it starts, reaps and
// kills ([Procs]), the workspace files it tracks ([Tracker]) and the
// protocol in which it talks to the host that runs the session ([Conn]).
// It is the supervisor of every session: of a cold jailed session, in the
// jail's init process; of the sandbox server's own sessions (Docker,
// remote), started under [Stage]; and of a jailed session forked from a
// template, which forks its first worker from the template's loaded
// runner and then execs the supervisor under [Stage] with that worker
// named in [Config.Adopt] (backend/jail's zygote.py): [Run] adopts it as
// the first worker ([Procs.Adopt]) and starts later ones itself.
// Package internal/both/server runs the session and talks to it; this package
// is its part that runs in the sandbox, and what the server shares with it
// when it runs in the sandbox itself. Its [Config] is the server's.
//
// Locally the supervisor runs in the library's sandbox program
// (internal/host/sandboxbin), never in the host program, so no code of the
// host program runs in a sandbox. Its imports are kept small all the same
// (the standard library's system-call and encoding packages,
// golang.org/x/sys/unix, internal/both/clip and internal/both/egressrelay; nothing
// of internal/protocol/wire): [FileInfo] and [MaxLine] are that package's,
// restated.
package supervisor
