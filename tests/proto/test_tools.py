"""Tool callbacks end to end: the code calls the client's tools through the
host (tools.call in Lua; tools.name(**kw) and tools.call in Python). The host
is the authority: it checks the policy's tools and the tool_calls limit, asks
the client with sandbox/tool_call, and refuses a forged call. Every refusal is
checked by kind, layer and message, and proven: no request reached the client."""
import json
import os
import re
import struct
import time

import pytest

from conftest import Host, needs_landlock, said, policy_dir

TOOLS = ["search", "add", "slow", "never"]


@pytest.fixture(scope="module")
def pol_dir():
    with policy_dir("tp-tools-", {
            "tooly": {"extends": "standard", "tools": TOOLS, "limits": {"tool_calls": 3}},
            "tooly-ko": {"extends": "kernel-only", "tools": ["add"]},
        }) as d:
        yield d


@pytest.fixture(scope="module")
def h(pol_dir):
    host = Host(args=("--policy-dir", pol_dir, "--policy", "tooly"))
    yield host
    host.close()


def answer(name, args):
    if name == "add":
        return {"result": args["a"] + args["b"]}
    if name == "search":
        return {"error": {"code": -32000, "message": f"no results for {args.get('q')}"}}
    if name == "slow":
        time.sleep(0.5)
        return {"result": "late"}
    return None  # "never": the client does not answer


def run(h, params, method="sandbox/exec", handler=answer, timeout=30):
    """Sends one request and serves the tool calls it makes; (result, calls)."""
    h.next_id += 1
    rid = h.next_id
    h.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
    calls = []
    while True:
        m = h.read_line(timeout)
        if m.get("method") == "sandbox/tool_call":
            assert isinstance(m["id"], str) and m["id"].startswith("tp-tool-"), m
            calls.append(m["params"])
            a = handler(m["params"]["name"], m["params"]["arguments"])
            if a is not None:
                h.send({"jsonrpc": "2.0", "id": m["id"], **a})
            continue
        if m.get("id") == rid:
            return m.get("result", m), calls
        h.pending[m.get("id")] = m


@pytest.mark.parametrize("lang,code,value", [
    ("lua", "return tools.call('add', {a = 2, b = 40})", 42),
    ("lua", "local r = tools.call('add', {a = 1, b = 2}) return r + tools.call('add', {a = 3, b = 4})", 10),
    ("python", "tools.add(a=2, b=40)", 42),
    ("python", "tools.call('add', {'a': 1, 'b': 2}) + tools.call('add', {'b': 3, 'a': 4})", 10),
])
def test_allowed_calls_return_the_clients_value(h, lang, code, value):
    r, calls = run(h, {"lang": lang, "code": code})
    assert r["ok"] is True and r["value"] == value, r
    assert r["usage"]["tool_calls"] == len(calls) >= 1
    assert all(c["name"] == "add" and set(c) == {"name", "arguments", "exec_id"} for c in calls)
    assert calls[0]["exec_id"] == h.next_id


@pytest.mark.parametrize("lang,code,out", [
    ("lua", "local ok, e = pcall(tools.call, 'search', {q = 'x'}) print(ok, e)", "false\tno results for x\n"),
    ("python", "try:\n    tools.search(q='x')\nexcept tools.ToolError as e:\n    print('caught', e)",
     "caught no results for x\n"),
    ("python", "try:\n    tools.search(q='y')\nexcept RuntimeError as e:\n    print(type(e).__name__, e)",
     "ToolError no results for y\n"),
])
def test_a_client_error_is_an_ordinary_catchable_error(h, lang, code, out):
    r, calls = run(h, {"lang": lang, "code": code})
    assert r["ok"] is True and r["stdout"] == out, r
    assert len(calls) == 1 and r["usage"]["tool_calls"] == 1


@pytest.mark.parametrize("lang,code,etype", [
    ("lua", "tools.call('search', {q = 'z'})", "string"),
    ("python", "tools.search(q='z')", "ToolError"),
])
def test_an_uncaught_client_error_is_a_runtime_error(h, lang, code, etype):
    r, _ = run(h, {"lang": lang, "code": code})
    assert r["error"]["kind"] == "runtime_error" and r["error"]["type"] == etype, r
    assert "no results for z" in said(r["error"])


