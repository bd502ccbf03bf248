# Drives search and describe of a generated tools package for the render
# tests: argv[1] is the directory holding the package. Reads a JSON list of
# requests on stdin and writes a JSON list of answers, each {"ok": value}
# or {"error": "ExceptionType: message"}.
import json
import sys
import types

# The stubs import the runtime module; these tests call no tool.
runtime = types.ModuleType("codemode_runtime")


class ToolError(Exception):
    pass


class HTTPStatusError(ToolError):
    pass


class ToolDeniedError(ToolError):
    pass


class BudgetExceeded(ToolError):
    pass


def call(name, args):
    raise ToolError("no tool calls in this test: " + name)


runtime.ToolError, runtime.HTTPStatusError, runtime.call = ToolError, HTTPStatusError, call
runtime.ToolDeniedError, runtime.BudgetExceeded = ToolDeniedError, BudgetExceeded
sys.modules["codemode_runtime"] = runtime
sys.path.insert(0, sys.argv[1])

import tools  # noqa: E402
from tools import _discovery  # noqa: E402
from tools._discovery import describe, search  # noqa: E402

answers = []
for req in json.load(sys.stdin):
    try:
        op = req["op"]
        if op == "search":
            ok = search(req["query"], **({"limit": req["limit"]} if "limit" in req else {}))
        elif op == "describe":
            ok = describe(req["name"])
        elif op == "describe_function":
            module, attr = req["module"], req["attr"]
            ok = describe(getattr(__import__(module, fromlist=[attr]), attr))
        elif op == "terms":
            ok = _discovery._terms(req["text"], _discovery._load()["stopwords"])
        elif op == "root_exports":
            # whether the root of the package re-exports search and describe
            ok = getattr(tools, "search", None) is search and getattr(tools, "describe", None) is describe
        elif op == "bound":
            _discovery._index = None
            _discovery._MAX_INDEX_BYTES = req["bytes"]
            ok = search("anything")
        else:
            raise ValueError("unknown op " + op)
        answers.append({"ok": ok})
    except Exception as e:  # reported to the test
        answers.append({"error": "%s: %s" % (type(e).__name__, e)})
json.dump(answers, sys.stdout)
