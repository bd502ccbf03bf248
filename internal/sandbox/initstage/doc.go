// Package initstage is what runs inside a jail before its payload: the
// init stage, pid 1 of the jail's namespaces (it builds the root, runs
// the host's setup plan, internal/protocol/jailplan, which brings up the loopback,
// sets the rlimits, drops privileges and loads the seccomp filter, and
// starts or becomes the payload, then reaps), the payload
// launcher that applies RLIMIT_AS, and their protocol with the host.
// Package backend/jail is the host's side. Both stages run in the sandbox
// program (internal/host/sandboxbin), never in the host program: backend/jail
// starts that program under the argv[0] [StageInit], and it calls [Main].
//
// A jail that runs the sandbox supervisor runs it in its init process,
// after the setup (Config.InProcess): this package imports
// internal/sandbox/supervisor for that.
package initstage