@pytest.mark.parametrize("lang,code", [
    ("lua", "return tools.call('rm', {path = '/'})"),
    ("lua", "local ok = pcall(tools.call, 'rm', {}) return ok"),  # catching it changes nothing
    ("python", "tools.rm(path='/')"),
    ("python", "try:\n    tools.call('rm', {})\nexcept Exception:\n    pass\n1"),
])
def test_a_tool_outside_the_policy_is_refused_by_the_host(h, lang, code):
    r, calls = run(h, {"lang": lang, "code": code})
    assert calls == []  # refused means refused: the client was never asked
    assert r["ok"] is False
    assert r["error"]["kind"] == "policy_violation" and r["error"]["layer"] == "host", r
    assert said(r["error"]) == \
        "tool 'rm' is not allowed by policy 'tooly' (its tools: search, add, slow, never)"
    assert r["usage"]["tool_calls"] == 0


def test_a_policy_without_tools_refuses_every_call(h):
    r, calls = run(h, {"lang": "lua", "code": "return tools.call('add', {a = 1, b = 1})",
                       "policy": "standard"})
    assert calls == []
    assert (r["error"]["kind"], r["error"]["layer"], said(r["error"])) == \
        ("policy_violation", "host", "tool 'add' is not allowed by policy 'standard' (its tools: none)")


@pytest.mark.parametrize("lang,code", [
    ("lua", "for i = 1, 10 do tools.call('add', {a = i, b = 0}) end"),
    ("python", "for i in range(10):\n    tools.add(a=i, b=0)"),
])
def test_the_tool_calls_limit(h, lang, code):
    r, calls = run(h, {"lang": lang, "code": code})
    assert len(calls) == 3  # the fourth was never sent
    assert r["error"]["kind"] == "tool_limit" and r["error"]["layer"] == "host", r
    assert r["error"]["limit"] == {"name": "tool_calls", "limit": 3, "used": 4}
    assert r["usage"]["tool_calls"] == 3
    r, calls = run(h, {"lang": lang, "code": code, "limits": {"tool_calls": 1}})
    assert len(calls) == 1 and r["error"]["limit"] == {"name": "tool_calls", "limit": 1, "used": 2}


def test_waiting_counts_against_wall_not_cpu(h):
    r, calls = run(h, {"lang": "lua", "code": "return tools.call('slow', {})",
                       "limits": {"cpu_ms": 100, "instructions": 1000}})
    assert r["ok"] is True and r["value"] == "late", r
    assert r["usage"]["wall_ms"] >= 500 and r["usage"]["cpu_ms"] < 100


def test_a_client_that_never_answers_meets_the_wall_clock(h):
    r, calls = run(h, {"lang": "python", "code": "print('asking')\ntools.never()",
                       "limits": {"wall_ms": 400}})
    assert len(calls) == 1
    assert r["error"]["kind"] == "timeout" and r["stdout"] == "asking\n", r
    # its late answer is ignored: nothing waits for it, nothing is written
    h.send({"jsonrpc": "2.0", "id": "tp-tool-99999", "result": 1})
    assert h.call("ping")["result"] == {}


def test_in_a_session_a_hanging_tool_is_a_soft_stop(h):
    sid = h.call("sandbox/session/open", {"lang": "lua"})["result"]["session_id"]
    r, _ = run(h, {"session_id": sid, "code": "x = 5 return tools.call('add', {a = x, b = 1})"})
    assert r["value"] == 6 and r["usage"]["tool_calls"] == 1
    r, calls = run(h, {"session_id": sid, "code": "return tools.call('never', {})",
                       "limits": {"wall_ms": 300}})
    assert calls[0]["session_id"] == sid
    assert r["error"]["kind"] == "timeout" and r["session_lost"] is False, r
    r, _ = run(h, {"session_id": sid, "code": "return x"})
    assert r["value"] == 5
    h.call("sandbox/session/close", {"session_id": sid})


def test_cancel_while_waiting_for_a_tool(h):
    h.next_id += 1
    rid = h.next_id
    h.send({"jsonrpc": "2.0", "id": rid, "method": "sandbox/exec",
            "params": {"lang": "lua", "code": "return tools.call('never', {})"}})
    m = h.read_line()
    assert m["method"] == "sandbox/tool_call"
    h.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid}})
    r = h.reply(rid)["result"]
    assert r["error"]["kind"] == "cancelled" and r["usage"]["tool_calls"] == 1, r


