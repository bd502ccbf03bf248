// Package jailplan is a jail's setup as a plan: a list of system calls,
// built by the host in Go and executed inside the jail by either of two
// small interpreters, one in Go (the cold start's init, internal/sandbox/initstage)
// and one in Python (plan.py, run by the template process a forked session
// comes from). Every kernel constant, flag and structure layout is the
// builder's, in Go: the interpreters know only how to place arguments,
// call syscall(2) and check what it returned.
//
// A plan is a value: [Plan.Validate] says whether both interpreters can run
// it, and the same plan gives the same results under either (the package's
// tests run each case under both). What a plan did is read back by the
// host from the jail's /proc entries (backend/jail), plus the few values
// that only the jail can see, which steps marked Report return.
package jailplan
