//go:build linux

package jailplan

import (
	"encoding/binary"
	"fmt"
	"path"
	"sort"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Names of the results a setup plan reports.
const (
	ReportUID        = "uid"        // the jail's uid, as it sees it
	ReportGID        = "gid"        // its gid
	ReportSecurebits = "securebits" // its securebits
)

// Hostname is the name a jail's UTS namespace gets (and its NIS domain).
const Hostname = "sandbox"

// FilesDir is where a forked session's Files are mounted, read-only.
const FilesDir = "/codemode"

// IDMap is the one id a session forked from a template maps: Inside, onto
// the template's own UID and GID.
type IDMap struct {
	Inside   int
	UID, GID int
}

// Enter is what a session forked from a template does before it forks its
// pid 1: a user namespace that maps m, then its own mount, network, IPC,
// UTS and pid namespaces (the pid namespace's first process is the child
// the caller forks next).
func Enter(m IDMap) Plan {
	var b Builder
	b.Call("create a user namespace", unix.SYS_UNSHARE, Int(unix.CLONE_NEWUSER))
	b.writeFile("deny setgroups", "/proc/self/setgroups", []byte("deny"), unix.O_WRONLY, 0)
	b.writeFile("write gid_map", "/proc/self/gid_map", fmt.Appendf(nil, "%d %d 1", m.Inside, m.GID), unix.O_WRONLY, 0)
	b.writeFile("write uid_map", "/proc/self/uid_map", fmt.Appendf(nil, "%d %d 1", m.Inside, m.UID), unix.O_WRONLY, 0)
	b.Call("create namespaces", unix.SYS_UNSHARE,
		Int(unix.CLONE_NEWNS|unix.CLONE_NEWNET|unix.CLONE_NEWIPC|unix.CLONE_NEWUTS|unix.CLONE_NEWPID))
	return b.Plan()
}

// Named is a plan that names the calling process (its comm, which ps
// shows).
func Named(name string) Plan {
	var b Builder
	b.name(name)
	return b.Plan()
}

func (b *Builder) name(name string) {
	if name != "" {
		b.Call("name the process "+name, unix.SYS_PRCTL, Int(unix.PR_SET_NAME), b.Str(name), Int(0), Int(0), Int(0))
	}
}

// Blank is what a session forked from a template gets before it is
// chosen: its writable mounts, and the locks that hold whatever it will
// run.
type Blank struct {
	Name                     string // the process's name while it waits, if not ""
	WorkspaceBytes, TmpBytes int64
	UID                      int // owner of /workspace, inside
	Rootless                 bool
}

// Prepare is what every session of a template gets before it is chosen,
// as its pid 1: private mounts, its own procfs, empty /workspace, /tmp and
// /dev/shm, its names and its loopback (see [Lock.Names]), and, of its
// privileges, what leaves the capabilities it still needs for the rest
// (the bounding and ambient sets emptied, securebits set and locked; see
// [Lock.Prepared]). A session is taken from the template ahead of its
// request, so none of this is on its start's path.
func Prepare(m Blank) Plan {
	var b Builder
	b.name(m.Name)
	b.mount("make mounts private", "", "/", "", unix.MS_REC|unix.MS_PRIVATE, "")
	const nsd = unix.MS_NOSUID | unix.MS_NODEV
	b.mount("mount /proc", "proc", "/proc", "proc", nsd|unix.MS_NOEXEC, "")
	b.mount("mount tmpfs /workspace", "tmpfs", "/workspace", "tmpfs", nsd,
		fmt.Sprintf("mode=0755,uid=%d,gid=%d,size=%d", m.UID, m.UID, m.WorkspaceBytes))
	b.mount("mount tmpfs /tmp", "tmpfs", "/tmp", "tmpfs", nsd, fmt.Sprintf("mode=1777,size=%d", m.TmpBytes))
	b.mount("mount tmpfs /dev/shm", "tmpfs", "/dev/shm", "tmpfs", nsd, fmt.Sprintf("mode=1777,size=%d", m.TmpBytes))
	b.names()
	b.bounds(m.Rootless, DropAll)
	return b.Plan()
}

// Limits are a jail's rlimits (its core size is always 0). A value above
// the calling process's hard limit is lowered to it: the jail inherits
// that hard limit and cannot raise it.
type Limits struct {
	CPU, FileSize, OpenFiles, Processes uint64
}

// Privileges says how a jail's privileges are dropped.
type Privileges int

const (
	// DropAll empties every capability set, sets and locks securebits
	// (SECBIT_NOROOT, KEEP_CAPS_LOCKED, NO_CAP_AMBIENT_RAISE and, rootless,
	// NO_SETUID_FIXUP) and, with Lock.SetIDs, changes uid and gid.
	DropAll Privileges = iota
	// KeepSetfcap leaves a rootless template CAP_SETFCAP of its own user
	// namespace, carried across the exec of its interpreter as an ambient
	// capability: the kernel lets a nested user namespace map an id onto
	// its parent's uid 0 only if its creator had it. Every session forked
	// from the template drops it with the rest.
	KeepSetfcap
)

// Lock is the part of a setup that both start paths run the same way,
// after their filesystems are built: a cold jail's init, and a session
// forked from a template once it is chosen.
type Lock struct {
	// Name names the process first, if not "".
	Name string
	// Names sets the hostname and NIS domain to [Hostname] and brings lo
	// up (a forked session had this done by [Prepare]).
	Names bool
	// Prepared skips what [Prepare] did of the privilege drop: the
	// bounding and ambient sets, and securebits.
	Prepared bool
	// CgroupNS enters a cgroup namespace rooted at the cgroups the host
	// has put the jail in (a cold jail's init does this before it reads
	// its config).
	CgroupNS bool
	// Files are written under FilesDir, on a tmpfs of its own made
	// read-only after; FilesBytes is their size. A cold jail writes its
	// files while it builds its root.
	Files      map[string][]byte
	FilesBytes int64

	Limits     Limits
	Rootless   bool
	Privileges Privileges
	// SetIDs clears the supplementary groups and sets every uid to UID
	// and every gid to GID (a jail built by root; rootless jails keep 0).
	SetIDs   bool
	UID, GID int
	// ParentDeath has the jail killed when the thread that started it
	// ends (a cold jail's init, whose parent is the host).
	ParentDeath bool
	// Filter is the seccomp filter, as the kernel takes it (struct
	// sock_filter entries), loaded on every thread after no_new_privs.
	Filter []byte
	// Dir is the working directory at the end.
	Dir string
}

// Build is l's plan.
func (l Lock) Build() (Plan, error) {
	if len(l.Filter) == 0 || len(l.Filter)%8 != 0 || len(l.Filter)/8 > 0xffff {
		return Plan{}, fmt.Errorf("jailplan: a seccomp filter of %d bytes (8 per instruction, at most 65535)", len(l.Filter))
	}
	var b Builder
	b.name(l.Name)
	if l.Names {
		b.names()
	}
	if l.CgroupNS {
		b.Call("enter a cgroup namespace rooted at the session's cgroups", unix.SYS_UNSHARE, Int(unix.CLONE_NEWCGROUP))
	}
	if len(l.Files) > 0 {
		if err := b.files(l.Files, l.FilesBytes); err != nil {
			return Plan{}, err
		}
	}
	if err := b.limits(l.Limits); err != nil {
		return Plan{}, err
	}
	b.privileges(l)
	if l.ParentDeath {
		b.Call("set PDEATHSIG", unix.SYS_PRCTL, Int(unix.PR_SET_PDEATHSIG), Int(unix.SIGKILL))
	}
	b.Call("set no_new_privs", unix.SYS_PRCTL, Int(unix.PR_SET_NO_NEW_PRIVS), Int(1), Int(0), Int(0), Int(0))
	b.Call("clear dumpable", unix.SYS_PRCTL, Int(unix.PR_SET_DUMPABLE), Int(0), Int(0), Int(0), Int(0))
	filter := b.Bytes(l.Filter)
	fprog := make([]byte, 16) // struct sock_fprog: the instruction count, then the pointer at 8
	binary.NativeEndian.PutUint16(fprog, uint16(len(l.Filter)/8))
	b.Call("load seccomp filter", unix.SYS_SECCOMP, Int(unix.SECCOMP_SET_MODE_FILTER), Int(unix.SECCOMP_FILTER_FLAG_TSYNC),
		b.Bytes(fprog, Ptr{Off: 8, Buf: BufIndex(filter)})).Expect(0)
	dir := l.Dir
	if dir == "" {
		dir = "/workspace"
	}
	b.Call("chdir "+dir, unix.SYS_CHDIR, b.Str(dir))
	b.Call("read the uid", unix.SYS_GETUID).Reporting(ReportUID)
	b.Call("read the gid", unix.SYS_GETGID).Reporting(ReportGID)
	return b.Plan(), nil
}

// Securebits (linux/securebits.h).
const (
	secbitNoroot                  = 1 << 0
	secbitNorootLocked            = 1 << 1
	secbitNoSetuidFixup           = 1 << 2
	secbitNoSetuidFixupLocked     = 1 << 3
	secbitKeepCapsLocked          = 1 << 5
	secbitNoCapAmbientRaise       = 1 << 6
	secbitNoCapAmbientRaiseLocked = 1 << 7
)

// Securebits is what [Lock] sets for rootless and p.
func Securebits(rootless bool, p Privileges) int64 {
	bits := int64(secbitNoroot | secbitNorootLocked | secbitKeepCapsLocked)
	if p == DropAll {
		bits |= secbitNoCapAmbientRaise | secbitNoCapAmbientRaiseLocked
	}
	if rootless {
		bits |= secbitNoSetuidFixup | secbitNoSetuidFixupLocked
	}
	return bits
}

// bounds empties the bounding set (but for p's capability) and the
// ambient set, and sets and locks securebits: none of it takes a
// capability the process holds now.
func (b *Builder) bounds(rootless bool, p Privileges) {
	keep := -1
	if p == KeepSetfcap {
		keep = unix.CAP_SETFCAP
	}
	for c := 0; c <= 63; c++ {
		if c != keep {
			b.Call("drop capability bounding set", unix.SYS_PRCTL, Int(unix.PR_CAPBSET_DROP), Int(c), Int(0), Int(0), Int(0)).
				Allowing(int(unix.EINVAL))
		}
	}
	if keep < 0 {
		b.Call("clear ambient capabilities", unix.SYS_PRCTL, Int(unix.PR_CAP_AMBIENT), Int(unix.PR_CAP_AMBIENT_CLEAR_ALL), Int(0), Int(0), Int(0)).
			Allowing(int(unix.EINVAL))
	}
	// A kernel that refuses securebits leaves the jail to its other
	// locks; the read-back shows it.
	b.Call("set securebits", unix.SYS_PRCTL, Int(unix.PR_SET_SECUREBITS), Int(Securebits(rootless, p)), Int(0), Int(0), Int(0)).
		Allowing(int(unix.EPERM), int(unix.EINVAL))
}

func (b *Builder) privileges(l Lock) {
	keep := -1
	if l.Privileges == KeepSetfcap {
		keep = unix.CAP_SETFCAP
	}
	if !l.Prepared {
		b.bounds(l.Rootless, l.Privileges)
	}
	if l.SetIDs {
		b.Call("clear supplementary groups", unix.SYS_SETGROUPS, Int(0), Int(0)).OnAllThreads()
		b.Call("setresgid", unix.SYS_SETRESGID, Int(l.GID), Int(l.GID), Int(l.GID)).OnAllThreads()
		b.Call("setresuid", unix.SYS_SETRESUID, Int(l.UID), Int(l.UID), Int(l.UID)).OnAllThreads()
	}
	// struct __user_cap_header_struct, then two __user_cap_data_struct:
	// effective, permitted, inheritable for capabilities 0-31, then 32-63.
	hdr := make([]byte, 8)
	binary.NativeEndian.PutUint32(hdr, unix.LINUX_CAPABILITY_VERSION_3)
	data := make([]byte, 24)
	if keep >= 0 {
		for i := range 3 {
			binary.NativeEndian.PutUint32(data[(keep/32)*12+i*4:], 1<<(keep%32))
		}
	}
	b.Call("clear capability sets", unix.SYS_CAPSET, b.Bytes(hdr), b.Bytes(data)).OnAllThreads()
	if keep >= 0 {
		b.Call("raise the template's ambient capability", unix.SYS_PRCTL, Int(unix.PR_CAP_AMBIENT), Int(unix.PR_CAP_AMBIENT_RAISE), Int(keep), Int(0), Int(0))
	}
	b.Call("read securebits", unix.SYS_PRCTL, Int(unix.PR_GET_SECUREBITS), Int(0), Int(0), Int(0), Int(0)).Reporting(ReportSecurebits)
}

func (b *Builder) limits(l Limits) error {
	for _, r := range []struct {
		name string
		res  int
		v    uint64
	}{
		{"CORE", unix.RLIMIT_CORE, 0},
		{"CPU", unix.RLIMIT_CPU, l.CPU},
		{"FSIZE", unix.RLIMIT_FSIZE, l.FileSize},
		{"NOFILE", unix.RLIMIT_NOFILE, l.OpenFiles},
		{"NPROC", unix.RLIMIT_NPROC, l.Processes},
	} {
		var hard unix.Rlimit
		if err := unix.Getrlimit(r.res, &hard); err != nil {
			return fmt.Errorf("jailplan: RLIMIT_%s: %w", r.name, err)
		}
		v := min(r.v, hard.Max)
		lim := make([]byte, 16) // struct rlimit64: soft, hard
		binary.NativeEndian.PutUint64(lim, v)
		binary.NativeEndian.PutUint64(lim[8:], v)
		b.Call("set RLIMIT_"+r.name, unix.SYS_PRLIMIT64, Int(0), Int(r.res), b.Bytes(lim), Int(0))
	}
	return nil
}

// EffectiveLimit is v as [Lock] sets RLIMIT_name (named as in
// /proc/self/limits' order: CORE, CPU, FSIZE, NOFILE, NPROC, AS): v,
// lowered to the calling process's hard limit.
func EffectiveLimit(res int, v uint64) uint64 {
	var hard unix.Rlimit
	if unix.Getrlimit(res, &hard) != nil {
		return v
	}
	return min(v, hard.Max)
}

func (b *Builder) names() {
	b.Call("set hostname", unix.SYS_SETHOSTNAME, b.Str(Hostname), Int(len(Hostname)))
	b.Call("set domainname", unix.SYS_SETDOMAINNAME, b.Str(Hostname), Int(len(Hostname)))
	b.Call("bring up lo", unix.SYS_SOCKET, Int(unix.AF_INET), Int(unix.SOCK_DGRAM|unix.SOCK_CLOEXEC), Int(0))
	sock := Result(b.Last())
	ifr := make([]byte, unix.IFNAMSIZ+24) // struct ifreq: the name, then ifr_flags
	copy(ifr, "lo")
	// A new network namespace's lo has IFF_LOOPBACK alone.
	binary.NativeEndian.PutUint16(ifr[unix.IFNAMSIZ:], unix.IFF_UP|unix.IFF_LOOPBACK)
	b.Call("bring up lo", unix.SYS_IOCTL, sock, Int(unix.SIOCSIFFLAGS), b.Bytes(ifr))
	b.Call("bring up lo", unix.SYS_CLOSE, sock)
}

func (b *Builder) mount(op, src, target, fstype string, flags uintptr, data string) {
	arg := func(s string) Arg {
		if s == "" {
			return Int(0)
		}
		return b.Str(s)
	}
	b.Call(op, unix.SYS_MOUNT, arg(src), b.Str(target), arg(fstype), Int(flags), arg(data))
}

// writeFile opens name with flags (close-on-exec), writes data whole and
// closes it.
func (b *Builder) writeFile(op, name string, data []byte, flags int, mode uint32) {
	b.Call(op, unix.SYS_OPENAT, Int(unix.AT_FDCWD), b.Str(name), Int(flags|unix.O_CLOEXEC), Int(mode))
	fd := Result(b.Last())
	b.Call(op, unix.SYS_WRITE, fd, b.Bytes(data), Int(len(data))).Expect(int64(len(data)))
	b.Call(op, unix.SYS_CLOSE, fd)
}

// files writes files under FilesDir, on a tmpfs of its own (twice their
// size, and at least 1 MiB: the tmpfs counts blocks and inodes), then makes
// it read-only. Names are relative paths without "." or ".." elements.
func (b *Builder) files(files map[string][]byte, size int64) error {
	const nsd = unix.MS_NOSUID | unix.MS_NODEV
	b.mount("mount tmpfs "+FilesDir, "tmpfs", FilesDir, "tmpfs", nsd, fmt.Sprintf("mode=0755,size=%d", max(size*2+(1<<20), 1<<20)))
	names := make([]string, 0, len(files))
	for name := range files {
		if name == "" || path.IsAbs(name) || path.Clean(name) != name || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("jailplan: file name %q: want a clean relative path", name)
		}
		names = append(names, name)
	}
	sort.Strings(names)
	made := map[string]bool{}
	for _, name := range names {
		dir := path.Dir(name)
		var parts []string
		for d := dir; d != "."; d = path.Dir(d) {
			parts = append(parts, d)
		}
		for i := len(parts) - 1; i >= 0; i-- {
			if d := parts[i]; !made[d] {
				made[d] = true
				b.Call("write "+FilesDir+"/"+name, unix.SYS_MKDIRAT, Int(unix.AT_FDCWD), b.Str(FilesDir+"/"+d), Int(0o755)).
					Allowing(int(syscall.EEXIST))
			}
		}
		b.writeFile("write "+FilesDir+"/"+name, FilesDir+"/"+name, files[name],
			unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW, 0o644)
	}
	b.mount("make "+FilesDir+" read-only", "", FilesDir, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|nsd, "")
	return nil
}