@pytest.mark.parametrize("value,msg", [
    ("x" * 2000, "the tool's result is 2002 bytes of JSON, more than result_bytes (1000)"),
    ([[[[["deep"]]]]], "the tool's result is nested deeper than result_depth (3)"),
])
def test_a_tool_result_is_held_to_the_execs_caps(h, value, msg):
    r, _ = run(h, {"lang": "lua", "code": "local ok, e = pcall(tools.call, 'add', {a = 1, b = 1}) return e",
                   "limits": {"result_bytes": 1000, "result_depth": 3}},
               handler=lambda n, a: {"result": value})
    assert r["ok"] is True and r["value"] == msg, r


def run_raw(h, params, answer_line, timeout=30):
    """As run, answering the one tool call with answer_line (bytes, the id in
    place of ID); (result, what else the host sent, the answer's length)."""
    h.next_id += 1
    rid = h.next_id
    h.send({"jsonrpc": "2.0", "id": rid, "method": "sandbox/exec", "params": params})
    other, sent = [], 0
    while True:
        m = h.read_line(timeout)
        if m.get("method") == "sandbox/tool_call":
            sent = len(answer_line.replace(b"ID", m["id"].encode()))
            h.send_raw(answer_line.replace(b"ID", m["id"].encode()) + b"\n")
            continue
        if m.get("id") == rid:
            return m.get("result", m), other, sent
        other.append(m)


LONG = 9 << 20  # past the host's 8 MiB line


@pytest.mark.parametrize("lang", ["lua", "python"])
@pytest.mark.parametrize("line,msg,other", [
    # past what jansson reads (2048 deep): the line is never parsed
    (b'{"jsonrpc":"2.0","id":"ID","result":' + b"[" * 3000 + b"]" * 3000 + b"}",
     "the tool's result is nested deeper than result_depth (64)", []),
    # past the line the host reads: the line is dropped (and the client told)
    (b'{"jsonrpc":"2.0","id":"ID","result":"' + b"x" * LONG + b'"}',
     "the tool's answer is {n} bytes, longer than the 8388608 bytes a line may hold "
     "(result_bytes is 1048576)",
     [{"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request: line longer than 8388608 bytes"}}]),
    (b'{"jsonrpc":"2.0","id":"ID","result":[1,}',
     "the tool's answer is not JSON: unexpected token near '}}' at column {n}", []),
])
def test_an_unreadable_answer_is_an_error_the_code_catches(h, lang, line, msg, other):
    """An answer the host cannot read whole (too deep for its parser, longer
    than its line) reaches the code as an error naming the cap, at once; the
    exec goes on (before: the call waited out the wall clock, kind timeout)."""
    code = {"lua": "local ok, e = pcall(tools.call, 'add', {a = 1, b = 1}) return {ok, e, 'after'}",
            "python": "try:\n    tools.add(a=1, b=1)\nexcept tools.ToolError as e:\n    r = [False, str(e), 'after']\nr"}[lang]
    t = time.monotonic()
    r, seen, n = run_raw(h, {"lang": lang, "code": code, "limits": {"wall_ms": 10000}}, line)
    assert r["ok"] is True and r["value"] == [False, msg.format(n=n), "after"], r
    assert seen == other and time.monotonic() - t < 8


@pytest.mark.parametrize("lang,code,msg", [
    ("lua", "tools.call('add', {a = string.rep('x', 2000)})",
     "tools.call: arguments cannot become JSON: they are more than 1000 bytes of JSON (result_bytes)"),
    ("lua", "tools.call('add', {a = {{{1}}}})",
     "tools.call: arguments cannot become JSON: they are nested deeper than result_depth (3)"),
    ("python", "tools.add(a='x' * 2000)",
     "tools: the arguments cannot become JSON: they are more than 1000 bytes of JSON (result_bytes)"),
    ("python", "tools.add(a=[[[1]]])",
     "tools: the arguments cannot become JSON: they are nested deeper than result_depth (3)"),
])
def test_arguments_over_the_caps_are_refused_naming_the_cap(h, lang, code, msg):
    r, calls = run(h, {"lang": lang, "code": code, "limits": {"result_bytes": 1000, "result_depth": 3}})
    assert calls == [] and r["ok"] is False and r["error"]["kind"] == "runtime_error", r
    assert said(r["error"]).endswith(msg), r


