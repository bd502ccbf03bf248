// Package jail runs one command in a daemonless Linux namespace jail: no
// container engine, no setuid helper, no cgo. It is the default local
// sandbox of codemode, used to run model-written Python.
//
//	c, err := jail.Start(ctx, jail.Config{}, jail.Spec{
//		Args:   []string{py, "-c", "print(1)"}, // py from Config.Interpreter
//		Env:    []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"},
//		Stdout: &out,
//	})
//	if err != nil { ... }
//	err = c.Wait()
//
// # How it works
//
// [Start] runs the library's own sandbox program (internal/host/sandboxbin: a
// small static executable embedded in this module and executed from
// memory) under argv0 "codemode-jail-init", in new user, mount, pid,
// network, IPC, UTS and cgroup namespaces, where it runs the jail's setup.
// No code of the host program runs in the jail: not its main, not its
// packages' initializers, on any start path. The configuration travels
// over an inherited pipe, never the environment: the payload's environment
// is exactly [Spec.Env].
//
// The host side first places the new process in its memory and pids
// cgroups, then releases it. The init stage then, as root of its own user
// namespace:
//
//   - builds a minimal root on a tmpfs: /usr read-only (with the bin, lib,
//     lib64 and sbin symlinks of a merged-usr host), a synthesized /etc
//     (passwd and group with the sandbox user, hosts, nsswitch.conf, copies
//     of ld.so.cache, localtime, services and the like, read-only binds of
//     /etc/ssl and /etc/alternatives), a /dev tmpfs with null, zero, full,
//     random and urandom bound in and /dev/fd, stdin, stdout and stderr
//     symlinks, /dev/shm, a fresh procfs, tmpfs /workspace and /tmp with
//     size caps, /codemode holding [Config.Files] read-only, and the
//     interpreter's install prefix read-only at its host path. Nothing of
//     the host's /proc, /sys, /root, /home or /run is present;
//   - pivot_roots into it, detaches the old root and makes / read-only;
//   - brings up the namespace's own loopback (no other interface exists, so
//     127.0.0.1 in the jail is not the host's 127.0.0.1);
//   - sets RLIMIT_CORE=0, CPU, FSIZE, NOFILE and NPROC;
//   - drops every capability from the bounding, ambient, permitted,
//     effective and inheritable sets, locks securebits, clears the
//     supplementary groups and switches to the payload uid and gid;
//   - re-arms PR_SET_PDEATHSIG (cleared by the uid change) and checks over
//     the lifeline pipe that the host did not die meanwhile, sets
//     PR_SET_NO_NEW_PRIVS, makes itself non-dumpable, and loads the seccomp
//     filter on all its threads;
//   - forks the payload with RLIMIT_AS applied: on itself just before the
//     fork when the limit leaves its Go runtime ample headroom, otherwise
//     through a small launcher stage (one more exec of the sandbox
//     program) that sets the limit and execs the payload;
//   - stays as pid 1: it forwards SIGTERM, SIGINT and SIGHUP to the
//     payload, reaps every orphan, and exits with the payload's status when
//     the payload exits, which makes the kernel kill everything left in the
//     jail.
//
// Any failing step is reported to the host, and Start returns it as a
// [*SetupError] such as "jail: mount /usr read-only: operation not
// permitted" (errors.Is works with the errno).
//
// # Root and rootless
//
// When the caller is root, inside uid 0 (the setup stage) maps to host uid
// 65534 and inside uid 1000 (the payload) to host uid 100000, both
// configurable ([Config.SetupHostID], [Config.PayloadHostID]); gids
// likewise. The payload is an unprivileged host user with no groups. Host
// trees that this uid cannot reach, such as a pyenv interpreter under a
// 0700 /root, are cloned by the host with open_tree and moved into the
// jail. With [Spec.Self], the host binary must be executable by others
// (mode o+x).
//
// When the caller is not root, the only possible mapping is inside 0 → the
// caller's uid. The payload then stays inside uid 0 but holds no
// capability: the bounding set is empty, the capability sets are cleared,
// and SECBIT_NOROOT is set and locked, so exec grants nothing back.
// Cgroups are usually not writable; the rlimits still apply.
// [Enforcement.Rootless] says which mode a jail ran in.
//
// # Seccomp
//
// The filter is classic BPF assembled in Go and loaded with TSYNC. Any
// architecture other than x86_64 (the 32-bit int 0x80 entry) and any x32
// syscall kill the process. mount, umount2, pivot_root, chroot, unshare,
// setns, ptrace, process_vm_readv/writev, pidfd_getfd, bpf,
// perf_event_open, the key syscalls, kexec, module loading, userfaultfd,
// handle-based opens, the new mount API, io_uring, acct, swapon/off,
// reboot, syslog, quotactl, lookup_dcookie, clock and time setting,
// iopl/ioperm, vhangup and uselib fail with EPERM. clone3 fails with ENOSYS
// (libc falls back to clone), clone with any CLONE_NEW* flag fails with
// EPERM, and personality accepts only the default persona and queries.
//
// # Limits
//
// Every [Config] field has a documented default. Memory and processes are
// enforced by cgroups where the host allows: v2 in a writable (delegated
// or root) subtree, else v1, chosen per controller, named
// codemode-jail-<host pid>-<n>, and removed by [Cmd.Wait]. The rlimits are
// always set; RLIMIT_AS limits address space rather than memory, so its
// default is twice MemoryBytes (at least MemoryBytes+1 GiB). [Cmd.Enforced]
// reports what a jail really got, [Cmd.Usage] what hit the cgroup limits,
// and [Check] probes a host for a doctor command.
//
// # Lifetime
//
// Cancelling Start's context, [Cmd.Kill], the host process dying (the
// jail's pid 1 has PDEATHSIG set to SIGKILL) and the payload exiting all
// end the whole jail: the kernel kills every process of a pid namespace
// whose pid 1 dies. After [Cmd.Wait] returns, no jailed process is left.
//
// # Forked sessions
//
// By default a [Backend] forks its sessions from a template process (one
// per interpreter and Config, itself jailed, with the worker's runner
// loaded) instead of starting a jail each: a quarter to a third of a cold
// start, and less than a bare Python spawn ([Backend.Cold] starts every
// session cold). Each forked session still gets its own namespaces, cgroups,
// mounts, limits, seccomp filter and dropped privileges, read back from
// the session ([Enforcement.Forked] tells them apart); docs/jail.md says
// what forked sessions share with the template. A session that cannot be
// forked starts cold ([Session.Fallback]). [CheckForked] probes it.
//
// Which code runs where: in a cold session, pid 1 is the Go init stage
// (internal/sandbox/initstage), which builds the jail and then runs
// the session's supervisor (internal/sandbox/supervisor) in its own process. In a
// forked session the template's Python (zygote.py) does only what the fork
// needs: the session's namespaces, mounts, privilege drop, seccomp filter
// and read-back, and the fork of its first worker from the loaded runner,
// whose pipes it passes to the host in the supervisor protocol's "spawned"
// message. It then execs the sandbox program (through a descriptor the
// template holds, at fd 6) as the same Go supervisor, which adopts that
// worker. So on both
// paths the Go supervisor speaks the supervisor protocol, reaps and kills
// the workers, starts any later worker (as a fresh interpreter), watches
// the workspace with inotify and reads files with openat2. Both paths are
// held to the same hostile cases, escape probes and shared suite; their
// costs are in docs/benchmarks.md.
//
// # Platforms
//
// Linux 5.12 or later on amd64. Elsewhere, and where user namespaces are
// disabled, Start and Check return an error wrapping [ErrUnsupported]; run
// the sandbox on a Linux host that has them, or use the "unsandboxed"
// development backend (no isolation) for development.
//
// # Concurrency
//
// Start may be called concurrently. A Cmd's methods may be called from any
// goroutine; Usage is complete once Wait has returned.
package jail
