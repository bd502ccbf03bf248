// Package supervisor is the process side of a local sandbox: the supervisor
// that runs inside it ([Run]), the worker processes it starts, reaps and
// kills ([Procs]), the workspace files it tracks ([Tracker]) and the
// protocol in which it talks to the host that runs the session ([Conn]).
// It is the supervisor of every session: of a cold jailed session, in the
// jail's init process; of the sandbox server's own sessions (Docker,
// remote), re-executed under [Stage]; and of a jailed session forked from
// a template, which forks its first worker from the template's loaded
// runner and then execs the host program under [Stage] with that worker
// named in [Config.Adopt] (backend/jail's zygote.py): [Run] adopts it as
// the first worker ([Procs.Adopt]) and starts later ones itself.
// Package internal/server runs the session and talks to it; this package
// is its part that runs in the sandbox, and what the server shares with it
// when it runs in the sandbox itself. Its [Config] is the server's.
//
// # Why it is a package of its own
//
// The supervisor runs in a re-execution of the host program: under the
// argv[0] [Stage], whose hook is this package's init function, or in the
// init process of a jail (backend/jail/internal/initstage), whose hook is
// that package's. Go runs package initializers in dependency order, and
// among the packages whose dependencies are done, in the order of their
// import paths. A hook therefore runs only once every package it depends
// on has been initialized, and a dependency that sorts late (net waits for
// vendor/golang.org/x/net/dns/dnsmessage; path/filepath, log/slog, regexp
// and os/exec sort after github.com, go.opentelemetry.io and
// google.golang.org) is initialized only after every package of the
// program that sorts before it and is ready: in a program that links ADK,
// most of its packages. Each of their initializers then runs at every
// start of a sandbox, before the hook.
//
// So this package and its dependencies keep to the standard library's
// early packages, golang.org/x/sys/unix and internal/clip: no net (the
// socket is read and written with recvmsg and sendmsg through the runtime's
// poller), no os/exec, no path/filepath (package path does for Linux
// paths), no regexp, and nothing of internal/wire, which imports log/slog:
// [FileInfo] and [MaxLine] are that package's, restated. Tests in
// internal/layering and backend/jail/internal/initstage hold the package
// to this.
package supervisor