def test_bad_arguments_are_refused_in_the_language(h):
    r, calls = run(h, {"lang": "python", "code": "tools.add(1, 2)"})
    assert calls == [] and r["error"]["kind"] == "runtime_error"
    assert said(r["error"]) == "tools.add() takes keyword arguments only (or use tools.call)"
    r, calls = run(h, {"lang": "python", "code": "tools.call('add', {1: float('nan')})"})
    assert calls == [] and r["error"]["type"] == "TypeError", r
    r, calls = run(h, {"lang": "lua", "code": "tools.call('bad name!', {})"})
    assert calls == [] and said(r["error"]).endswith("a tool name is 1 to 64 of A-Z a-z 0-9 _ - ."), r
    for attr in ("_x", "__class__.__subclasses__", "__dict__"):
        r, calls = run(h, {"lang": "python", "code": f"tools.{attr}"})
        assert calls == [] and r["ok"] is False, (attr, r)


def test_mcp_tools_call_may_call_tools_too(h):
    r, calls = run(h, {"name": "run_lua", "arguments": {"code": "return tools.call('add', {a = 20, b = 22})"}},
                   method="tools/call")
    assert r["structuredContent"]["value"] == 42 and r["structuredContent"]["usage"]["tool_calls"] == 1
    assert calls[0]["exec_id"] == h.next_id


def test_the_audit_log_records_tool_calls(pol_dir):
    audit = os.path.join(pol_dir, "audit.log")
    h = Host(args=("--policy-dir", pol_dir, "--policy", "tooly", "--audit", audit))
    try:
        run(h, {"lang": "lua", "code": "tools.call('add', {a = 1, b = 1}) pcall(tools.call, 'rm', {})"})
    finally:
        h.close()
    line = json.loads(open(audit).read().splitlines()[-1])
    assert line["tool_calls"] == [{"name": "add", "outcome": "sent"},
                                  {"name": "rm", "outcome": "refused: not in the policy"}]
    assert line["kind"] == "policy_violation" and line["usage"]["tool_calls"] == 1


MSG_VERSION = int(re.search(r"#define TP_MSG_VERSION (\d+)", open(os.path.join(
    os.path.dirname(__file__), "..", "..", "common", "msg.h")).read()).group(1))


def frame(name, args):
    """A TOOL_CALL frame as a worker sends it (docs/worker-protocol.md)."""
    n, a = name.encode(), json.dumps(args).encode()
    body = struct.pack("<IBBBB", 0x676d7074, MSG_VERSION, 3, 0, 0) + struct.pack("<I", len(n)) + n + \
        struct.pack("<I", len(a)) + a
    return struct.pack("<I", len(body)) + body


@needs_landlock
def test_a_forged_call_is_refused_by_the_host(h):
    """kernel-only: the code writes a tool-call frame on its own channel. The host
    holds it to the policy as any call: refused, and the client never asked."""
    code = (
        "import os, stat\n"
        f"forged = {frame('rm', {'path': '/'})!r}\n"
        "def sock(fd):\n"
        "    try:\n"
        "        return stat.S_ISSOCK(os.fstat(fd).st_mode)\n"
        "    except OSError:\n"
        "        return False\n"
        "fd = [fd for fd in range(3, 64) if sock(fd)][0]\n"
        "os.write(fd, forged)\n"
        "print(os.read(fd, 4096)[8:])\n"
    )
    r, calls = run(h, {"lang": "python", "code": code, "policy": "tooly-ko"})
    assert calls == []
    assert r["error"]["kind"] == "policy_violation" and r["error"]["layer"] == "host", r
    assert said(r["error"]) == "tool 'rm' is not allowed by policy 'tooly-ko' (its tools: add)"
    # and a frame that is not even a call ends the worker, nothing else
    code2 = code.replace("os.write(fd, forged)", "os.write(fd, b'\\x05\\x00\\x00\\x00junk!')")
    r, calls = run(h, {"lang": "python", "code": code2, "policy": "tooly-ko"})
    assert calls == [] and (r["error"]["kind"], r["error"]["layer"]) == ("crashed", "process"), r
    assert said(r["error"]) == "worker reply refused: not a reply of this version", r


