package supervisor

import "golang.org/x/sys/unix"

// becomeSubreaper makes orphaned descendants of the worker children of this
// process, so they are reaped here and KillTree can find them.
func becomeSubreaper() {
	_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}
