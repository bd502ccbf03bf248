# The jail's template process. It runs as the payload of a jail of its own,
# has loaded the codemode runner (without starting it), and forks one
# session per request from the host. Each session enters its own user,
# mount, pid, network, IPC, UTS and cgroup namespaces, builds its own
# writable mounts, drops every privilege, loads the seccomp filter the host
# sends and reads back what it got. It then forks its first worker, which
# calls the loaded runner's main, and execs the sandbox program as the
# session's supervisor (internal/supervisor, the supervisor of every
# session, cold or forked): that adopts the worker, speaks the supervisor
# protocol, tracks the workspace, and starts any later worker itself as a
# fresh interpreter. What runs here in Python is only what the fork needs,
# and one message of that protocol: "spawned", with the first worker's
# pipes, sent before the exec so that the host and the worker start
# talking while the supervisor starts.
#
# fds: 3 the control socket (SOCK_SEQPACKET): the host sends one byte with
# one descriptor per session (its setup socket, over which the session
# later gets its supervisor socket, the write end of its stderr pipe and,
# with egress, its egress connector)
# and EOF to retire the template; the template writes one "ready" message
# when it can fork. 4: the runner's source, read to EOF at start. 5: this
# program's own source, which the short bootstrap on the command line
# reads and runs (zygote_linux.go), so that the command line holds no
# source. 6: the sandbox program (internal/sandboxbin), which a session
# execs as its supervisor; workers close it, and the exec closes it.
# A session's supervisor gets fd 3, its socket to the host (and 0-2), and
# with egress fd 4, the egress connector, and fd 5, a socket listening on
# the proxy port of the session's loopback, bound before the first worker
# starts so that its code finds it.
#
# The template holds nothing of any session: everything a session gets
# comes over that session's own setup socket, read by the forked child.
import os
import sys

_BASE_MODULES = set(sys.modules)


def _load_runner():
    parts = []
    while True:
        b = os.read(4, 1 << 20)
        if not b:
            break
        parts.append(b)
    os.close(4)
    g = {"__name__": "codemode_runner", "__builtins__": __builtins__}
    exec(compile(b"".join(parts), "<string>", "exec"), g)
    return g


_RUNNER = _load_runner()
_RUNNER_MODULES = set(sys.modules)

import ctypes  # noqa: E402
import errno  # noqa: E402
import fcntl  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import struct  # noqa: E402
import base64  # noqa: E402

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_NAME = 15
PR_CAPBSET_READ = 23
PR_CAPBSET_DROP = 24
PR_GET_SECUREBITS = 27
PR_SET_SECUREBITS = 28
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
SYS_CAPSET = 126
SYS_SECCOMP = 317
SECCOMP_SET_MODE_FILTER = 1
SECCOMP_FILTER_FLAG_TSYNC = 1

_EXE_FD = 6  # the sandbox program, which a session execs as its supervisor

def _template_packages():
    """The runner's package report for the sys.path the host probed, made
    once: it reads every distribution's metadata."""
    raw = os.environ.get("CODEMODE_ZYGOTE_SYS_PATH", "")
    if not raw:
        return None, None
    saved = sys.path[:]
    try:
        sys.path[:] = [p for p in json.loads(raw) if isinstance(p, str)]
        # The template's interpreter is the host's: its sessions hide the
        # system's packages (backend.go sets CODEMODE_HIDE_SYSTEM_PACKAGES).
        return list(sys.path), _RUNNER["_packages"](True)
    except Exception:
        return None, None
    finally:
        sys.path[:] = saved


_PACKAGES_PATH, _PACKAGES = _template_packages()
_REPORT = _RUNNER["_packages"]

_NS_NAMES = ("user", "mnt", "pid", "net", "ipc", "uts", "cgroup")
_TEMPLATE_NS = {n: os.stat("/proc/self/ns/" + n).st_ino for n in _NS_NAMES}


class StepError(Exception):
    def __init__(self, op, err):
        super().__init__(op)
        self.op = op
        self.errno = getattr(err, "errno", 0) or 0
        self.msg = str(err)


def _check(op, r):
    if r != 0:
        e = ctypes.get_errno()
        raise StepError(op, OSError(e, os.strerror(e)))


def _step(op, fn, *args):
    try:
        return fn(*args)
    except StepError:
        raise
    except OSError as e:
        raise StepError(op, e)


def _write_proc(name, data):
    fd = os.open("/proc/self/" + name, os.O_WRONLY)
    try:
        os.write(fd, data.encode())
    finally:
        os.close(fd)


