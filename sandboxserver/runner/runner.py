# The codemode Python worker. The sandbox server starts it once per session
# and sends it blocks of code over a control pipe; see sandboxserver/doc.go.
#
# fds: 0 /dev/null, 1 and 2 pipes the server captures, 3 frames from the
# server, 4 frames to the server. Frames are JSON lines.
import builtins
import json
import linecache
import os
import signal
import sys
import threading
import traceback
import types

_RFD, _WFD = 3, 4
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


class _Channel:
    """Frames to and from the server, shared by every thread.

    Whichever waiting thread finds nobody reading becomes the reader and
    hands frames meant for others over under one condition variable, so a
    lone caller reads its own reply with no thread switch.
    """

    def __init__(self, rfd, wfd):
        self._rfd = rfd
        self._wfd = wfd
        self._wlock = threading.Lock()
        self._cond = threading.Condition(threading.Lock())
        self._reading = False
        self._buf = bytearray()
        self._results = {}
        self._waiting = set()
        self._runs = []
        self._closed = None
        self._seq = 0
        self._prefix = os.urandom(6).hex()

    def send(self, frame):
        data = json.dumps(frame, ensure_ascii=False, separators=(",", ":"), default=_json_default).encode(
            "utf-8", "surrogatepass"
        ) + b"\n"
        with self._wlock:
            view = memoryview(data)
            while view:
                try:
                    n = os.write(self._wfd, view)
                except BrokenPipeError:
                    raise ProtocolError("the host closed the control pipe") from None
                view = view[n:]

    def send_line(self, line):
        data = line.encode("utf-8")
        with self._wlock:
            view = memoryview(data)
            while view:
                try:
                    n = os.write(self._wfd, view)
                except BrokenPipeError:
                    raise ProtocolError("the host closed the control pipe") from None
                view = view[n:]

    def _read_frame(self):
        while True:
            i = self._buf.find(b"\n")
            if i >= 0:
                line = bytes(self._buf[:i])
                del self._buf[: i + 1]
                return json.loads(line)
            if len(self._buf) > _MAX_LINE:
                raise ProtocolError("control frame too large")
            chunk = os.read(self._rfd, 1 << 16)
            if not chunk:
                raise ProtocolError("the host closed the control pipe")
            self._buf += chunk

    def _dispatch(self, frame):
        kind = frame.get("kind")
        if kind == "tool_result":
            fid = frame.get("id")
            if fid in self._waiting:
                self._results[fid] = frame
        elif kind == "run":
            self._runs.append(frame)

    def wait_for(self, pred):
        with self._cond:
            while True:
                if self._closed is not None:
                    raise ProtocolError(self._closed)
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
                    with self._cond:
                        self._closed = str(e)
                    raise
                with self._cond:
                    self._dispatch(frame)
                    r = pred()
                    if r is not None:
                        return r
                    self._cond.notify_all()
        finally:
            with self._cond:
                self._reading = False
                self._cond.notify_all()

    def call(self, name, args, timeout=None):
        if not isinstance(name, str):
            raise TypeError("tool name must be a string")
        if not isinstance(args, dict):
            raise TypeError("tool arguments must be a dict")
        with self._cond:
            self._seq += 1
            cid = f"{self._prefix}-{self._seq}"
            self._waiting.add(cid)
        frame = {"kind": "tool_call", "id": cid, "name": name, "args": args}
        if timeout is not None:
            frame["timeout_ms"] = max(1, int(float(timeout) * 1000))
        try:
            self.send(frame)
            res = self.wait_for(lambda: self._results.pop(cid, None))
        finally:
            with self._cond:
                self._waiting.discard(cid)
                self._results.pop(cid, None)
        if res.get("ok"):
            return res.get("value")
        err = res.get("error") or {}
        typ = str(err.get("type") or "ToolError")
        msg = str(err.get("message") or "")
        if typ == "HTTPStatusError" and err.get("status_code"):
            raise HTTPStatusError(msg, err.get("status_code"), err.get("body"))
        if typ == "TimeoutError":
            raise TimeoutError(msg)
        raise ToolError(typ, msg, err.get("trace"))

    def next_run(self):
        return self.wait_for(lambda: self._runs.pop(0) if self._runs else None)


def _json_default(o):
    if isinstance(o, (bytes, bytearray, memoryview)):
        import base64

        return {"kind": "bytes", "data": base64.b64encode(bytes(o)).decode("ascii"), "encoding": "base64"}
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    if hasattr(o, "isoformat"):
        return o.isoformat()
    return repr(o)


_chan = _Channel(_RFD, _WFD)


def _runtime_module():
    m = types.ModuleType("codemode_runtime", "Calls from sandbox code to the host's tools.")

    def call(name, args, timeout=None):
        """Call the host tool `name` with `args` and return its result."""
        return _chan.call(name, args, timeout)

    m.call = call
    m.ToolError = ToolError
    m.HTTPStatusError = HTTPStatusError
    m.CodeTimeout = CodeTimeout
    for cls in (ToolError, HTTPStatusError, CodeTimeout):
        cls.__module__ = "codemode_runtime"
    return m


