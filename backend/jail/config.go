package jail

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"time"
)

// Defaults used for the zero value of each [Config] field.
const (
	DefaultMemoryBytes    int64 = 1 << 30   // 1 GiB
	DefaultProcesses            = 256       // tasks (threads count too)
	DefaultWorkspaceBytes int64 = 1 << 30   // 1 GiB tmpfs at /workspace
	DefaultTmpBytes       int64 = 256 << 20 // 256 MiB tmpfs at /tmp
	DefaultOpenFiles            = 1024
	// DefaultCPUSeconds is RLIMIT_CPU: CPU time (not wall time) per process.
	// It is large because a persistent worker lives for a whole agent turn;
	// wall-clock limits belong to the caller (cancel the context).
	DefaultCPUSeconds = 3600
	// DefaultSetupHostID is the host uid and gid that the jail's setup stage
	// (inside uid 0) is mapped to when the caller is root.
	DefaultSetupHostID = 65534
	// DefaultPayloadHostID is the host uid and gid that the payload (inside
	// uid 1000) is mapped to when the caller is root.
	DefaultPayloadHostID = 100000
	// PayloadID is the uid and gid the payload runs as inside the jail when
	// the caller is root. Rootless jails run the payload as inside uid 0
	// with every capability removed (see the package documentation).
	PayloadID = 1000
	// MaxFilesBytes bounds the total size of [Config.Files].
	MaxFilesBytes = 64 << 20
)

// Config holds the limits of a jail and the interpreter it can run. The zero
// value of every field means the documented default.
type Config struct {
	// Python is the host interpreter. Default: /usr/bin/python3 if it
	// exists, else python3 from PATH. Symlinks and shims (such as pyenv's
	// shell-script shims) are resolved to the real binary. Unless the
	// binary lives under /usr, its install prefix is mounted read-only at the
	// same path inside the jail, so an interpreter whose RUNPATH points into
	// its own prefix (pyenv, a 0700 home directory) works unchanged.
	Python string

	// MemoryBytes is the memory limit, enforced by a memory cgroup (and
	// swap limit) where the host lets us create one. Default 1 GiB.
	MemoryBytes int64
	// AddressSpaceBytes is RLIMIT_AS for the payload. Zero means the
	// default: 2×MemoryBytes, at least MemoryBytes+1 GiB, because address
	// space is not memory (thread stacks, malloc arenas and the Go runtime
	// reserve far more than they touch). Negative means no RLIMIT_AS.
	AddressSpaceBytes int64
	// Processes bounds the number of tasks (processes and threads): cgroup
	// pids.max where available, and RLIMIT_NPROC always. Default 256.
	Processes int
	// WorkspaceBytes is the size of the writable tmpfs at /workspace.
	// Default 1 GiB.
	WorkspaceBytes int64
	// TmpBytes is the size of the writable tmpfs at /tmp (and /dev/shm).
	// Default 256 MiB.
	TmpBytes int64
	// OpenFiles is RLIMIT_NOFILE. Default 1024 (capped by the host's hard
	// limit, which a jail cannot raise).
	OpenFiles int
	// FileSizeBytes is RLIMIT_FSIZE. Default WorkspaceBytes.
	FileSizeBytes int64
	// CPUSeconds is RLIMIT_CPU per process. Default [DefaultCPUSeconds].
	CPUSeconds int
	// Files are placed read-only under /codemode inside the jail: the key
	// "tools/__init__.py" becomes /codemode/tools/__init__.py. Keys are
	// slash-separated relative paths without "..". The total size is
	// bounded by [MaxFilesBytes].
	Files map[string][]byte
	// ExtraReadOnly lists more host paths to bind read-only at the same
	// path inside the jail. Paths under /usr are already visible; paths
	// inside the jail's own /proc, /dev, /etc, /tmp, /workspace and
	// /codemode are refused.
	ExtraReadOnly []string

	// SetupHostID and PayloadHostID choose the host ids used when the
	// caller is root. Defaults [DefaultSetupHostID] and
	// [DefaultPayloadHostID]. Both must be unprivileged (non-zero) ids that
	// own nothing of value on the host, differ from each other and fit a
	// 32-bit id (at most 1<<32-2); [Start] refuses others. They are ignored
	// when rootless.
	SetupHostID   int
	PayloadHostID int
}

// Spec describes what to run inside the jail.
type Spec struct {
	// Args is argv. Args[0] is the program path inside the jail; a name
	// without "/" is looked up in the PATH of Env (default
	// /usr/local/bin:/usr/bin:/bin).
	Args []string
	// Self runs the host binary itself (the running executable) with
	// argv = Args, so Args[0] is the argv0 it will see. Programs use this
	// with an init() hook keyed on argv0. The jail's own setup never runs
	// host code; only a payload started this way does.
	Self bool
	// Env is the exact environment of the payload. Nothing else leaks in.
	Env []string
	// Dir is the working directory inside the jail. Default /workspace.
	Dir string
	// Stdin, Stdout and Stderr behave as in [os/exec.Cmd]; nil means
	// /dev/null.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// ExtraFiles become fd 3, 4, ... of the payload, as in
	// [os/exec.Cmd.ExtraFiles].
	ExtraFiles []*os.File

	// inProcess names a stage that the jail's init runs in its own
	// process, as pid 1, instead of starting a payload (one exec less):
	// one of package initstage's (the supervisor's). Args is its argv.
	// Used by [Backend].
	inProcess string
	// template runs the payload as a template that forks sessions: it
	// gets the template's seccomp filter, and the jail lasts until the
	// last of its sessions has ended.
	template bool
}

