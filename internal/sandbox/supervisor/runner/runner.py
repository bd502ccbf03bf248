# The codemode Python worker. The sandbox server starts it once per session
# and sends it blocks of code over a control pipe; see internal/both/server/doc.go.
#
# fds: 0 /dev/null, 1 and 2 pipes the server captures, 3 frames from the
# server, 4 frames to the server. Frames are JSON lines. When the backend
# probed the interpreter, this file arrives compiled on fd 5 instead of as
# -c source (compiling it costs more than the rest of the start-up).
#
# Start-up time matters (a sandbox starts per agent turn), so this file
# imports only built-in modules at start: JSON goes through the _json
# accelerator directly, locks through _thread, signals through _signal.
# traceback and linecache are imported the first time a block fails.
import _json
import _signal
import _thread
import builtins
import os
import sys

_RFD, _WFD = 3, 4

# The frame protocol this runner speaks with the server. A test holds these
# against the Go side (internal/protocol/wire), so the two cannot drift apart.
PROTOCOL_VERSION = 3
KIND_READY = "ready"
KIND_RUN = "run"
KIND_TOOL_CALL = "tool_call"
KIND_TOOL_RESULT = "tool_result"
KIND_DONE = "done"
KIND_INTERRUPT = "interrupt"
_FILENAME = "<code-mode>"
_MAX_LINE = 64 << 20


class CodeTimeout(BaseException):
    """Raised inside a block that ran past its time limit.

    It derives from BaseException so that ``except Exception`` in user code
    does not swallow it.
    """


class ProtocolError(Exception):
    """The control channel to the host is broken."""


class ToolError(Exception):
    """A tool call failed on the host."""

    def __init__(self, type, message, trace=None):
        super().__init__(f"{type}: {message}")
        self.type = type
        self.message = message
        self.trace = trace


class HTTPStatusError(ToolError):
    """A tool call failed with an HTTP status."""

    def __init__(self, message, status_code, body=None):
        super().__init__("HTTPStatusError", message)
        self.status_code = status_code
        self.body = body


class ToolDeniedError(ToolError):
    """A person declined to approve the tool call; the tool did not run."""

    def __init__(self, message):
        super().__init__("ToolDeniedError", message)


class BudgetExceeded(ToolError):
    """A budget of the block or the turn ran out; the call was not made."""

    def __init__(self, message):
        super().__init__("BudgetExceeded", message)


# --- JSON ------------------------------------------------------------------


class _ScanContext:
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int

    @staticmethod
    def parse_constant(name):
        raise ValueError(f"invalid JSON constant {name}")


_scan = _json.make_scanner(_ScanContext())


def _loads(text):
    obj, end = _scan(text, 0)
    if end != len(text) and text[end:].strip():
        raise ValueError("data after the JSON value")
    return obj


def _json_default(o):
    if isinstance(o, (bytes, bytearray, memoryview)):
        import base64

        return {"kind": "bytes", "data": base64.b64encode(bytes(o)).decode("ascii"), "encoding": "base64"}
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    if hasattr(o, "isoformat"):
        return o.isoformat()
    return repr(o)


# ensure_ascii off, compact separators, no NaN (it is not JSON).
_encode = _json.make_encoder({}, _json_default, _json.encode_basestring, None, ":", ",", False, False, False)


def _dumps(obj):
    return "".join(_encode(obj, 0))


_encode_str = _json.encode_basestring
_TOOL_CALL_HEAD = _dumps({"kind": KIND_TOOL_CALL, "id": ""})[:-2]


# --- control channel ---------------------------------------------------------


class _Cond:
    """A condition variable over _thread locks."""

    def __init__(self):
        self._lock = _thread.allocate_lock()
        self._waiters = []

    def __enter__(self):
        self._lock.acquire()

    def __exit__(self, *exc):
        self._lock.release()

    def wait(self):
        w = _thread.allocate_lock()
        w.acquire()
        self._waiters.append(w)
        self._lock.release()
        try:
            w.acquire()
        finally:
            self._lock.acquire()
            try:
                self._waiters.remove(w)
            except ValueError:
                pass

    def notify_all(self):
        for w in self._waiters:
            try:
                w.release()
            except RuntimeError:
                pass
        self._waiters = []


