// Package floor is the least a jail that starts Python through a Go init
// process must do, kept as a yardstick for the jail's cold-start
// benchmarks. It is not a sandbox: no /etc, /dev or /workspace, no
// cgroups, rlimits, privilege drop, seccomp, supervisor or handshake.
package floor