// Enforcement says which protections are really in force for one jail. Every
// field is set from what the setup actually achieved, not from what was
// asked for.
type Enforcement struct {
	UserNS, MountNS, PIDNS, NetNS, IPCNS, UTSNS, CgroupNS bool

	Seccomp      bool // the syscall filter is loaded (with TSYNC)
	NoNewPrivs   bool // PR_SET_NO_NEW_PRIVS is set
	CapsDropped  bool // bounding, permitted, effective, inheritable and ambient sets are empty
	Securebits   bool // SECBIT_NOROOT and friends are set and locked
	ReadOnlyRoot bool // / and /usr are read-only; only /workspace, /tmp and /dev/shm are writable
	Loopback     bool // a private loopback is up; no other interface exists

	// Forked is true when the session was forked from a template process
	// (the default of a [Backend], see [Backend.Cold]) rather than started
	// cold. Every other field
	// is then read back from the session itself after its setup.
	Forked bool

	// Rootless is true when the caller was not root: one uid is mapped
	// (inside 0 → the caller's uid), the payload keeps inside uid 0 with
	// no capabilities, and cgroups are usually unavailable.
	Rootless bool
	// UIDMap describes the uid and gid mapping, e.g.
	// "inside 0→host 65534 (setup), inside 1000→host 100000 (payload)".
	UIDMap string
	// PayloadUID and PayloadGID are the ids of the payload inside the jail.
	PayloadUID, PayloadGID int

	// CgroupVersion is "v1", "v2", "v1+v2" (controllers on different
	// hierarchies) or "" when no cgroup limit is enforced.
	CgroupVersion     string
	CgroupMemory      bool  // memory limit enforced by a cgroup
	CgroupMemoryBytes int64 // the limit written
	CgroupSwap        bool  // swap is limited too (memsw / memory.swap.max)
	CgroupPids        bool  // pids limit enforced by a cgroup
	CgroupPidsMax     int   // the limit written

	// Rlimits holds the resource limits applied to the payload, as read
	// back after setting them, keyed "AS", "CORE", "CPU", "FSIZE",
	// "NOFILE", "NPROC". A missing key means not applied.
	Rlimits map[string]uint64
}

