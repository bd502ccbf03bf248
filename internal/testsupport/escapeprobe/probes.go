package escapeprobe

// A Probe is one way out of a sandbox, tried from inside it.
type Probe struct {
	// Name names the probe in test output.
	Name string
	// Containment says what holds when the sandbox contains the code.
	Containment string
	// Code is the probe's Python, run after prelude.py: it calls
	// must_fail, must_raise, count and hole for what it tries.
	Code string
}

// Probes are the scenarios of the suite, in the order Run tries them.
var Probes = []Probe{
	{
		Name:        "cgroup-release-agent",
		Containment: "no cgroup hierarchy can be mounted, and no release_agent or notify_on_release file can be opened for writing",
		Code: `
os.makedirs("/tmp/escape-cg", exist_ok=True)
for fstype, data in ((b"cgroup", b"rdma"), (b"cgroup", b"memory"), (b"cgroup2", None)):
    must_fail("mount a %s hierarchy (%s)" % (fstype.decode(), data), lambda f=fstype, d=data: _libc.mount(f, b"/tmp/escape-cg", f, 0, d))
for root, dirs, files in os.walk("/sys/fs/cgroup"):
    for name in ("release_agent", "notify_on_release"):
        if name in files:
            p = os.path.join(root, name)
            must_raise("open %s for writing" % p, lambda p=p: os.open(p, os.O_WRONLY))
`,
	},
	{
		Name:        "host-objects-through-proc",
		Containment: "the host's files cannot be read through /proc/*/root, /proc/*/cwd or above a directory any descriptor in the sandbox holds (the shape of CVE-2024-21626)",
		Code: `
for t in PLANT["secrets"]:
    must_raise("read the host's %s" % t, lambda t=t: open(t, "rb").read())
for pid in pids() + ["self", "thread-self"]:
    for link in ("root", "cwd"):
        for t in PLANT["secrets"]:
            p = "/proc/%s/%s%s" % (pid, link, t)
            must_raise("read " + p, lambda p=p: open(p, "rb").read())
    try:
        fds = os.listdir("/proc/%s/fd" % pid)
    except OSError:
        count()
        continue
    for fd in fds:
        p = "/proc/%s/fd/%s" % (pid, fd)
        try:
            st = os.stat(p)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode):
            for t in PLANT["secrets"]:
                q = p + "/.." * 32 + t
                must_raise("read %s above the directory descriptor %s" % (t, p), lambda q=q: open(q, "rb").read())
`,
	},
	{
		Name:        "ptrace",
		Containment: "no process can be traced: not a child of the code, not pid 1",
		Code: `
import time
child = os.fork()
if child == 0:
    time.sleep(60)
    os._exit(0)
try:
    must_fail("PTRACE_ATTACH a child of the code", lambda: _libc.ptrace(16, child, None, None))
    must_fail("PTRACE_SEIZE pid 1", lambda: _libc.ptrace(0x4206, 1, None, None))
    must_fail("PTRACE_ATTACH pid 1", lambda: _libc.ptrace(16, 1, None, None))
finally:
    os.kill(child, 9)
    os.waitpid(child, 0)
`,
	},
	{
		Name:        "kernel-surface",
		Containment: "keyctl, add_key, io_uring, userfaultfd, perf_event_open, bpf and open_by_handle_at all fail, called with arguments that would succeed where they are allowed",
		Code: `
sc = _libc.syscall
must_fail("keyctl: join a new session keyring", lambda: sc(250, 1, None))
must_fail("add_key to the session keyring", lambda: sc(248, b"user", b"escape", b"x", 1, -3))
params = ctypes.create_string_buffer(120)
must_fail("io_uring_setup", lambda: sc(425, 1, params), fd=True)
must_fail("userfaultfd (user mode only)", lambda: sc(323, 0o2000000 | 1), fd=True)
attr = ctypes.create_string_buffer(128)
struct.pack_into("IIQ", attr, 0, 1, 128, 0)  # PERF_TYPE_SOFTWARE, size, PERF_COUNT_SW_CPU_CLOCK
struct.pack_into("Q", attr, 40, 1 << 5 | 1 << 6)  # exclude_kernel, exclude_hv
must_fail("perf_event_open of this process's CPU clock", lambda: sc(298, attr, 0, -1, -1, 0), fd=True)
battr = ctypes.create_string_buffer(struct.pack("IIII", 2, 4, 4, 1), 128)  # BPF_MAP_TYPE_ARRAY
must_fail("bpf: create a map", lambda: sc(321, 0, battr, 128), fd=True)
fh = ctypes.create_string_buffer(8 + 128)
struct.pack_into("Ii", fh, 0, 128, 0)
mnt = ctypes.c_int()
if sc(303, -100, b"/usr", fh, ctypes.byref(mnt), 0) != 0:
    fh = ctypes.create_string_buffer(struct.pack("IiII", 8, 1, 2, 0))  # FILEID_INO32_GEN: inode 2
must_fail("open_by_handle_at", lambda: sc(304, -100, fh, 0), fd=True)
`,
	},
	{
		Name:        "nested-namespaces-and-mounts",
		Containment: "the code can make no namespace, mount nothing, and change its root neither by pivot_root nor chroot",
		Code: `
for name, flag in (("user", 0x10000000), ("mount", 0x00020000), ("network", 0x40000000), ("pid", 0x20000000), ("cgroup", 0x02000000), ("uts", 0x04000000), ("ipc", 0x08000000)):
    must_fail("unshare a %s namespace" % name, lambda f=flag: _libc.unshare(f))
def clone_user():
    r = _libc.syscall(56, 0x10000000 | 17, None, None, None, None)
    if r == 0:
        os._exit(0)
    if r > 0:
        os.waitpid(r, 0)
    return r
must_fail("clone into a new user namespace", clone_user)
must_fail("mount a tmpfs on /tmp", lambda: _libc.mount(b"none", b"/tmp", b"tmpfs", 0, None))
must_fail("bind-mount / on /tmp", lambda: _libc.mount(b"/", b"/tmp", None, 4096, None))
must_fail("pivot_root", lambda: _libc.syscall(155, b"/tmp", b"/tmp"))
must_fail("chroot", lambda: _libc.chroot(b"/tmp"))
`,
	},
	{
		Name:        "terminal-injection",
		Containment: "no terminal takes injected input (TIOCSTI) on the code's descriptors or /dev/tty",
		Code: `
fds = [0, 1, 2]
try:
    fds.append(os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY))
except OSError:
    count()
for fd in fds:
    must_fail("TIOCSTI on descriptor %d" % fd, lambda fd=fd: _libc.ioctl(fd, 0x5412, b"x"))
`,
	},
	{
		Name:        "raw-and-packet-sockets",
		Containment: "no raw IP or packet socket can be opened",
		Code: `
for name, args in (("raw IPv4", (socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)),
                   ("raw IPv6", (socket.AF_INET6, socket.SOCK_RAW, 58)),
                   ("raw IPv4, any protocol", (socket.AF_INET, socket.SOCK_RAW, 255)),
                   ("packet", (17, socket.SOCK_RAW, 0x0300))):
    must_raise("open a %s socket" % name, lambda a=args: socket.socket(*a))
`,
	},
	{
		Name: "kernel-settings",
		Containment: "no file of /proc/sys or /sys, nor /proc/sysrq-trigger, can be opened for writing, except the settings of the sandbox's own " +
			"network, UTS, IPC and pid namespaces; none is ever written",
		Code: `
own = ("/proc/sys/net/", "/proc/sys/fs/mqueue/", "/proc/sys/user/")
own_kernel = {"ns_last_pid", "hostname", "domainname", "msgmax", "msgmnb", "msgmni", "auto_msgmni", "sem", "shmall", "shmmax", "shmmni", "shm_rmid_forced"}
if tuple(int(x) for x in os.uname().release.split("-")[0].split(".")[:2]) >= (6, 14):
    own_kernel.add("pid_max")  # one per pid namespace since Linux 6.14
def settings(limit=20000):
    for top in ("/proc/sys", "/sys"):
        for root, dirs, files in os.walk(top):
            for name in files:
                p = os.path.join(root, name)
                if p.startswith(own) or (root == "/proc/sys/kernel" and name in own_kernel):
                    continue
                limit -= 1
                if limit < 0:
                    return
                yield p
for p in settings():
    must_raise("open %s for writing" % p, lambda p=p: os.open(p, os.O_WRONLY | os.O_NONBLOCK))
for p in ("/proc/sysrq-trigger", "/proc/sys/kernel/core_pattern", "/proc/sys/kernel/modprobe"):
    must_raise("open %s for writing" % p, lambda p=p: os.open(p, os.O_WRONLY | os.O_NONBLOCK))
`,
	},
	{
		Name:        "device-nodes",
		Containment: "no device node can be made, and /dev holds only null, zero, full, random, urandom and terminal devices",
		Code: `
must_raise("mknod a character device", lambda: os.mknod("/tmp/escape-mem", stat.S_IFCHR | 0o666, os.makedev(1, 1)))
must_raise("mknod a block device", lambda: os.mknod("/tmp/escape-sda", stat.S_IFBLK | 0o666, os.makedev(8, 0)))
harmless = {(1, 3), (1, 5), (1, 7), (1, 8), (1, 9), (5, 0), (5, 2)}
for root, dirs, files in os.walk("/dev"):
    for name in dirs + files:
        p = os.path.join(root, name)
        try:
            st = os.lstat(p)
        except OSError:
            continue
        if stat.S_ISBLK(st.st_mode):
            hole("block device " + p)
        elif stat.S_ISCHR(st.st_mode):
            dev = (os.major(st.st_rdev), os.minor(st.st_rdev))
            count()
            if dev not in harmless and dev[0] != 136:
                hole("character device %s %d:%d" % ((p,) + dev))
`,
	},
	{
		Name:        "privileges",
		Containment: "no_new_privs is set, so setuid and setgid files give nothing, and no capability is held in any set",
		Code: `
st = status(open("/proc/self/status").read())
count()
if st.get("NoNewPrivs") != "1":
    hole("NoNewPrivs is %r: a setuid file would raise the code's privileges" % st.get("NoNewPrivs"))
for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
    count()
    if int(st.get(k, "0"), 16) != 0:
        hole("%s is %s" % (k, st.get(k)))
`,
	},
	{
		Name:        "memfd-exec",
		Containment: "a program run from memory (memfd_create and exec) is held as the code is: no_new_privs, the same seccomp filter, no capabilities",
		Code: `
fd = _libc.memfd_create(b"escape", 0)
if fd < 0:
    count()
else:
    data = open("/bin/cat", "rb").read()
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    try:
        out = subprocess.run(["/proc/self/fd/%d" % fd, "/proc/self/status"], pass_fds=(fd,), capture_output=True, timeout=30)
    except OSError:
        count()
    else:
        mine, theirs = status(open("/proc/self/status").read()), status(out.stdout.decode())
        count()
        if out.returncode != 0:
            hole("the program run from memory failed: %r" % out.stderr[:200])
        for k in ("NoNewPrivs", "Seccomp", "CapEff", "CapPrm", "CapBnd"):
            count()
            if theirs.get(k) != mine.get(k):
                hole("%s of a program run from memory is %r, the code's %r" % (k, theirs.get(k), mine.get(k)))
    os.close(fd)
`,
	},
	{
		Name:        "core-dumps",
		Containment: "no core dump can be written: RLIMIT_CORE is 0 and cannot be raised",
		Code: `
import resource
soft, hard = resource.getrlimit(resource.RLIMIT_CORE)
count()
if soft != 0 or hard != 0:
    hole("RLIMIT_CORE is (%d, %d), not (0, 0)" % (soft, hard))
must_raise("raise RLIMIT_CORE", lambda: resource.setrlimit(resource.RLIMIT_CORE, (1 << 20, 1 << 20)))
`,
	},
	{
		Name:        "host-environment",
		Containment: "no variable of the host's environment reaches any process in the sandbox",
		Code: `
mark = PLANT["mark"]
count()
for k, v in os.environ.items():
    if mark in k or mark in v:
        hole("the variable %s holds the host's mark" % k)
for pid in pids():
    try:
        env = open("/proc/%s/environ" % pid, "rb").read()
    except OSError:
        continue
    count()
    if mark.encode() in env:
        hole("the environment of pid %s holds the host's mark" % pid)
`,
	},
	{
		Name:        "host-loopback",
		Containment: "no listener on the host's loopback can be reached",
		Code: `
for host, port in PLANT["listeners"]:
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    def connect(host=host, port=port, fam=fam):
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.settimeout(3)
        try:
            s.connect((host, port))
        finally:
            s.close()
    must_raise("connect to the host's %s port %d" % (host, port), connect)
`,
	},
}