class _Channel:
    """Frames to and from the server, shared by every thread.

    Whichever waiting thread finds nobody reading becomes the reader and
    hands frames meant for others over under one condition variable, so a
    lone caller reads its own reply with no thread switch.
    """

    def __init__(self, rfd, wfd):
        self._rfd = rfd
        self._wfd = wfd
        self._wlock = _thread.allocate_lock()
        self._cond = _Cond()
        # The condition's lock, taken with the lock's own (C) context
        # manager: the channel takes it several times per tool call.
        self._lock = self._cond._lock
        self._reading = False
        self._buf = bytearray()
        self._results = {}
        self._waiting = set()
        self._runs = []
        self._closed = None
        self._seq = 0
        self._prefix = os.urandom(6).hex()
        # The threads that called a tool in the current block, numbered in
        # the order of their first call (the main thread is 0): the host
        # traces each call with its thread's number, never its name.
        self._threads_block = None
        self._threads = {}
        # The last interrupt frame: (block id, message). A signal raises
        # CodeTimeout only in the block this names.
        self._interrupt = None
        # How deep the main thread is in call(). While it is in, a signal
        # raises nothing: an exception raised between two steps of the
        # channel's bookkeeping (a chunk read and not yet kept, a reader
        # that never gave up reading) would break the channel for every
        # later block. The channel raises CodeTimeout itself instead, at a
        # point where its state is whole: when it reads the interrupt
        # frame, which the server writes before its signal.
        self.main_depth = 0

    def send_line(self, line):
        data = (line + "\n").encode("utf-8", "surrogatepass")
        with self._wlock:
            try:
                n = os.write(self._wfd, data)
                if n < len(data):
                    view = memoryview(data)[n:]
                    while view:
                        view = view[os.write(self._wfd, view) :]
            except BrokenPipeError:
                raise ProtocolError("the host closed the control pipe") from None

    def _read_frame(self):
        while True:
            i = self._buf.find(b"\n")
            if i >= 0:
                line = self._buf[:i].decode("utf-8", "replace")
                del self._buf[: i + 1]
                return _loads(line)
            if len(self._buf) > _MAX_LINE:
                raise ProtocolError("control frame too large")
            chunk = os.read(self._rfd, 1 << 16)
            if not chunk:
                raise ProtocolError("the host closed the control pipe")
            if not self._buf and chunk.find(b"\n") == len(chunk) - 1:
                # One whole frame, the common case: no buffering.
                return _loads(chunk[:-1].decode("utf-8", "replace"))
            self._buf += chunk

    def _dispatch(self, frame):
        kind = frame.get("kind")
        if kind == KIND_TOOL_RESULT:
            fid = frame.get("id")
            if fid in self._waiting:
                self._results[fid] = frame
        elif kind == KIND_RUN:
            self._runs.append(frame)
        elif kind == KIND_INTERRUPT:
            self._interrupt = (frame.get("block"), frame.get("message"))

    def stop_message(self):
        """The message of an interrupt of the running block when the main
        thread of the process that runs the code asks, or None."""
        it = self._interrupt
        if (
            it is None
            or not _State.running
            or it[0] != _State.block
            or _thread.get_ident() != _MAIN_THREAD
            or os.getpid() != _Kids.pid
        ):
            return None
        return it[1] or "the code was interrupted"

    def _stop_if_interrupted(self, stoppable):
        if stoppable:
            msg = self.stop_message()
            if msg is not None:
                raise CodeTimeout(msg)

    def interrupt_for(self, block):
        """The message of an interrupt of block, or None if there is none.

        Called from the signal handler, on the main thread. When no thread
        reads the channel, it reads what the pipe holds without waiting;
        when one does, that reader records the interrupt and the server's
        next signal finds it.
        """
        it = self._interrupt
        if it is None or it[0] != block:
            self._pump()
            it = self._interrupt
        if it is not None and it[0] == block:
            return it[1] or "the code was interrupted"
        return None

    def _pump(self):
        # The handler interrupted the main thread; if that thread held the
        # lock, taking it would deadlock, so try, and leave it to the next
        # signal otherwise.
        if os.getpid() != _Kids.pid or not self._cond._lock.acquire(False):
            return
        try:
            if self._reading or self._closed is not None:
                return
            self._reading = True
        finally:
            self._cond._lock.release()
        try:
            os.set_blocking(self._rfd, False)
            try:
                while True:
                    try:
                        frame = self._read_frame()
                    except BlockingIOError:
                        break
                    with self._lock:
                        self._dispatch(frame)
            finally:
                os.set_blocking(self._rfd, True)
        except ProtocolError as e:
            with self._lock:
                self._closed = str(e)
        finally:
            with self._lock:
                self._reading = False
                self._cond.notify_all()

    def wait_for(self, pred, stoppable=False):
        """Wait until pred returns something, reading frames when no other
        thread does. A stoppable wait (the main thread's, in a tool call)
        raises CodeTimeout when an interrupt of its block arrives."""
        with self._lock:
            while True:
                if self._closed is not None:
                    raise ProtocolError(self._closed)
                self._stop_if_interrupted(stoppable)
                r = pred()
                if r is not None:
                    return r
                if not self._reading:
                    self._reading = True
                    break
                self._cond.wait()
        try:
            while True:
                try:
                    frame = self._read_frame()
                except ProtocolError as e:
                    with self._lock:
                        self._closed = str(e)
                    raise
                with self._lock:
                    self._dispatch(frame)
                    self._cond.notify_all()
                    self._stop_if_interrupted(stoppable)
                    r = pred()
                    if r is not None:
                        return r
        finally:
            with self._lock:
                self._reading = False
                self._cond.notify_all()

    def call(self, name, args, timeout=None):
        if not isinstance(name, str):
            raise TypeError("tool name must be a string")
        if not isinstance(args, dict):
            raise TypeError("tool arguments must be a dict")
        if os.getpid() != _Kids.pid:
            raise ToolError(
                "ToolError",
                "tools can only be called from the Python process that runs the code, "
                "not from a child process it started (os.fork, multiprocessing); call them from the parent",
            )
        block = _caller_block()
        if block is None or block != _State.block or not _State.running:
            raise ToolError(
                "ToolError",
                "this call was made by a thread of an earlier block: a thread's tool calls count only while "
                "the block that started it runs; start threads and thread pools in the block that uses them, "
                "and join them before it ends",
            )
        main = _thread.get_ident() == _MAIN_THREAD
        if main:
            self.main_depth += 1
        try:
            res = self._call(block, name, args, timeout, main)
        finally:
            if main:
                self.main_depth -= 1
        if res.get("ok"):
            return res.get("value")
        err = res.get("error") or {}
        typ = str(err.get("type") or "ToolError")
        msg = str(err.get("message") or "")
        if typ == "HTTPStatusError" and err.get("status_code"):
            raise HTTPStatusError(msg, err.get("status_code"), err.get("body"))
        if typ == "TimeoutError":
            raise TimeoutError(msg)
        if typ == "ToolDeniedError":
            raise ToolDeniedError(msg)
        if typ == "BudgetExceeded":
            raise BudgetExceeded(msg)
        raise ToolError(typ, msg, err.get("trace"))

    def _call(self, block, name, args, timeout, main):
        # An interrupt that came between two calls stops the code before
        # the next one, and one that comes while the call waits stops it
        # there; a reply that arrived with the interrupt is dropped.
        self._stop_if_interrupted(main)
        with self._lock:
            self._seq += 1
            cid = f"{self._prefix}-{self._seq}"
            self._waiting.add(cid)
            if self._threads_block != block:
                self._threads_block, self._threads = block, {}
            ident = _thread.get_ident()
            thread = 0 if main else self._threads.setdefault(ident, len(self._threads) + 1)
        try:
            # The frame as _dumps would write it, keys in the same order,
            # with only the arguments through the encoder: the id is the
            # channel's own (hex digits, a dash and a number). Arguments
            # that do not encode raise here, and the id is let go below.
            line = _TOOL_CALL_HEAD + cid + '","block":' + _encode_str(block) + ',"name":' + _encode_str(name) + ',"args":' + _dumps(args)
            if thread:
                line += ',"thread":' + str(thread)
            if timeout is not None:
                line += ',"timeout_ms":' + str(max(1, int(float(timeout) * 1000)))
            self.send_line(line + "}")
            return self.wait_for(lambda: self._results.pop(cid, None), stoppable=main)
        finally:
            with self._lock:
                self._waiting.discard(cid)
                self._results.pop(cid, None)

    def next_run(self):
        return self.wait_for(lambda: self._runs.pop(0) if self._runs else None)


