// Package syscallpolicy is the one statement of the system calls a sandbox
// refuses its code, on linux/amd64: which calls fail and with what error,
// and which arguments of clone and personality are refused. The jail's
// seccomp filter (internal/sandbox/initstage) and the seccomp profile
// the Docker backend sends its engine (backend/docker) are both made from
// it, so every backend holds the code to the same rules.
//
// On linux/amd64 it also makes the policy a seccomp filter ([Program]) and
// installs it ([Install]): the jail's init stage does for every jail, and
// the sandbox server does for itself where no jail does.
//
// It imports only golang.org/x/sys/unix and golang.org/x/net/bpf: the
// jail's init hook depends on it, and a hook may depend only on packages
// Go initializes early (internal/tooling/layering). The policy's numbers are
// written out rather than taken from unix, whose tables differ by
// operating system, so that the Docker backend states the Linux policy on
// any host.
package syscallpolicy
