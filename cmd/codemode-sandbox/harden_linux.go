package main

import "golang.org/x/sys/unix"

// hideProcess makes this process non-dumpable: its /proc entries (environ,
// mem, fds) then belong to root, so code running as the same user in the
// session cannot read the secret from the environment the process was
// started with, which unsetting a variable does not erase.
func hideProcess() error { return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) }