_chan = _Channel(_RFD, _WFD)


def _runtime_module():
    m = type(sys)("codemode_runtime", "Calls from sandbox code to the host's tools.")

    def call(name, args, timeout=None):
        """Call the host tool `name` with `args` and return its result."""
        return _chan.call(name, args, timeout)

    m.call = call
    m.ToolError = ToolError
    m.HTTPStatusError = HTTPStatusError
    m.ToolDeniedError = ToolDeniedError
    m.BudgetExceeded = BudgetExceeded
    m.CodeTimeout = CodeTimeout
    for cls in (ToolError, HTTPStatusError, ToolDeniedError, BudgetExceeded, CodeTimeout):
        cls.__module__ = "codemode_runtime"
    return m


# --- environment -------------------------------------------------------------

# Environment variables user code may see; everything else is removed.
_ENV_ALLOW = {
    "PATH", "HOME", "USER", "LANG", "LANGUAGE", "TERM", "TMPDIR", "TEMP", "TMP",
    "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE",
    # The egress proxy, when the sandbox has one.
    "http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "no_proxy", "NO_PROXY",
}


def _clean_env():
    for k in list(os.environ):
        if k not in _ENV_ALLOW and not k.startswith("LC_"):
            del os.environ[k]


_DENY_DISTS = {"pip", "setuptools", "wheel"}