// String renders e as a short multi-line summary.
func (e Enforcement) String() string {
	var b strings.Builder
	yes := func(name string, ok bool) {
		v := "no"
		if ok {
			v = "yes"
		}
		fmt.Fprintf(&b, "%-14s %s\n", name+":", v)
	}
	yes("user ns", e.UserNS)
	yes("mount ns", e.MountNS)
	yes("pid ns", e.PIDNS)
	yes("net ns", e.NetNS)
	yes("ipc ns", e.IPCNS)
	yes("uts ns", e.UTSNS)
	yes("cgroup ns", e.CgroupNS)
	yes("seccomp", e.Seccomp)
	yes("no_new_privs", e.NoNewPrivs)
	yes("caps dropped", e.CapsDropped)
	yes("securebits", e.Securebits)
	yes("ro root", e.ReadOnlyRoot)
	yes("loopback only", e.Loopback)
	yes("rootless", e.Rootless)
	yes("forked", e.Forked)
	fmt.Fprintf(&b, "%-14s %s\n", "uid map:", e.UIDMap)
	cg := e.CgroupVersion
	if cg == "" {
		cg = "none"
	}
	fmt.Fprintf(&b, "%-14s %s (memory %v %d, swap %v, pids %v %d)\n", "cgroups:", cg,
		e.CgroupMemory, e.CgroupMemoryBytes, e.CgroupSwap, e.CgroupPids, e.CgroupPidsMax)
	keys := make([]string, 0, len(e.Rlimits))
	for k := range e.Rlimits {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b.WriteString("rlimits:       ")
	for i, k := range keys {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s=%d", k, e.Rlimits[k])
	}
	b.WriteString("\n")
	return b.String()
}

// Usage reports what happened at the limits of a jail. It is complete once
// [Cmd.Wait] has returned.
type Usage struct {
	// OOMKills counts processes killed by the memory cgroup's OOM killer.
	OOMKills int
	// MemoryPeakBytes is the memory cgroup's high-water mark, when known.
	MemoryPeakBytes int64
	// PidsLimitHits counts forks refused by the pids cgroup.
	PidsLimitHits int
}

// Report is the result of [Check].
type Report struct {
	// Enforcement is what a real jail on this host enforced.
	Enforcement Enforcement
	// Python is the resolved interpreter and PythonPrefix the prefix
	// mounted for it ("" when it lives under /usr).
	Python, PythonPrefix string
	// Interfaces lists the network interfaces seen from inside the jail.
	Interfaces []string
	// HostLoopbackReachable is true if a listener on the host's loopback
	// was reachable from inside (it must not be).
	HostLoopbackReachable bool
	// ColdStart is the median time from Start to the exit of
	// `python -c pass` in a jail; BareStart the same for a plain
	// exec of the same interpreter. Runs is how many of each were timed.
	ColdStart, BareStart time.Duration
	Runs                 int
}

// ErrUnsupported is wrapped by [Start] and [Check] when this host cannot
// build a jail: not Linux on amd64, user namespaces disabled, or a kernel
// without the needed system calls.
var ErrUnsupported = errors.New("jail: Linux namespaces are unavailable on this host " +
	"(needs Linux 5.12+ on amd64 with user namespaces enabled); " +
	"run the sandbox on a Linux host that has them, or use the \"unsandboxed\" development backend (no isolation) for development")

// SetupError is returned by [Start] when a step of the jail's setup failed.
// Err is a syscall.Errno where the failing step was a system call, so
// errors.Is(err, syscall.EPERM) works.
type SetupError struct {
	Op  string // the step, e.g. "mount /usr read-only"
	Err error
}

func (e *SetupError) Error() string { return "jail: " + e.Op + ": " + e.Err.Error() }
func (e *SetupError) Unwrap() error { return e.Err }

// withDefaults fills zero fields. It does not resolve the interpreter.
func (c Config) withDefaults() Config {
	if c.MemoryBytes <= 0 {
		c.MemoryBytes = DefaultMemoryBytes
	}
	if c.AddressSpaceBytes == 0 {
		c.AddressSpaceBytes = max(2*c.MemoryBytes, c.MemoryBytes+1<<30)
	}
	if c.Processes <= 0 {
		c.Processes = DefaultProcesses
	}
	if c.WorkspaceBytes <= 0 {
		c.WorkspaceBytes = DefaultWorkspaceBytes
	}
	if c.TmpBytes <= 0 {
		c.TmpBytes = DefaultTmpBytes
	}
	if c.OpenFiles <= 0 {
		c.OpenFiles = DefaultOpenFiles
	}
	if c.FileSizeBytes <= 0 {
		c.FileSizeBytes = c.WorkspaceBytes
	}
	if c.CPUSeconds <= 0 {
		c.CPUSeconds = DefaultCPUSeconds
	}
	if c.SetupHostID <= 0 {
		c.SetupHostID = DefaultSetupHostID
	}
	if c.PayloadHostID <= 0 {
		c.PayloadHostID = DefaultPayloadHostID
	}
	return c
}

// maxHostID is the largest id a uid_map or gid_map line accepts: ids are
// 32-bit and (uid_t)-1 is reserved.
const maxHostID int64 = 1<<32 - 2

// checkHostIDs validates SetupHostID and PayloadHostID (after defaults) for
// a root caller. The kernel truncates ids above 32 bits, so an id such as
// 1<<32 would otherwise map to host uid 0; two equal ids make the kernel
// refuse the mapping with EINVAL, which looks like a host without
// namespaces.
func checkHostIDs(c Config) error {
	for _, f := range []struct {
		name string
		id   int
	}{{"SetupHostID", c.SetupHostID}, {"PayloadHostID", c.PayloadHostID}} {
		if f.id < 1 || int64(f.id) > maxHostID {
			return fmt.Errorf("jail: Config.%s %d is out of range (1 to %d)", f.name, f.id, maxHostID)
		}
	}
	if c.SetupHostID == c.PayloadHostID {
		return fmt.Errorf("jail: Config.SetupHostID and Config.PayloadHostID are both %d; they must differ", c.SetupHostID)
	}
	return nil
}

// checkFiles validates Config.Files and returns their total size.
func checkFiles(files map[string][]byte) (int64, error) {
	var total int64
	for name, data := range files {
		clean := path.Clean(name)
		if name == "" || path.IsAbs(name) || clean != name || clean == "." ||
			clean == ".." || strings.HasPrefix(clean, "../") {
			return 0, fmt.Errorf("jail: Files key %q is not a clean relative path", name)
		}
		total += int64(len(data)) + int64(len(name))
	}
	if total > MaxFilesBytes {
		return 0, fmt.Errorf("jail: Files total %d bytes exceeds the %d byte limit", total, MaxFilesBytes)
	}
	return total, nil
}

// checkExtraPath validates one Config.ExtraReadOnly entry.
func checkExtraPath(p string) error {
	if !path.IsAbs(p) || path.Clean(p) != p || p == "/" {
		return fmt.Errorf("jail: ExtraReadOnly path %q must be absolute, clean and not /", p)
	}
	for _, bad := range []string{"/proc", "/dev", "/codemode", "/etc", "/tmp", "/workspace"} {
		if p == bad || strings.HasPrefix(p, bad+"/") {
			return fmt.Errorf("jail: ExtraReadOnly path %q is inside the jail's own %s", p, bad)
		}
	}
	return nil
}
