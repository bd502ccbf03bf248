# Times search over the tools package, call by call, inside the sandbox.
# The first block of a session also pays for loading the index; it prints
# that separately. Prints one JSON object.
import json
import time

from tools._discovery import search

QUERIES = [
    "create a comment on an issue",
    "list workflow runs",
    "delete a branch protection",
    "get the authenticated user",
    "star a gist",
    "secret scanning alerts for an organization",
    "merge pull request",
    "repo webhooks",
    "update release asset",
    "codespaces machines",
]

if "_search_loaded" not in globals():
    t = time.perf_counter_ns()
    search("warm up")
    load_ns = time.perf_counter_ns() - t
    _search_loaded = True
else:
    load_ns = None

times = []
for _ in range(10):
    for q in QUERIES:
        t = time.perf_counter_ns()
        search(q)
        times.append(time.perf_counter_ns() - t)
print(json.dumps({"load_ns": load_ns, "times_ns": times}))