def test_execs_waiting_on_tools_do_not_hold_the_jobs(pol_dir):
    """--jobs 1: four execs each wait for the client's tool. All four calls reach
    the client before it answers any: an exec waiting on a tool computes nothing
    and does not hold a job."""
    h = Host(args=("--policy-dir", pol_dir, "--policy", "tooly", "--jobs", "1"))
    try:
        for i in range(4):
            h.send({"jsonrpc": "2.0", "id": i, "method": "sandbox/exec",
                    "params": {"lang": "lua", "code": f"return tools.call('add', {{a = {i}, b = 100}})"}})
        calls = [h.read_line() for _ in range(4)]
        assert [c["method"] for c in calls] == ["sandbox/tool_call"] * 4, calls
        for c in calls:
            a = c["params"]["arguments"]
            h.send({"jsonrpc": "2.0", "id": c["id"], "result": a["a"] + a["b"]})
        assert sorted(h.reply(i)["result"]["value"] for i in range(4)) == [100, 101, 102, 103]
    finally:
        h.close()


def test_execs_waiting_on_tools_are_bounded_by_the_queue(pol_dir):
    """A client that never answers its tools: at most --queue execs wait on tools
    without holding a job; past that a waiting exec holds its job slot, the
    next ones queue, and past the queue the host answers busy. Without the
    bound each new exec would start, call, wait, and hold a process forever."""
    h = Host(args=("--policy-dir", pol_dir, "--policy", "tooly", "--jobs", "1", "--queue", "1"))
    try:
        code = {"lang": "lua", "code": "return tools.call('never', {})", "limits": {"wall_ms": 10000}}
        for i in range(2):  # the first waits free (the cap is 1), the second holds the job
            h.send({"jsonrpc": "2.0", "id": i, "method": "sandbox/exec", "params": code})
            m = h.read_line()
            assert m["method"] == "sandbox/tool_call", m
        h.send({"jsonrpc": "2.0", "id": 2, "method": "sandbox/exec", "params": code})  # queued
        h.send({"jsonrpc": "2.0", "id": 3, "method": "sandbox/exec", "params": code})  # past the queue
        r = h.reply(3)
        assert r["error"]["code"] == -32001, r
        # the queued one did not start: no third call reached the client
        assert h.call("ping")["result"] == {}
        with pytest.raises(TimeoutError):
            h.read_line(1.0)
        assert not any(json.loads(l).get("method") == "sandbox/tool_call" for l in h.lines[2:]), h.lines
        h.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 0}})
        seen = [h.read_line(), h.read_line()]  # the job is free: the queued exec runs and calls
        assert sorted(str(m.get("method", m.get("id"))) for m in seen) == ["0", "sandbox/tool_call"], seen
        assert [m for m in seen if m.get("id") == 0][0]["result"]["error"]["kind"] == "cancelled", seen
    finally:
        h.close()


def test_a_refused_call_does_not_lift_the_wall_clock(h):
    """A refused call sets the exec's verdict; the code goes on looping. The wall
    clock still ends it (the host once stopped watching an exec that had a
    verdict: it ran to its CPU limit while the host spun)."""
    r, calls = run(h, {"lang": "lua", "code": "pcall(tools.call, 'rm', {}) while true do end",
                       "limits": {"wall_ms": 300, "cpu_ms": 5000}})
    assert calls == []
    assert r["error"]["kind"] == "policy_violation" and r["error"]["layer"] == "host", r
    assert r["usage"]["cpu_ms"] < 2500 and r["usage"]["wall_ms"] < 2500, r["usage"]


@needs_landlock
def test_a_reply_while_a_call_waits_is_refused(h):
    """kernel-only: the code writes a call on its own channel and returns without
    waiting for the answer. The worker's reply comes while the host owes it that
    answer, which would reach its next exec: the host ends the worker."""
    code = (
        "import os, stat\n"
        f"forged = {frame('add', {'a': 1, 'b': 2})!r}\n"
        "def sock(fd):\n"
        "    try:\n"
        "        return stat.S_ISSOCK(os.fstat(fd).st_mode)\n"
        "    except OSError:\n"
        "        return False\n"
        "fd = [fd for fd in range(3, 64) if sock(fd)][0]\n"
        "os.write(fd, forged)\n"
        "1\n"
    )
    r, calls = run(h, {"lang": "python", "code": code, "policy": "tooly-ko"},
                   handler=lambda n, a: (time.sleep(0.5), {"result": 3})[1])
    assert [c["name"] for c in calls] == ["add"]
    assert r["ok"] is False and (r["error"]["kind"], r["error"]["layer"]) == ("crashed", "process"), r
    assert said(r["error"]) == "worker reply refused: sent while its tool call was unanswered", r
