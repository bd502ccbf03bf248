package main

import "golang.org/x/sys/unix"

// hideProcess makes this process non-dumpable: its /proc entries (environ,
// mem, fds) then belong to root, so code running as the same user in the
// session cannot read the secret from the environment the process was
// started with, which unsetting a variable does not erase.
func hideProcess() error { return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) }

// noCoreDumps sets RLIMIT_CORE to 0, soft and hard, for this process and
// so for every process of the session: a crash writes no core file, and
// the code cannot raise the limit again. Whatever the engine or host
// would have allowed, the sandbox keeps the jail's rule.
func noCoreDumps() error {
	return unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{Cur: 0, Max: 0})
}
