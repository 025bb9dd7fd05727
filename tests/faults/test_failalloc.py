"""Allocation failure in the host: replay a session failing the Nth allocation,
for every N from 1 to the number of allocations the session makes.

Three sessions: `exec` (execs and a tools/call: its runs start workers), `mcp`
(initialize, tools/list, server/discover: no exec, since EOF from an MCP client
stops the execs in flight) and `protocol` (every one-line fault of
tests/cases/protocol, none of which runs a snippet, so its runs are cheap). Needs the FAILALLOC build (`make FAILALLOC=1`,
build-failalloc/tidepool): its host counts malloc/calloc/realloc (ours and
jansson's) and fails the one numbered by TIDEPOOL_FAILALLOC. Each run must end
with an exit status that is not a signal, print only valid JSON-RPC responses,
answer no id twice, leave no worker or zygote alive, and still answer whatever it
answers correctly.
"""
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from faultlib import ENV, FAILALLOC_BIN, ProtocolViolation, check_response, usable_cpus

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


TOOLS = ["run_lua", "run_python", "list_sessions", "close_session", "write_file", "read_file",
         "list_files"]
MODERN = {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {}}}

# The MCP session: both eras.
MCP_SESSION = [
    (rq(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}}),
     lambda m: m["result"]["protocolVersion"] == "2025-06-18"),
    (b'{"jsonrpc":"2.0","method":"notifications/initialized"}', None),
    (rq(2, "tools/list"), lambda m: [t["name"] for t in m["result"]["tools"]] == TOOLS
     and all("outputSchema" in t and "annotations" in t for t in m["result"]["tools"])),
    (rq(3, "server/discover", MODERN), lambda m: m["result"]["supportedVersions"][0] == "2026-07-28"
     and m["result"]["resultType"] == "complete"),
    (rq(4, "tools/list", MODERN), lambda m: [t["name"] for t in m["result"]["tools"]] == TOOLS
     and m["result"]["ttlMs"] == 3600000 and m["result"]["resultType"] == "complete"),
    (rq(5, "tools/call", {"name": "run_lua", "arguments": {}}),
     lambda m: m["result"]["isError"] is True and m["result"]["content"][0]["text"] == "'code' must be a string"),
]

# The exec session: each line and, for requests, what a correct answer looks like.
SESSION = [
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
    (rq(10, "sandbox/session/open", {"lang": "lua"}),
     lambda m: m["result"]["session_id"].startswith("s-") and m["result"]["lang"] == "lua"),
    # 1 session, or 0 when its open was answered "out of memory"
    (rq(11, "sandbox/session/list"), lambda m: len(m["result"]["sessions"]) <= 1
     and all(x["lang"] == "lua" and x["execs"] == 0 for x in m["result"]["sessions"])),
]


class Session:
    """Lines to replay and what a correct answer looks like: a check per request id,
    and the patterns of the replies without an id, in the order they come."""

    def __init__(self, name, lines, checks, null_id):
        self.name = name
        self.bytes = b"\n".join(lines) + b"\n"
        self.checks = checks
        self.null_id = null_id
        self.expected = len(checks) + len(null_id)

    def __repr__(self):
        return self.name


def _id_of(line):
    try:
        m = json.loads(line)
    except ValueError:
        return None
    return m.get("id") if isinstance(m, dict) else None


def session_of(name, lines):
    return Session(name, [line for line, _ in lines],
                   {_id_of(line): check for line, check in lines if check is not None and _id_of(line) is not None},
                   [])


EXEC = session_of("exec", SESSION)
MCP = session_of("mcp", MCP_SESSION)


def fault_line(case, i):
    """A one-line case of tests/cases/protocol/ with the id of its request, when the
    reply echoes it, made unique in the session (of the same type); its replies."""
    line = case.input().rstrip(b"\n")
    replies = case.replies
    if any(want["id"] != protocol_cases.ABSENT for want in replies):
        m = json.loads(line)
        m["id"] = f"{m['id']}-{i}" if isinstance(m["id"], str) else 100 + i
        line = json.dumps(m).encode()
        replies = [dict(want, id=m["id"]) for want in replies]
    return line, replies


def _check(want):
    return lambda m: protocol_cases.matches(want, m)


def one_line_cases():
    return [c for c in protocol_cases.load() if c.input().count(b"\n") == 1]


def protocol_sessions():
    """Every one-line protocol fault (the multi-line ones need timing: tests/proto),
    through one host in the order of their names; none of them runs a snippet, so a
    run costs a host start, not a worker's. A case with a @FILL@ (megabytes: the
    overlong line) is a session of its own, followed by a ping, so that the other
    sessions' thousands of runs do not each carry its bytes."""
    sessions, small = [], []
    for i, case in enumerate(one_line_cases()):
        (small if case.fill is None else sessions).append((case.name, fault_line(case, i)))
    ping = (rq(1, "ping"), [{"id": 1, "result": {}}])
    groups = [("protocol", small)] + [(f"protocol-{name}", [(name, f), (None, ping)]) for name, f in sessions]
    out = []
    for name, faults in groups:
        checks, null_id = {}, []
        for _, (_, replies) in faults:
            for want in replies:
                if want["id"] == protocol_cases.ABSENT:
                    null_id.append(want)  # bad JSON, invalid UTF-8, a batch, a bad id...
                else:
                    checks[want["id"]] = _check(want)
        s = Session(name, [line for _, (line, _) in faults], checks, null_id)
        s.cases = [n for n, _ in faults if n is not None]
        out.append(s)
    return out


PROTOCOL = protocol_sessions()
SESSIONS = [EXEC, MCP] + PROTOCOL


