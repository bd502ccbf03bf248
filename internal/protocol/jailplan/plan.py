# The setup plan's interpreter in Python (internal/protocol/jailplan): a plan is a
# list of system calls, built by the host in Go. This knows no kernel
# constant: it places the arguments, calls syscall(2) through libc and
# checks the result as each step says. Its Go twin is run_linux.go.
import base64 as _plan_b64
import ctypes as _plan_ct
import os as _plan_os

_plan_libc = _plan_ct.CDLL(None, use_errno=True)
_plan_libc.syscall.restype = _plan_ct.c_long


class PlanError(Exception):
    """A step that failed: its op, and its errno (0 when it returned
    something other than what it wants)."""

    def __init__(self, op, errno, msg):
        super().__init__(op + ": " + msg)
        self.op, self.errno, self.msg = op, errno, msg


def run_plan(plan):
    """Run plan's steps in order; return the reported results by name."""
    specs = plan.get("bufs") or []
    bufs = []
    for b in specs:
        data = _plan_b64.b64decode(b.get("data") or "")
        bufs.append(_plan_ct.create_string_buffer(data, max(len(data), 8)))
    for buf, b in zip(bufs, specs):
        for p in b.get("ptrs") or ():
            _plan_ct.c_void_p.from_buffer(buf, p["off"]).value = _plan_ct.addressof(bufs[p["buf"]])
    results, reports = [], {}
    for st in plan["steps"]:
        args = []
        for a in st.get("args") or ():
            if "b" in a:
                v = _plan_ct.addressof(bufs[a["b"]])
            elif "r" in a:
                v = results[a["r"]]
            else:
                v = a["i"]
            args.append(_plan_ct.c_long(v))
        r = _plan_libc.syscall(_plan_ct.c_long(st["nr"]), *args)
        if r == -1:
            e = _plan_ct.get_errno()
            if e not in (st.get("allow") or ()):
                raise PlanError(st["op"], e, _plan_os.strerror(e))
            r = -e
        elif "want" in st and r != st["want"]:
            raise PlanError(st["op"], 0, "returned %d, want %d" % (r, st["want"]))
        results.append(r)
        if st.get("report"):
            reports[st["report"]] = r
    return reports
