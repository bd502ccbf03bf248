# The jail's template process. It runs as the payload of a jail of its own,
# has loaded the codemode runner (without starting it), and forks one
# session per request from the host. Each session enters its own user,
# mount, pid, network, IPC, UTS and cgroup namespaces, builds its own
# writable mounts, drops every privilege and loads the seccomp filter, all
# by running setup plans that the host built (internal/protocol/jailplan: lists of
# system calls, the same a cold jail's init runs for its part); the host
# reads back from the kernel what the session got. It then forks its first worker, which
# calls the loaded runner's main, and execs the sandbox program as the
# session's supervisor (internal/sandbox/supervisor, the supervisor of every
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
# source. 6: the sandbox program (internal/host/sandboxbin), which a session
# execs as its supervisor; workers close it, and the exec closes it. 7: the
# setup plan's interpreter (internal/protocol/jailplan's plan.py), read to EOF at
# start; the plans every session runs before it is chosen are in the
# environment (CODEMODE_ZYGOTE_PLANS), its own plan in its config.
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

import json  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import struct  # noqa: E402
import fcntl  # noqa: E402
import resource  # noqa: E402


def _load_plans():
    """The setup plan's interpreter (internal/protocol/jailplan's plan.py), read
    from fd 7 to EOF, and the plans every session of this template runs
    before it is chosen: "enter" (its namespaces) and "prepare" (its
    mounts, names and loopback). Every system call a session's setup
    makes is in a plan the host built; this program names none."""
    parts = []
    while True:
        b = os.read(7, 1 << 20)
        if not b:
            break
        parts.append(b)
    os.close(7)
    g = {"__name__": "codemode_plan", "__builtins__": __builtins__}
    exec(compile(b"".join(parts), "<codemode-plan>", "exec"), g)
    return g["run_plan"], g["PlanError"], json.loads(os.environ["CODEMODE_ZYGOTE_PLANS"])


run_plan, PlanError, _PLANS = _load_plans()

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

# --- the template --------------------------------------------------------


def template():
    run_plan(_PLANS["name"])
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
    setup = socket.socket(fileno=setup_fd)
    try:
        run_plan(_PLANS["enter"])
        pid = os.fork()
    except PlanError as e:
        _report(setup, {"op": e.op, "errno": e.errno, "msg": e.msg})
        os._exit(126)
    except OSError as e:
        _report(setup, {"op": "fork the session's pid 1", "errno": e.errno or 0, "msg": str(e)})
        os._exit(126)
    if pid:
        os._exit(0)
    _init(setup)


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


def _init(setup):
    """pid 1 of the session: tell the host who we are, get the session's
    config and sockets once the host has put us in our cgroups, run the
    plan that builds and locks the jail, then supervise."""
    try:
        run_plan(_PLANS["prepare"])
    except PlanError as e:
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
        reports = run_plan(cfg["plan"])
    except PlanError as e:
        _report(setup, {"op": e.op, "errno": e.errno, "msg": e.msg})
        os._exit(126)
    except Exception as e:  # a bad config: report, never run
        _report(setup, {"op": "read the session config", "msg": repr(e)})
        os._exit(126)
    # What the setup did, the host reads back from the kernel (/proc);
    # what only this process can see, the plan reports.
    _report(setup, {"reports": reports})
    setup.close()
    try:
        _exec_supervisor(sup_fd, cfg["stage"], cfg["supervisor"], egress_fd)
    except Exception:
        import traceback

        traceback.print_exc()
    os._exit(125)  # the host sees the supervisor socket close


# --- the supervisor ------------------------------------------------------


def _exec_supervisor(sup_fd, stage, cfg, egress_fd=None):
    """Fork the session's first worker from the loaded runner, pass its
    pipes to the host in the supervisor protocol's "spawned" message (so
    that the host talks to the worker while the supervisor starts), then
    become the sandbox program's supervisor (internal/sandbox/supervisor, the one of
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