def run_session(session, fail_at):
    """Runs one session; returns (exit status, replies, stderr, problems)."""
    env = dict(ENV, TIDEPOOL_FAILALLOC=str(fail_at))
    p = subprocess.Popen([FAILALLOC_BIN], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env)
    try:
        out, err = p.communicate(session.bytes, timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        return None, [], err.decode(errors="replace"), [f"{session} N={fail_at}: hung (killed after 60 s)"]
    lines = out.split(b"\n")
    if lines[-1] == b"":
        lines.pop()  # the last line's newline
    else:
        problems = [f"{session} N={fail_at}: unterminated last line on stdout: {lines[-1][:200]!r}"]
        return p.returncode, lines, err.decode(errors="replace"), problems
    return p.returncode, lines, err.decode(errors="replace"), []


def out_of_memory(m):
    """The host's documented answers when it runs out: -32603, or an exec result
    `internal_error` of the host (out of memory, worker lost)."""
    if "error" in m:
        return m["error"]["code"] == -32603
    r = m.get("result")
    if isinstance(r, dict) and "structuredContent" in r:
        r = r["structuredContent"]
    try:
        return r["ok"] is False and r["error"]["kind"] == "internal_error" and r["error"]["layer"] in ("host", "process")
    except (KeyError, TypeError):
        return False


def judge(session, fail_at):
    """Returns (problems, replies answered, allocation count)."""
    where = f"{session} N={fail_at}"
    rc, lines, err, problems = run_session(session, fail_at)
    if rc is None:
        return problems, 0, None
    if rc < 0 or rc >= 128:
        problems.append(f"{where}: exit status {rc} (signal)")
    seen = {}
    answered = 0
    null_at = 0  # replies without an id come in the order of their lines
    for line in lines:
        if not line:
            problems.append(f"{where}: empty line on stdout")
            continue
        try:
            m = check_response(line)
        except ProtocolViolation as e:
            problems.append(f"{where}: {e}")
            continue
        key = json.dumps(m.get("id"))
        seen[key] = seen.get(key, 0) + 1
        if m.get("id") is not None and seen[key] > 1:
            problems.append(f"{where}: two replies for id {key}")
        if m.get("id") is not None and m["id"] not in session.checks:
            problems.append(f"{where}: reply for an id never sent: {line[:200]!r}")
            continue
        if out_of_memory(m):
            answered += 1
            continue
        if m.get("id") is None:
            # the next expected one, or a later one when earlier replies were lost
            match = next((j for j in range(null_at, len(session.null_id))
                          if protocol_cases.matches(session.null_id[j], m)), None)
            good = match is not None
            null_at = match + 1 if good else null_at
        else:
            try:
                good = session.checks[m["id"]](m)
            except (KeyError, TypeError, IndexError, ValueError):
                good = False
        if not good:
            problems.append(f"{where}: wrong answer: {line[:300]!r}")
        answered += 1
    for l in err.splitlines():  # a SANITIZE build's reports: leaks, overflows, UB
        if "Sanitizer" in l and ("ERROR" in l or "SUMMARY" in l) or "runtime error:" in l:
            problems.append(f"{where}: {l.strip()[:200]}")
            break
    count = None
    for l in err.splitlines():
        if l.startswith("tidepool: failalloc: "):
            count = int(l.split()[2])
    if count is None:
        problems.append(f"{where}: no allocation count on stderr (exit {rc})")
    return problems, answered, count


def test_protocol_session_has_every_one_line_case():
    """The protocol session replays every one-line case, unknown_method included
    (its 14-byte string once made jansson overrun its buffer: docs/robustness.md §5)."""
    one_line = sorted(c.name for c in one_line_cases())
    assert sorted(n for s in PROTOCOL for n in s.cases) == one_line
    assert "unknown_method" in one_line and "line_too_long" in one_line and len(one_line) >= 38


@pytest.mark.parametrize("session", SESSIONS, ids=str)
def test_session_passes_unarmed_and_counts_allocations(session):
    problems, answered, count = judge(session, 0)
    assert problems == []
    # Every request was answered correctly; the bad lines without an id too.
    assert answered == session.expected
    assert count and count > 10


@pytest.mark.parametrize("session", SESSIONS, ids=str)
def test_every_allocation_failure_is_survived(session):
    _, _, total = judge(session, 0)
    # Timing changes how often the loop polls; cover some slack past the count.
    last = total + total // 4
    jobs = int(os.environ.get("FAILALLOC_JOBS", usable_cpus()))
    problems, dropped = [], 0
    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for probs, answered, _ in pool.map(lambda n: judge(session, n), range(1, last + 1)):
            problems += probs
            dropped += answered < session.expected
    elapsed = time.monotonic() - t0
    print(f"\nfailalloc {session}: {last} runs in {elapsed:.1f} s; {dropped} runs lost at least one reply")
    # The host's own out-of-memory must never be blamed on the snippet (a worker
    # dying of SIGPIPE because the host dropped its channel).
    assert problems == [], "\n".join(problems[:40]) + f"\n({len(problems)} problems)"


@pytest.mark.parametrize("session", SESSIONS, ids=str)
def test_memory_that_stays_exhausted_is_survived(session):
    """From the Nth allocation on, every one fails: the host may answer little,
    but it must not spin, crash or write a broken line, and it exits at EOF."""
    _, _, total = judge(session, 0)
    problems = []
    with ThreadPoolExecutor(max_workers=int(os.environ.get("FAILALLOC_JOBS", usable_cpus()))) as pool:
        for probs, _, _ in pool.map(lambda n: judge(session, n),
                                    [f"{n}+" for n in range(1, total, max(1, total // 40))]):
            problems += probs
    known = [p for p in problems if "killed by SIGPIPE" in p]
    other = [p for p in problems if p not in known]
    assert other == [], "\n".join(other[:40]) + f"\n({len(other)} problems)"
