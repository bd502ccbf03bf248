package main

import (
	"golang.org/x/sys/unix"

	"github.com/adk-codemode/codemode/internal/both/syscallpolicy"
)

// holdToPolicy loads the jail's system-call policy (internal/both/syscallpolicy)
// on this process, with no_new_privs, before it starts any worker: every
// process of the session is then held to the same rules as in the jail,
// whatever the container engine's or the cluster's own seccomp profile
// allows. A server that builds jails (--jail) does not: it needs to unshare
// and mount, and each of its jails loads the policy itself.
func holdToPolicy() error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	return syscallpolicy.Install(false)
}