# For an interpreter that is the host's own (the jail's), the report lists
# what a model would import, not the host system's own Python: the import
# names of the distribution's system bindings and tools (its package
# manager, D-Bus, GObject, SELinux, the kernel's perf, Launchpad's client)
# are left out whichever way they were installed, and so are private names
# (_yaml), which code imports through their public package. Libraries the
# system's package manager installed (python3-yaml, python3-cryptography)
# stay: code can import them. An image's interpreter is reported whole.
_SYSTEM_MODULES = {
    "apt", "apt_inst", "apt_pkg", "aptsources", "aptdaemon", "debconf", "debian", "debianbts", "reportbug",
    "softwareproperties", "unattended_upgrades", "DistUpgrade", "UpdateManager", "dbus", "gi", "pygtkcompat",
    "dnf", "rpm", "yum", "selinux", "seobject", "sepolicy", "lsb_release", "perf", "lazr", "wadllib",
    "cupshelpers", "ufw", "netplan", "cloudinit",
}


def _headers(path):
    """Name and Version from a METADATA or PKG-INFO file."""
    name = version = None
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if not line.strip():
                    break
                if line.startswith("Name:") and name is None:
                    name = line[5:].strip()
                elif line.startswith("Version:") and version is None:
                    version = line[8:].strip()
    except OSError:
        pass
    return name, version


