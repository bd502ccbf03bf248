// Package escapeprobe is the project's own escape-probe suite: the ways
// out of a namespace jail or a container that published escape
// benchmarks exercise (SandboxEscapeBench's runtime and kernel scenarios,
// the escape, exfiltration and secret-discovery challenges of
// inspect_evals' sandboxbench), written as deterministic probes that run
// as a block of sandboxed code.
//
// Each [Probe] states what containment means for it, tries every way it
// knows to break it, and reports each way that worked as a hole; [Run]
// runs them all in one session of a backend and fails the test for every
// hole, and for a probe that checked nothing. The backends' tests run the
// suite on every sandbox they provide: the jail forked and cold, the
// Docker backend, and the remote backend whose server jails its sessions.
//
// Run plants what the probes look for on the host side before the
// session starts: a secret file in the temporary directory and in the home
// directory, a variable in the host's environment, and listeners on the
// host's loopback. The probes never write to a file of the kernel's
// (/proc/sys, /sys): opening one for writing is the test.
package escapeprobe
