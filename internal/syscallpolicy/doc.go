// Package syscallpolicy is the one statement of the system calls a sandbox
// refuses its code, on linux/amd64: which calls fail and with what error,
// and which arguments of clone and personality are refused. The jail's
// seccomp filter (backend/jail/internal/initstage) and the seccomp profile
// the Docker backend sends its engine (backend/docker) are both made from
// it, so every backend holds the code to the same rules.
//
// It imports nothing: the jail's init hook depends on it, and a hook may
// depend only on packages Go initializes early (internal/layering).
package syscallpolicy