# Environment variables user code may see; everything else is removed.
_ENV_ALLOW = {
    "PATH", "HOME", "USER", "LANG", "LANGUAGE", "TERM", "TMPDIR", "TEMP", "TMP",
    "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE",
}


def _clean_env():
    for k in list(os.environ):
        if k not in _ENV_ALLOW and not k.startswith("LC_"):
            del os.environ[k]


_DENY_DISTS = {"pip", "setuptools", "wheel"}


def _packages():
    try:
        from importlib import metadata
    except ImportError:
        return {}
    versions = {}
    for d in metadata.distributions():
        try:
            name = d.metadata["Name"]
        except Exception:
            continue
        if not name or name.casefold() in _DENY_DISTS:
            continue
        versions.setdefault(name.casefold(), (name, d.version))
    report = {}
    try:
        mapping = metadata.packages_distributions()
    except Exception:
        return {}
    for imp in sorted(mapping, key=lambda s: (s.casefold(), s)):
        if imp.startswith("_") or imp.startswith("__"):
            continue
        provs = {}
        for dist in sorted(set(mapping[imp]), key=lambda s: (s.casefold(), s)):
            v = versions.get(dist.casefold())
            if v:
                provs[v[0]] = v[1]
        if provs:
            report[imp] = provs
    return report


class _State:
    running = False
    reason = ""


def _on_signal(signum, frame):
    if _State.running:
        raise CodeTimeout(_State.reason or "the code was interrupted")


def _exit_code(e):
    code = e.code
    if code is None:
        return 0
    if isinstance(code, bool):
        return int(code)
    if isinstance(code, int):
        return code & 0xFF if code >= 0 else (256 + code) & 0xFF
    try:
        print(code, file=sys.stderr)
    except Exception:
        pass
    return 1


def _print_exception(e):
    # Drop the runner's own frames so the traceback shows only user code
    # and the modules it called.
    runner = _print_exception.__code__.co_filename
    try:
        te = traceback.TracebackException(type(e), e, e.__traceback__, compact=True)
        te.stack = traceback.StackSummary.from_list([f for f in te.stack if f.filename != runner])
        sys.stderr.write("".join(te.format()))
    except Exception:
        sys.stderr.write(f"{type(e).__name__}: {e}\n")


def _background():
    """Whether threads or child processes that the code started still run."""
    if threading.active_count() > 1:
        main = threading.main_thread()
        for t in threading.enumerate():
            if t is not main and t.is_alive() and not t.daemon:
                return True
        tasks = os.listdir("/proc/self/task")
    else:
        tasks = (str(os.getpid()),)
    for task in tasks:
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


def _run_block(frame, ns, out, err):
    code = frame.get("code", "")
    _State.reason = "Your code ran for longer than %gs and was stopped." % (frame.get("timeout_ms", 0) / 1000.0)
    sys.stdout, sys.stderr = out, err
    lines = code.splitlines(True)
    linecache.cache[_FILENAME] = (len(code), None, lines, _FILENAME)
    exit_code = 0
    try:
        try:
            compiled = compile(code, _FILENAME, "exec", dont_inherit=True)
        except (SyntaxError, ValueError, OverflowError) as e:
            traceback.print_exception(type(e), e, None, file=sys.stderr)
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


def main():
    files_dir = os.environ.get("CODEMODE_FILES_DIR", "")
    workdir = os.environ.get("CODEMODE_WORKDIR", "")
    # The runner's own config variables go before user code can see them.
    for k in ("CODEMODE_FILES_DIR", "CODEMODE_WORKDIR"):
        os.environ.pop(k, None)
    _clean_env()
    if files_dir:
        sys.path.insert(0, files_dir)
    if workdir:
        os.chdir(workdir)
    sys.modules["codemode_runtime"] = _runtime_module()
    user = types.ModuleType("__main__")
    user.__dict__.update({"__builtins__": builtins, "__spec__": None, "__loader__": None, "__package__": None})
    sys.modules["__main__"] = user
    ns = user.__dict__
    signal.signal(signal.SIGUSR1, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    out = sys.__stdout__
    err = sys.__stderr__

    import platform

    _chan.send({"kind": "ready", "protocol_version": 1, "python_version": platform.python_version(), "packages": _packages()})
    while True:
        frame = _chan.next_run()
        # A block starts with our signal handlers, even if the last one
        # replaced them.
        for sig in (signal.SIGUSR1, signal.SIGINT):
            if signal.getsignal(sig) is not _on_signal:
                signal.signal(sig, _on_signal)
        exit_code = _run_block(frame, ns, out, err)
        sys.stdout, sys.stderr = out, err
        marker = frame.get("marker", "")
        # The marker tells the server where this block's output ends. It
        # goes through the stream's own buffer, so one write carries both.
        for stream, fd in ((out, 1), (err, 2)):
            try:
                stream.write(marker)
                stream.flush()
            except Exception:
                try:
                    os.write(fd, marker.encode("ascii"))
                except OSError:
                    pass
        _chan.send_line(
            '{"kind":"done","id":%s,"exit_code":%d,"background":%s}\n'
            % (json.dumps(str(frame.get("id", ""))), exit_code, "true" if _background() else "false")
        )


try:
    main()
except ProtocolError:
    os._exit(0)
