# The start of every probe: what the host planted, and how a probe says
# what it tried (attempt) and what worked (a hole).
import ctypes, json, os, socket, stat, struct, subprocess, sys

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
PLANT = json.loads(__PLANT__)
holes = []
checked = 0


def _closefd(r):
    if isinstance(r, int) and r >= 0:
        try:
            os.close(r)
        except OSError:
            pass


def must_fail(what, fn, fd=False):
    """fn is a libc call that must return -1; anything else is a hole.
    With fd, what it returned is a descriptor, closed at once."""
    global checked
    checked += 1
    try:
        r = fn()
    except OSError:
        return
    if r == -1:
        return
    holes.append(what)
    if fd:
        _closefd(r)


def must_raise(what, fn):
    """fn must raise OSError (or ValueError, for a limit it may not
    raise); if it returns, that is a hole. What it returned is closed."""
    global checked
    checked += 1
    try:
        r = fn()
    except (OSError, ValueError):
        return
    holes.append(what)
    close = getattr(r, "close", None)
    if close is not None:
        close()
    else:
        _closefd(r)


def hole(what):
    holes.append(what)


def count():
    global checked
    checked += 1


def pids():
    return [p for p in os.listdir("/proc") if p.isdigit()]


def status(text):
    out = {}
    for line in text.splitlines():
        k, _, v = line.partition(":")
        out[k] = v.strip()
    return out



def run_probe(code):
    """Run a probe's code in a child process, so that what it manages to
    do (a namespace it enters, a limit it raises) stays out of the worker
    and the probes after it, and print what it found."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            exec(compile(code, "<probe>", "exec"), globals())
            out = {"holes": holes, "checked": checked}
        except BaseException as e:
            out = {"error": "%s: %s" % (type(e).__name__, e)}
        os.write(w, json.dumps(out).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while True:
        chunk = os.read(r, 1 << 16)
        if not chunk:
            break
        data += chunk
    os.close(r)
    _, st = os.waitpid(pid, 0)
    print(data.decode() or json.dumps({"error": "the probe's process ended with status %d and said nothing" % st}))
