// Package initstage is what runs inside a jail before its payload: the
// init stage, pid 1 of the jail's namespaces (it builds the root, brings
// up the loopback, sets the rlimits, drops privileges, loads the seccomp
// filter and starts or becomes the payload, then reaps), the payload
// launcher that applies RLIMIT_AS, and their protocol with the host.
// Package backend/jail is the host's side. The jail's init is the host
// program re-executed through /proc/self/exe with the argv[0] [StageInit],
// and this package's init function is the hook that turns it into the init
// stage; backend/jail imports this package, so every program that can
// start a jail can be its init.
//
// A jail that runs the sandbox supervisor runs it in its init process,
// after the setup (Config.InProcess): this package imports
// internal/supervisor for that.
//
// # Why it is a package of its own
//
// Go runs package initializers in dependency order, and among the packages
// whose dependencies are done, in the order of their import paths. The hook
// runs only once every package it depends on has been initialized, and a
// dependency that sorts late (net, path/filepath, log/slog, regexp,
// os/exec) would be initialized only after every ready package of the
// program that sorts before it: in a program that links ADK, most of them,
// and each of their initializers would run at every cold start of a jail.
// Here the hook depends on the standard library's early packages,
// golang.org/x/sys/unix, golang.org/x/net/bpf and internal/supervisor
// only. The tests in internal/layering and TestHookRunsEarly here hold it
// to that; docs/benchmarks.md has what it saves.
package initstage