def _read_lines(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().splitlines()
    except OSError:
        return None


def _top_level(d, egg):
    """The import names a distribution provides: top_level.txt, else the
    top-level .py paths of its file list (as importlib.metadata infers)."""
    declared = _read_lines(os.path.join(d, "top_level.txt"))
    if declared:
        return {n.strip() for n in declared if n.strip()}
    files = _read_lines(os.path.join(d, "SOURCES.txt" if egg else "RECORD")) or []
    out = set()
    for line in files:
        p = line.split(",", 1)[0] if not egg else line
        if not p.endswith(".py"):
            continue
        parts = [x for x in p.split("/") if x]
        if not parts:
            continue
        out.add(parts[0] if len(parts) > 1 else parts[0][:-3])
    return out


def _packages(hide_system=False):
    """The import-name report: {import name: {distribution: version}}.
    hide_system leaves out the system's own bindings and private names.

    It follows importlib.metadata's packages_distributions() over the
    distributions on sys.path, without importing importlib.metadata (which
    costs more than the whole rest of the start-up).
    """
    versions = {}
    providers = {}
    for entry in sys.path:
        if not entry or not os.path.isdir(entry):
            continue
        try:
            names = sorted(os.listdir(entry))
        except OSError:
            continue
        for n in names:
            if n.endswith(".dist-info"):
                egg, meta = False, "METADATA"
            elif n.endswith(".egg-info"):
                egg, meta = True, "PKG-INFO"
            else:
                continue
            d = os.path.join(entry, n)
            if not os.path.isdir(d):
                continue
            name, version = _headers(os.path.join(d, meta))
            if not name:
                continue
            versions.setdefault(name.casefold(), (name, version or ""))
            for imp in _top_level(d, egg):
                providers.setdefault(imp, set()).add(name)
    report = {}
    for imp in sorted(providers, key=lambda s: (s.casefold(), s)):
        if hide_system and (imp in _SYSTEM_MODULES or imp.startswith("_")):
            continue
        provs = {}
        for dist in sorted(providers[imp], key=lambda s: (s.casefold(), s)):
            if dist.casefold() in _DENY_DISTS:
                continue
            v = versions.get(dist.casefold())
            if v:
                provs[v[0]] = v[1]
        if provs:
            report[imp] = provs
    return report


# --- blocks ------------------------------------------------------------------


class _State:
    running = False
    block = ""
    code = ""


def _on_signal(signum, frame):
    if not _State.running:
        return
    if os.getpid() != _Kids.pid:
        # A child the code forked: the channel is the worker's, not its.
        raise CodeTimeout("the code was interrupted")
    if _chan.main_depth:
        # The main thread is in a tool call: the channel stops the code
        # when it reads the interrupt (see _Channel.main_depth).
        return
    msg = _chan.interrupt_for(_State.block)
    if msg is not None:
        raise CodeTimeout(msg)


# Every thread belongs to the block that was running when it was started,
# or to the block of the thread that started it; the main thread belongs
# to the running block. A thread started outside Python's thread API (by C
# code) has no block of record and counts as the running block's.
_owner = _thread._local()
_MAIN_THREAD = _thread.get_ident()


def _caller_block():
    if _thread.get_ident() == _MAIN_THREAD:
        return _State.block if _State.running else None
    return getattr(_owner, "block", _State.block)


def _owning(start):
    def start_thread(function, *args, **kwargs):
        block = _caller_block()

        def run(*a, **kw):
            _owner.block = block
            return function(*a, **kw)

        return start(run, *args, **kwargs)

    start_thread.__doc__ = start.__doc__
    return start_thread


def _track_threads():
    # threading binds these when it is first imported, normally after this
    # runs; if it was imported already, its bindings are replaced too.
    for name in ("start_new_thread", "start_joinable_thread", "start_new"):
        start = getattr(_thread, name, None)
        if start is not None:
            setattr(_thread, name, _owning(start))
    threading = sys.modules.get("threading")
    if threading is not None:
        for name, attr in (("start_new_thread", "_start_new_thread"), ("start_joinable_thread", "_start_joinable_thread")):
            if hasattr(threading, attr) and hasattr(_thread, name):
                setattr(threading, attr, getattr(_thread, name))


class _Streams:
    """The worker's own stdout and stderr: fd 1 and 2 as the server gave
    them (kept as duplicates), and the text streams over them."""

    fds = (-1, -1)
    out = None
    err = None


def _sound_streams():
    """Give a block sound fd 1 and 2 and sys.stdout and sys.stderr, whatever
    the last block did to them (closed, replaced or redirected)."""
    for fd, keep in zip((1, 2), _Streams.fds):
        if keep >= 0:
            try:
                os.dup2(keep, fd)
            except OSError:
                pass
    for name in ("out", "err"):
        s = getattr(_Streams, name)
        if s.closed:
            import _io

            s = _io.open(1 if name == "out" else 2, "w", encoding=s.encoding, errors=s.errors, closefd=False)
            setattr(_Streams, name, s)
            setattr(sys, "__std%s__" % name, s)
    sys.stdout, sys.stderr = _Streams.out, _Streams.err


def _install_handlers():
    for sig in (_signal.SIGUSR1, _signal.SIGINT):
        if _signal.getsignal(sig) is not _on_signal:
            _signal.signal(sig, _on_signal)


def _register_source():
    import linecache

    code = _State.code
    linecache.cache[_FILENAME] = (len(code), None, code.splitlines(True), _FILENAME)


def _exit_code(e):
    code = e.code
    if code is None:
        return 0
    if isinstance(code, bool):
        return int(code)
    if isinstance(code, int):
        return code & 0xFF
    try:
        print(code, file=sys.stderr)
    except Exception:
        pass
    return 1


def _print_exception(e, drop_runner=True):
    # Drop the runner's own frames so the traceback shows only user code
    # and the modules it called.
    try:
        _register_source()
        import traceback

        runner = _print_exception.__code__.co_filename
        te = traceback.TracebackException(type(e), e, e.__traceback__, compact=True)
        if drop_runner:
            te.stack = traceback.StackSummary.from_list([f for f in te.stack if f.filename != runner])
        sys.stderr.write("".join(te.format()))
    except Exception:
        sys.stderr.write(f"{type(e).__name__}: {e}\n")


def _background():
    """Whether threads or child processes that the code started still run."""
    threading = sys.modules.get("threading")
    if threading is not None:
        main = threading.main_thread()
        for t in threading.enumerate():
            if t is not main and t.is_alive() and not t.daemon:
                return True
    if _main_has_children():
        return True
    if _thread._count() == 0:
        return False
    # Threads fork too: look at every task's children.
    for task in os.listdir("/proc/self/task"):
        try:
            fd = os.open(f"/proc/self/task/{task}/children", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            if os.read(fd, 16).strip():
                return True
        except OSError:
            pass
        finally:
            os.close(fd)
    return False


class _Kids:
    """The main task's children file, kept open: a block's end then costs
    one read instead of four system calls."""

    pid = 0
    fd = -1


def _main_has_children():
    for _ in range(2):
        if _Kids.fd < 0:
            try:
                _Kids.fd = os.open(f"/proc/self/task/{_Kids.pid}/children", os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                return False
        try:
            # Reading from offset 0 lists the children afresh. Code may have
            # closed or replaced the descriptor: then open it again.
            return bool(os.pread(_Kids.fd, 16, 0).strip())
        except OSError:
            _Kids.fd = -1
    return False


def _reap_killed():
    """Reap this process's children that were killed by SIGKILL: what the
    server killed of the processes a stopped block had started. The
    worker reaps no child otherwise, and those it forked itself would stay
    zombies, holding the sandbox's task slots for the rest of the session.
    A child that exited otherwise is left to whoever waits for it."""
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return
    for task in tasks:
        try:
            with open(f"/proc/self/task/{task}/children", "rb") as f:
                kids = f.read().split()
        except OSError:
            continue
        for k in kids:
            pid = int(k)
            try:
                st = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
                if st is not None and st.si_code == os.CLD_KILLED and st.si_status == _signal.SIGKILL:
                    os.waitpid(pid, os.WNOHANG)
            except OSError:
                pass


def _run_block(frame, ns):
    code = frame.get("code", "")
    _State.code = code
    _State.block = str(frame.get("id", ""))
    _sound_streams()
    if "linecache" in sys.modules:
        _register_source()
    exit_code = 0
    try:
        try:
            compiled = compile(code, _FILENAME, "exec", dont_inherit=True)
        except (SyntaxError, ValueError, OverflowError) as e:
            _print_exception(e.with_traceback(None), drop_runner=False)
            exit_code = 1
        else:
            _State.running = True
            try:
                exec(compiled, ns)
            finally:
                _State.running = False
    except SystemExit as e:
        exit_code = _exit_code(e)
    except BaseException as e:  # CodeTimeout, KeyboardInterrupt and the rest
        _print_exception(e)
        exit_code = 1
    return exit_code


def _without_site(path_json):
    """Stand in for the site module, which the server skipped: set the
    sys.path that site would have built, and the builtins it adds."""
    sys.path[:] = [p for p in _loads(path_json) if isinstance(p, str)]
    import _sitebuiltins

    builtins.exit = _sitebuiltins.Quitter("exit", "Ctrl-D (i.e. EOF)")
    builtins.quit = _sitebuiltins.Quitter("quit", "Ctrl-D (i.e. EOF)")
    builtins.help = _sitebuiltins._Helper()
    builtins.copyright = builtins.credits = "See https://www.python.org/"
    builtins.license = "See https://docs.python.org/3/license.html"


def main():
    files_dir = os.environ.get("CODEMODE_FILES_DIR", "")
    workdir = os.environ.get("CODEMODE_WORKDIR", "")
    sys_path = os.environ.get("CODEMODE_SYS_PATH", "")
    hide_system = os.environ.get("CODEMODE_HIDE_SYSTEM_PACKAGES", "") == "1"
    # The runner's own config variables go before user code can see them.
    for k in ("CODEMODE_FILES_DIR", "CODEMODE_WORKDIR", "CODEMODE_SYS_PATH", "CODEMODE_HIDE_SYSTEM_PACKAGES"):
        os.environ.pop(k, None)
    if sys_path:
        _without_site(sys_path)
    _clean_env()
    if files_dir:
        sys.path.insert(0, files_dir)
    if workdir:
        os.chdir(workdir)
    sys.modules["codemode_runtime"] = _runtime_module()
    _Kids.pid = os.getpid()
    user = type(sys)("__main__")
    user.__dict__.update({"__builtins__": builtins, "__spec__": None, "__loader__": None, "__package__": None})
    sys.modules["__main__"] = user
    ns = user.__dict__
    _install_handlers()
    _track_threads()
    _Streams.fds = (os.dup(1), os.dup(2))
    _Streams.out, _Streams.err = sys.__stdout__, sys.__stderr__

    _chan.send_line(
        _dumps({"kind": KIND_READY, "protocol_version": PROTOCOL_VERSION, "python_version": sys.version.split()[0], "packages": _packages(hide_system)})
    )
    stopped = False  # the last block was interrupted: the server killed what it started
    while True:
        frame = _chan.next_run()
        # A block starts with our signal handlers, even if the last one
        # replaced them.
        _install_handlers()
        if stopped:
            _reap_killed()
        exit_code = _run_block(frame, ns)
        it = _chan._interrupt
        stopped = it is not None and it[0] == frame.get("id")
        out, err = _Streams.out, _Streams.err
        sys.stdout, sys.stderr = out, err
        # Everything written before done is the block's: the server drains
        # the streams when done arrives.
        for stream in (out, err):
            try:
                stream.flush()
            except Exception:
                pass
        if os.getpid() != _Kids.pid:
            # A child the code forked came back here (sys.exit, or the end
            # of the code): it is not the worker, so it never reads frames
            # or reports a block. It leaves with its code.
            os._exit(exit_code)
        _chan.send_line(
            _dumps({"kind": KIND_DONE, "id": str(frame.get("id", "")), "exit_code": exit_code, "background": _background()})
        )


# A template process loads this file under another name and forks
# workers that call main() themselves.
if __name__ == "__main__":
    try:
        main()
    except ProtocolError:
        os._exit(0)