def _mount(op, src, target, fstype, flags, data=None):
    _check(op, _libc.mount(src.encode() if src else None, target.encode(),
                           fstype.encode() if fstype else None, flags,
                           data.encode() if data else None))


# --- the template --------------------------------------------------------


def _name(name):
    """Name this process (its comm, which ps shows): a template, a blank
    session forked ahead and a session in use can be told apart."""
    buf = ctypes.create_string_buffer(name)
    _libc.prctl(PR_SET_NAME, ctypes.addressof(buf), 0, 0, 0)


def template():
    _name(b"codemode-zygote")
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # forked children are reaped by the kernel
    ctl = socket.socket(fileno=3)
    ctl.setblocking(True)
    ctl.send(b"ready")
    fdsize = struct.calcsize("1i")
    while True:
        try:
            msg, anc, _, _ = ctl.recvmsg(16, socket.CMSG_SPACE(fdsize))
        except InterruptedError:
            continue
        fds = []
        for level, kind, data in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                n = len(data) // 4
                fds.extend(struct.unpack("%di" % n, data[: n * 4]))
        if not msg:
            for fd in fds:
                os.close(fd)
            os._exit(0)  # retired: the jail's init waits for the sessions
        if len(fds) != 1:
            for fd in fds:
                os.close(fd)
            continue
        try:
            pid = os.fork()
        except OSError:
            pid = -1
        if pid == 0:
            try:
                ctl.close()
                _session(*fds)
            finally:
                os._exit(125)
        for fd in fds:
            os.close(fd)


