"""JSON-RPC and MCP behaviour of the real binary."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import (said, BINARY, Host, alive_since, assert_healthy, cpu_ticks, identities, wait_spinning,
                      wait_warm_workers)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cases"))
import protocol_cases  # noqa: E402


def test_issue_example(host):
    host.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"sandbox/exec","params":{"lang":"lua","code":"print(\'hi\') return 1+1"}}\n')
    r = host.reply(1)["result"]
    assert r["ok"] is True
    assert r["value"] == 2
    assert r["stdout"] == "hi\n"
    assert r["stderr"] == ""
    assert r["error"] is None
    assert r["truncated"] == {"stdout": False, "stderr": False}
    assert set(r["usage"]) == {"instructions", "memory_peak_bytes", "cpu_ms", "wall_ms", "queue_ms",
                               "tool_calls"}
    assert r["usage"]["memory_peak_bytes"] > 0
    assert r["usage"]["wall_ms"] > 0


def test_initialize_echoes_supported_version(host):
    for v in ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]:
        r = host.call("initialize", {"protocolVersion": v, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})
        assert r["result"]["protocolVersion"] == v
        assert r["result"]["serverInfo"]["name"] == "tidepool"
        assert r["result"]["capabilities"]["tools"] == {"listChanged": False}
    r = host.call("initialize", {"protocolVersion": "2023-01-01"})
    assert r["result"]["protocolVersion"] == "2025-11-25"


def test_initialized_notification_gets_no_reply_and_ping_works(host):
    host.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    r = host.call("ping")
    assert r["result"] == {}
    assert len(host.lines) == 1  # nothing was written for the notification


def test_tools_list_and_call(host):
    tools = host.call("tools/list")["result"]["tools"]
    assert [t["name"] for t in tools] == ["run_lua", "run_python", "list_sessions", "close_session",
                                          "write_file", "read_file", "list_files"]
    assert tools[0]["inputSchema"]["required"] == ["code"]
    assert tools[0]["outputSchema"]["type"] == "object"
    r = host.call("tools/call", {"name": "run_lua", "arguments": {"code": "return x * 2", "inputs": {"x": 21}}})["result"]
    assert r["isError"] is False
    assert r["structuredContent"]["value"] == 42
    assert json.loads(r["content"][0]["text"])["value"] == 42
    r = host.call("tools/call", {"name": "run_lua", "arguments": {"code": "error('boom')"}})["result"]
    assert r["isError"] is True
    assert r["structuredContent"]["error"]["kind"] == "runtime_error"


def conforms(v, schema, path="$"):
    """The subset of JSON Schema the outputSchema uses: type, enum, properties, required."""
    kinds = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}
    types = schema.get("type")
    if types is not None:
        types = types if isinstance(types, list) else [types]
        ok = any((t == "integer" and isinstance(v, int) and not isinstance(v, bool)) or
                 (t == "number" and isinstance(v, (int, float)) and not isinstance(v, bool)) or
                 (t in kinds and isinstance(v, kinds[t])) for t in types)
        assert ok, f"{path}: {v!r} is not {types}"
    if "enum" in schema:
        assert v in schema["enum"], f"{path}: {v!r} not in {schema['enum']}"
    if isinstance(v, dict):
        for k in schema.get("required", []):
            assert k in v, f"{path}: {k} missing"
        for k, sub in schema.get("properties", {}).items():
            if k in v:
                conforms(v[k], sub, f"{path}.{k}")


ERROR_CASES = [
    ("lua", "return 1", {}, None),
    ("lua", "return (", {}, "syntax_error"),
    ("lua", "error({})", {}, "runtime_error"),
    ("lua", "local t = {} t.t = t return t", {}, "result_error"),
    ("lua", "return x", {"inputs": {"x": [[[1]]]}, "limits": {"result_depth": 2}}, "input_error"),
    ("lua", "while true do end", {"limits": {"instructions": 1000}}, "instruction_limit"),
    ("lua", "return string.rep('x', 1 << 26)", {"limits": {"memory_bytes": 1 << 20}}, "memory_limit"),
    ("lua", "print(string.rep('x', 100))", {"limits": {"output_bytes": 10}}, "output_limit"),
    ("lua", "local t = os.time() while os.time() - t < 5 do end", {"limits": {"wall_ms": 100}}, "timeout"),
    ("python", "1/0", {}, "runtime_error"),
    ("python", "__import__('os')", {}, "policy_violation"),
    ("python", "{1, 2}", {}, None),
]


def test_every_error_matches_the_output_schema(host):
    """The MCP SDK checks structuredContent against outputSchema, errors included."""
    schema = host.call("tools/list")["result"]["tools"][0]["outputSchema"]
    seen = set()
    for lang, code, extra, kind in ERROR_CASES:
        r = host.call("sandbox/exec", {"lang": lang, "code": code, **extra})["result"]
        conforms(r, schema)
        assert (r["error"] or {}).get("kind") == kind, (code, r["error"])
        if kind is not None:
            assert r["error"]["type"] is None or isinstance(r["error"]["type"], str)
            seen.add(kind)
    assert {"result_error", "input_error", "instruction_limit", "timeout", "policy_violation"} <= seen


def test_pipelined_requests_match_ids(host):
    n = 40
    for i in range(n):
        host.send({"jsonrpc": "2.0", "id": f"r{i}", "method": "sandbox/exec",
                   "params": {"lang": "lua", "code": f"return {i} * 3"}})
    for i in reversed(range(n)):
        r = host.reply(f"r{i}")
        assert r["result"]["value"] == i * 3


# Every protocol fault is a case of tests/cases/protocol/ (tests/cases/README.md):
# its raw input lines, and the replies they get, in order.
CASES = protocol_cases.load()


def test_fault_cases_cover_every_stage():
    assert {c.stage for c in CASES} == set(protocol_cases.STAGES)
    assert len(CASES) >= 30


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_protocol_fault_then_host_keeps_serving(host, case):
    host.send_raw(case.input())
    for want in case.replies:
        got = host.read_line(timeout=60)
        assert protocol_cases.matches(want, got), (case.name, want, got)
    # Nothing else was answered: the next line is the reply to this ping.
    assert host.call("ping")["result"] == {}
    assert host.pending == {}, (case.name, host.pending)
    assert_healthy(host)


def test_all_fault_cases_through_one_host(host):
    for case in CASES:
        host.send_raw(case.input())
        for want in case.replies:
            got = host.read_line(timeout=60)
            assert protocol_cases.matches(want, got), (case.name, want, got)
    assert host.call("ping")["result"] == {}
    assert host.pending == {}
    assert_healthy(host)


def test_cancel_of_an_mcp_call_stops_it_and_sends_no_reply(host):
    host.send({"jsonrpc": "2.0", "id": "long", "method": "tools/call",
               "params": {"name": "run_lua", "arguments": {"code": "while true do end"}}})
    time.sleep(0.2)
    host.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "long"}})
    r = host.call("ping")
    assert r["result"] == {}
    time.sleep(0.3)
    assert_healthy(host)
    assert "long" not in host.pending
    assert all(json.loads(l).get("id") != "long" for l in host.lines)


@pytest.mark.parametrize("lang,code", [
    ("lua", "print('so far') while true do end"),
    ("python", "print('so far')\nwhile True: pass"),
])
def test_cancel_of_a_native_exec_answers_cancelled_with_the_output(host, lang, code):
    # The cancel goes once the output is there (streamed): on a loaded machine a
    # fixed sleep could cancel the exec before its print.
    host.send({"jsonrpc": "2.0", "id": "native", "method": "sandbox/exec",
               "params": {"lang": lang, "code": code, "stream": True}})
    while True:
        msg = host.read_line()
        if msg.get("method") == "sandbox/output" and msg["params"]["exec_id"] == "native":
            assert msg["params"]["text"] == "so far\n", msg
            break
        host.pending[msg.get("id")] = msg
    host.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "native"}})
    r = host.reply("native")["result"]
    assert r["ok"] is False and r["stdout"] == "so far\n", r
    assert r["error"] == {"kind": "cancelled", "layer": "host", "type": None,
                          "message": "cancelled by the client (notifications/cancelled)",
                          "traceback": None, "line": None, "column": None,
                          "rule": None, "policy": "standard"}
    assert r["usage"]["wall_ms"] < 5000  # stopped, not run to its wall clock
    assert_healthy(host)


def test_cancel_of_a_queued_exec_answers_at_once_and_never_runs_it():
    h = Host(args=("--jobs", "1"))
    try:
        h.send({"jsonrpc": "2.0", "id": "busy", "method": "sandbox/exec",
                "params": {"lang": "lua", "code": "while true do end", "limits": {"wall_ms": 1500}}})
        h.send({"jsonrpc": "2.0", "id": "queued", "method": "sandbox/exec",
                "params": {"lang": "lua", "code": "print('ran')"}})
        h.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "queued"}})
        r = h.reply("queued")["result"]
        assert r["error"]["kind"] == "cancelled" and r["stdout"] == "" and r["usage"]["wall_ms"] == 0, r
        assert "busy" in h.pending or h.reply("busy")["result"]["error"]["kind"] == "timeout"
    finally:
        h.close()


def test_cancel_sent_as_a_request_is_refused_and_cancels_nothing(host):
    """A notification with an id is refused (a request must be answered, a
    notification must not be): the exec it names runs on and answers."""
    host.send({"jsonrpc": "2.0", "id": "slow", "method": "sandbox/exec",
               "params": {"lang": "lua", "code": "local t=os.clock() while os.clock()-t < 0.3 do end return 'ran'"}})
    r = host.call("notifications/cancelled", {"requestId": "slow"})
    assert r["error"]["code"] == -32600 and "is a notification" in said(r["error"]), r
    assert host.reply("slow", timeout=60)["result"]["value"] == "ran"


def test_eof_finishes_in_flight_then_exits_zero():
    h = Host()
    h.send({"jsonrpc": "2.0", "id": 1, "method": "sandbox/exec", "params": {"lang": "lua", "code": "local t=os.clock() while os.clock()-t < 0.2 do end return 'done'"}})
    h.send({"jsonrpc": "2.0", "id": 2, "method": "sandbox/exec", "params": {"lang": "lua", "code": "return 'two'"}})
    h.proc.stdin.close()
    out = h.proc.stdout.read()
    assert h.proc.wait(timeout=10) == 0
    replies = {m["id"]: m for m in map(json.loads, out.splitlines())}
    assert replies[1]["result"]["value"] == "done"
    assert replies[2]["result"]["value"] == "two"


def test_sigterm_kills_workers_and_exits():
    h = Host()
    try:
        idle = {p: t for p in wait_warm_workers(h, 2) if (t := cpu_ticks(p)) is not None}
        h.send({"jsonrpc": "2.0", "id": 1, "method": "sandbox/exec", "params": {"lang": "lua", "code": "while true do end"}})
        wait_spinning(idle)  # the exec is running (however long the pool took to start)
        kids = identities(h.children())
        assert len(kids) >= 2  # the zygote and at least the running worker
        h.proc.send_signal(signal.SIGTERM)
        assert h.proc.wait(timeout=30) == 128 + signal.SIGTERM
        # Killed processes can take a while to exit on a busy machine; one left
        # alive stays, and is reported after the deadline.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and alive_since(kids):
            time.sleep(0.05)
        assert alive_since(kids) == []
    finally:
        if h.proc.poll() is None:  # failed before the signal: do not leave it running
            h.proc.kill()
            h.proc.wait()


def test_run_command(tmp_path):
    f = tmp_path / "hello.lua"
    f.write_text("print('hello from a file')\nreturn {answer = 42}\n")
    p = subprocess.run([BINARY, "run", str(f)], capture_output=True, text=True, timeout=20)
    assert p.returncode == 0
    assert p.stdout == "hello from a file\n"
    assert 'value: {"answer":42}' in p.stderr
    f.write_text("local x = nil\nreturn x.y\n")
    p = subprocess.run([BINARY, "run", str(f)], capture_output=True, text=True, timeout=20)
    assert p.returncode == 1
    assert "error: runtime_error (language layer)" in p.stderr
    p = subprocess.run([BINARY, "run", str(tmp_path / "missing.lua")], capture_output=True, text=True, timeout=20)
    assert p.returncode == 2
    assert "No such file" in p.stderr


def test_run_picks_the_language_from_the_file_name(tmp_path):
    def run(*args, stdin=None):
        return subprocess.run([BINARY, "run", *args], input=stdin, capture_output=True, text=True, timeout=20)

    py = tmp_path / "snippet.py"
    py.write_text("print('from python')\n[1, 2][-1] + 40\n")  # not Lua: a negative index
    p = run(str(py))
    assert p.returncode == 0, p.stderr
    assert p.stdout == "from python\n"
    assert "value: 42" in p.stderr
    lua = tmp_path / "snippet.lua"
    lua.write_text("return #{1, 2} + 40\n")  # not Python
    p = run(str(lua))
    assert p.returncode == 0, p.stderr
    assert "value: 42" in p.stderr
    # No known ending and no --lang: a usage error that names the choices.
    txt = tmp_path / "snippet.txt"
    txt.write_text(py.read_text())
    for args in ((str(txt),), ("-",)):
        p = run(*args, stdin="return 1\n")
        assert p.returncode == 2
        assert p.stdout == ""
        assert "--lang" in p.stderr and "lua" in p.stderr and "python" in p.stderr
    # --lang decides over the name.
    p = run("--lang", "python", str(txt))
    assert p.returncode == 0, p.stderr
    assert "value: 42" in p.stderr
    p = run("--lang", "lua", "-", stdin="return 7\n")
    assert p.returncode == 0, p.stderr
    assert "value: 7" in p.stderr
    p = run("--lang", "cobol", str(lua))
    assert p.returncode == 2
    assert "cobol" in p.stderr and "lua" in p.stderr and "python" in p.stderr