def _session(setup_fd):
    """The first child of the template: new namespaces, then the fork
    that makes the session's pid 1."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    uid, gid = os.getuid(), os.getgid()
    inside = int(os.environ.get("CODEMODE_ZYGOTE_UID", "0"))
    setup = socket.socket(fileno=setup_fd)
    try:
        _check("create a user namespace", _libc.unshare(CLONE_NEWUSER))
        _step("deny setgroups", _write_proc, "setgroups", "deny")
        _step("write gid_map", _write_proc, "gid_map", "%d %d 1" % (inside, gid))
        _step("write uid_map", _write_proc, "uid_map", "%d %d 1" % (inside, uid))
        _check("create namespaces", _libc.unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWPID))
        pid = os.fork()
    except StepError as e:
        _report(setup, {"op": e.op, "errno": e.errno, "msg": e.msg})
        os._exit(126)
    if pid:
        os._exit(0)
    _init(setup, inside)


def _report(sock, obj):
    try:
        sock.sendall(json.dumps(obj).encode() + b"\n")
    except OSError:
        pass


def _read_line(sock, limit, buf):
    while b"\n" not in buf:
        b = sock.recv(1 << 20)
        if not b:
            return None
        buf += b
        if len(buf) > limit:
            return None
    return bytes(buf[: buf.index(b"\n")])


def _init(setup, inside):
    """pid 1 of the session: tell the host who we are, get the session's
    config and sockets once the host has put us in our cgroups, build and
    lock the jail, then supervise."""
    _name(b"codemode-spare")
    try:
        _prepare(inside)
        fixed = _read_fixed()
    except StepError as e:
        _report(setup, {"op": e.op, "errno": e.errno, "msg": e.msg})
        os._exit(126)
    # Say hello: the host reads our pid from the credentials the kernel
    # attaches (SO_PASSCRED), translated into its own pid namespace.
    try:
        setup.sendmsg([b"hello\n"])
        first, anc, _, _ = setup.recvmsg(1 << 16, socket.CMSG_SPACE(struct.calcsize("3i")))
    except OSError:
        os._exit(125)
    fds = []
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            n = len(data) // 4
            fds.extend(struct.unpack("%di" % n, data[: n * 4]))
    if not first or len(fds) not in (2, 3):
        os._exit(125)  # the host is gone, or this is not the host
    _name(b"codemode-forked")
    sup_fd, err_fd = fds[:2]
    egress_fd = fds[2] if len(fds) == 3 else None
    os.dup2(err_fd, 2)
    os.close(err_fd)
    os.set_blocking(2, True)
    try:
        line = _read_line(setup, 256 << 20, bytearray(first))
    except OSError:
        os._exit(125)
    if line is None:
        os._exit(125)
    try:
        cfg = json.loads(line)
        enf = _build(cfg, inside, fixed)
    except StepError as e:
        _report(setup, {"op": e.op, "errno": e.errno, "msg": e.msg})
        os._exit(126)
    except Exception as e:  # a bad config: report, never run
        _report(setup, {"op": "read the session config", "msg": repr(e)})
        os._exit(126)
    _report(setup, {"enf": enf})
    setup.close()
    try:
        _exec_supervisor(sup_fd, cfg["stage"], cfg["supervisor"], egress_fd)
    except Exception:
        import traceback

        traceback.print_exc()
    os._exit(125)  # the host sees the supervisor socket close


def _prepare(inside):
    """What every session of this template gets, done before the session
    is chosen: its own procfs, empty /workspace, /tmp and /dev/shm, its
    name and its loopback."""
    ws = int(os.environ.get("CODEMODE_ZYGOTE_WORKSPACE_BYTES", "0"))
    tmp = int(os.environ.get("CODEMODE_ZYGOTE_TMP_BYTES", "0"))
    _mount("make mounts private", None, "/", None, MS_REC | MS_PRIVATE)
    nsd = MS_NOSUID | MS_NODEV
    _mount("mount /proc", "proc", "/proc", "proc", nsd | MS_NOEXEC)
    _mount("mount tmpfs /workspace", "tmpfs", "/workspace", "tmpfs", nsd,
           "mode=0755,uid=%d,gid=%d,size=%d" % (inside, inside, ws))
    _mount("mount tmpfs /tmp", "tmpfs", "/tmp", "tmpfs", nsd, "mode=1777,size=%d" % tmp)
    _mount("mount tmpfs /dev/shm", "tmpfs", "/dev/shm", "tmpfs", nsd, "mode=1777,size=%d" % tmp)
    _step("set hostname", socket.sethostname, "sandbox")
    _check("set domainname", _libc.setdomainname(b"sandbox", 7))
    _step("bring up lo", _lo_up)


def _build(cfg, inside, fixed):
    if cfg["workspace_bytes"] != int(os.environ.get("CODEMODE_ZYGOTE_WORKSPACE_BYTES", "0")) or \
            cfg["tmp_bytes"] != int(os.environ.get("CODEMODE_ZYGOTE_TMP_BYTES", "0")):
        raise StepError("check the template's mount sizes", ValueError("the session asks for other sizes"))
    _check("enter a cgroup namespace rooted at the session's cgroups", _libc.unshare(CLONE_NEWCGROUP))
    nsd = MS_NOSUID | MS_NODEV
    files = cfg.get("files") or {}
    if files:
        _mount("mount tmpfs /codemode", "tmpfs", "/codemode", "tmpfs", nsd,
               "mode=0755,size=%d" % max(cfg.get("files_bytes", 0) * 2 + (1 << 20), 1 << 20))
        for name in sorted(files):
            _step("write /codemode/" + name, _write_file, "/codemode/" + name, base64.b64decode(files[name]))
        _mount("make /codemode read-only", None, "/codemode", None, MS_REMOUNT | MS_BIND | MS_RDONLY | nsd)
    for name, v in sorted(cfg["rlimits"].items()):
        res = getattr(resource, "RLIMIT_" + name)
        hard = resource.getrlimit(res)[1]
        if hard != resource.RLIM_INFINITY:
            v = min(v, hard)
        _step("set RLIMIT_" + name, resource.setrlimit, res, (v, v))
    securebits = _drop_caps(cfg.get("rootless", False))
    _check("set no_new_privs", _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
    _check("clear dumpable", _libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0))
    _load_seccomp(base64.b64decode(cfg["seccomp"]))
    _step("chdir /workspace", os.chdir, "/workspace")
    return _read_back(cfg, securebits, fixed)


def _write_file(path, data):
    d = os.path.dirname(path)
    os.makedirs(d, mode=0o755, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
    finally:
        os.close(fd)


def _lo_up():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        ifr = fcntl.ioctl(s, 0x8913, struct.pack("16sH14x", b"lo", 0))  # SIOCGIFFLAGS
        flags = struct.unpack("16sH", ifr[:18])[1]
        fcntl.ioctl(s, 0x8914, struct.pack("16sH14x", b"lo", flags | 1))  # SIOCSIFFLAGS, IFF_UP
    finally:
        s.close()


def _drop_caps(rootless):
    bits = 1 | 2 | 32 | 64 | 128  # NOROOT(+LOCKED), KEEP_CAPS_LOCKED, NO_CAP_AMBIENT_RAISE(+LOCKED)
    if rootless:
        bits |= 4 | 8  # NO_SETUID_FIXUP(+LOCKED)
    ok = _libc.prctl(PR_SET_SECUREBITS, bits, 0, 0, 0) == 0
    for cap in range(64):
        if _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() != errno.EINVAL:
            _check("drop capability bounding set", -1)
    _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    hdr = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this thread
    data = (ctypes.c_uint32 * 6)()
    _check("clear capability sets", _libc.syscall(SYS_CAPSET, hdr, data))
    return ok


def _load_seccomp(prog):
    n = len(prog) // 8
    buf = ctypes.create_string_buffer(prog, len(prog))

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = SockFprog(n, ctypes.addressof(buf))
    _check("load seccomp filter", _libc.syscall(SYS_SECCOMP, SECCOMP_SET_MODE_FILTER,
                                                SECCOMP_FILTER_FLAG_TSYNC, ctypes.byref(fprog)))


def _read_fixed():
    """What the session's own namespaces, mounts and loopback are, read
    back once they are made: nothing changes them afterwards (the session
    filter denies mount, unshare and setns)."""
    ns = {}
    for n in _NS_NAMES:
        try:
            ns[n] = os.stat("/proc/self/ns/" + n).st_ino != _TEMPLATE_NS[n]
        except OSError:
            ns[n] = False
    ro = all(os.statvfs(p).f_flag & os.ST_RDONLY for p in ("/", "/usr", "/etc"))
    lo = False
    try:
        names = [n for _, n in socket.if_nameindex()]
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            ifr = fcntl.ioctl(s, 0x8913, struct.pack("16sH14x", b"lo", 0))
        finally:
            s.close()
        lo = names == ["lo"] and struct.unpack("16sH", ifr[:18])[1] & 1 == 1
    except OSError:
        pass
    return {
        "UserNS": ns["user"], "MountNS": ns["mnt"], "PIDNS": ns["pid"] and os.getpid() == 1,
        "NetNS": ns["net"], "IPCNS": ns["ipc"], "UTSNS": ns["uts"] and socket.gethostname() == "sandbox",
        "ReadOnlyRoot": bool(ro), "Loopback": lo,
    }


def _read_back(cfg, securebits, fixed):
    """What this session really has, read from the kernel after setup."""
    status = {}
    with open("/proc/self/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            status[k] = v.strip()
    caps = all(int(status.get(k, "1"), 16) == 0 for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"))
    rl = {}
    for name in ("CORE", "CPU", "FSIZE", "NOFILE", "NPROC"):
        rl[name] = resource.getrlimit(getattr(resource, "RLIMIT_" + name))[0]
    hard_as = resource.getrlimit(resource.RLIMIT_AS)[1]
    if cfg.get("as", -1) >= 0:
        rl["AS"] = cfg["as"] if hard_as == resource.RLIM_INFINITY else min(cfg["as"], hard_as)
    sb = _libc.prctl(PR_GET_SECUREBITS, 0, 0, 0, 0)
    try:
        cgroup_ns = os.stat("/proc/self/ns/cgroup").st_ino != _TEMPLATE_NS["cgroup"]
    except OSError:
        cgroup_ns = False
    enf = dict(fixed)
    enf.update({
        "CgroupNS": cgroup_ns,
        "Seccomp": status.get("Seccomp") == "2",
        "NoNewPrivs": status.get("NoNewPrivs") == "1",
        "CapsDropped": caps,
        "Securebits": securebits and sb >= 0 and sb & 3 == 3,
        "PayloadUID": os.getuid(), "PayloadGID": os.getgid(),
        "Rlimits": {k: min(v, (1 << 64) - 1) if v >= 0 else (1 << 64) - 1 for k, v in rl.items()},
    })
    return enf


# --- the supervisor ------------------------------------------------------


def _exec_supervisor(sup_fd, stage, cfg, egress_fd=None):
    """Fork the session's first worker from the loaded runner, pass its
    pipes to the host in the supervisor protocol's "spawned" message (so
    that the host talks to the worker while the supervisor starts), then
    become the sandbox program's supervisor (internal/supervisor, the one of
    every session), which adopts the worker: its Config is cfg with the
    worker's pid added, fd 3 the supervisor socket, and with egress fd 4
    the egress connector and fd 5 the proxy port's listening socket;
    nothing else open."""
    sup = dict(cfg)
    sup.pop("egress_fd", None)
    sup.pop("egress_listen_fd", None)
    keep = []
    if egress_fd is not None:
        # Listen before the worker starts: its first block may connect.
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(("127.0.0.1", cfg.get("egress_port") or 3128))
        ls.listen(64)
        keep = [egress_fd, ls.detach()]
        sup["egress_fd"], sup["egress_listen_fd"] = 4, 5
    pid, pipes = _spawn(cfg)
    sock = socket.socket(fileno=sup_fd)
    sock.setblocking(True)
    line = json.dumps({"op": "spawned", "fds": len(pipes), "pid": pid}, separators=(",", ":")).encode() + b"\n"
    n = sock.sendmsg([line], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("%di" % len(pipes), *pipes))])
    sock.sendall(line[n:])
    sup_fd = sock.detach()
    for fd in pipes:
        os.close(fd)
    # Move the descriptors to keep above the fixed numbers first, so that
    # placing one cannot close another.
    keep = [sup_fd] + keep
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, _EXE_FD + 1) for fd in keep]
    for fd in keep:
        os.close(fd)
    for i, fd in enumerate(high):
        os.dup2(fd, 3 + i)  # dup2 clears close-on-exec on the copy
        os.close(fd)
    os.set_inheritable(_EXE_FD, False)  # executed, then closed by the exec
    os.closerange(3 + len(high), _EXE_FD)
    os.closerange(_EXE_FD + 1, 1 << 16)
    for s in (signal.SIGPIPE, signal.SIGXFSZ):  # as a cold session's supervisor has them
        signal.signal(s, signal.SIG_DFL)
    sup["adopt"] = {"pid": pid}
    env = {k: os.environ[k] for k in ("PATH", "LANG") if k in os.environ}
    os.execve(_EXE_FD, [stage, json.dumps(sup, separators=(",", ":"))], env)


def _spawn(cfg):
    devnull = os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC)
    made = []
    try:
        for _ in range(4):
            made.extend(os.pipe2(os.O_CLOEXEC))
    except OSError:
        for fd in made + [devnull]:
            os.close(fd)
        raise
    out_r, out_w, err_r, err_w, in_r, in_w, ctl_r, ctl_w = made
    pid = os.fork()
    if pid == 0:
        try:
            _worker(cfg, devnull, out_w, err_w, in_r, ctl_w)
        finally:
            os._exit(127)
    for fd in (devnull, out_w, err_w, in_r, ctl_w):
        os.close(fd)
    return pid, [in_w, ctl_r, out_r, err_r]


def _worker(cfg, devnull, out_w, err_w, in_r, ctl_w):
    for s in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, signal.SIG_DFL)
    os.setpgid(0, 0)
    for i, fd in enumerate((devnull, out_w, err_w, in_r, ctl_w)):
        os.dup2(fd, i)  # dup2 clears close-on-exec on the copy
    os.closerange(5, 1 << 16)
    for res, v in ((resource.RLIMIT_AS, cfg.get("worker_address_space", 0)),
                   (resource.RLIMIT_NPROC, cfg.get("worker_processes", 0))):
        if v and v > 0:
            hard = resource.getrlimit(res)[1]
            if hard != resource.RLIM_INFINITY:
                v = min(v, hard)
            resource.setrlimit(res, (v, v))
    env = {}
    for kv in cfg.get("env") or []:
        k, sep, v = kv.partition("=")
        if sep:
            env[k] = v
    env["CODEMODE_WORKDIR"] = cfg.get("workdir", "")
    if cfg.get("files_dir"):
        env["CODEMODE_FILES_DIR"] = cfg["files_dir"]
    if cfg.get("sys_path"):
        env["CODEMODE_SYS_PATH"] = json.dumps(cfg["sys_path"])
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cfg.get("workdir") or "/workspace")
    # The worker sees the modules a freshly started one would: the
    # template's own tools are dropped (their memory stays shared).
    for name in set(sys.modules) - _RUNNER_MODULES:
        del sys.modules[name]
    rnd = sys.modules.get("random")
    if rnd is not None:
        rnd.seed()
    # State the runner made when it was loaded, once for all sessions:
    # made again, so that nothing of it is shared.
    _RUNNER["_chan"] = _RUNNER["_Channel"](3, 4)
    if _PACKAGES is not None and list(cfg.get("sys_path") or []) == _PACKAGES_PATH:
        _RUNNER["_packages"] = lambda hide_system=False: _PACKAGES if hide_system else _REPORT(hide_system)
    main = _RUNNER["main"]
    protocol_error = _RUNNER["ProtocolError"]
    code = 0
    try:
        main()
    except protocol_error:
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass
    os._exit(code)


if __name__ == "__main__":
    template()
