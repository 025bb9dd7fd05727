"""usage as the client reads it: cpu_ms from the worker's exact CPU clock (not
a tick-sampled one), and every number in the raw reply line printed without
float noise. Only sanity bounds on timings: the behaviour is what is checked."""
import json
import re

import pytest

from conftest import Host


@pytest.fixture(scope="module")
def h():
    host = Host()
    yield host
    host.close()


def raw_reply(h, id):
    """The raw stdout line that answered request id (bytes), and its parse."""
    for line in reversed(h.lines):
        msg = json.loads(line)
        if msg.get("id") == id:
            return line, msg
    raise AssertionError(f"no reply line for {id}")


def exec_raw(h, code, **params):
    id = h.next_id
    h.next_id += 1
    h.send({"jsonrpc": "2.0", "id": id, "method": "sandbox/exec", "params": {"lang": "lua", "code": code, **params}})
    h.reply(id, timeout=30)
    return raw_reply(h, id)


# -- cpu_ms -------------------------------------------------------------------------

@pytest.mark.parametrize("lang,code", [("lua", "return 1+1"), ("python", "1+1")])
def test_trivial_exec_cpu_is_measured_not_ticked(h, lang, code):
    # A tick-sampled clock reads such an exec as 0 or one tick (4 ms at HZ=250).
    cpus = [h.exec(code, lang=lang)["usage"]["cpu_ms"] for _ in range(5)]
    assert all(0 < c < 50 for c in cpus), cpus
    assert any(round(c * 1000) % 1000 != 0 for c in cpus), cpus  # not whole ms, let alone ticks


def test_busy_loop_cpu_matches_the_snippets_own_clock(h):
    r = h.exec("local t = os.clock() local s = 0\n"
               "while os.clock() - t < 0.05 do s = s + 1 end\n"
               "return (os.clock() - t) * 1000")
    assert r["ok"] is True, r
    own, cpu = r["value"], r["usage"]["cpu_ms"]
    # os.clock (the process clock) is itself only as fine as a tick while the CPU timer runs.
    assert own >= 50 and own - 10 <= cpu <= own + 25, r


def test_killed_worker_cpu_is_the_execs_share(h):
    # No reply: the reaped rusage less the worker's CPU when the exec began. Its
    # startup is not counted, and a single-threaded exec cannot use more CPU
    # than the time it ran.
    for lang, code in [("lua", "while true do end"), ("python", "while True:\n    pass")]:
        r = h.exec(code, lang=lang, limits={"wall_ms": 300})
        assert r["error"]["kind"] == "timeout", r
        u = r["usage"]
        assert 0 < u["cpu_ms"] <= u["wall_ms"] + 1, u


def test_session_exec_cpu_is_its_own(h):
    sid = h.call("sandbox/session/open", {"lang": "lua"})["result"]["session_id"]
    busy = h.call("sandbox/exec", {"session_id": sid, "code": "local t = os.clock()\n"
                                   "while os.clock() - t < 0.05 do end return 1"})["result"]
    assert busy["ok"] is True and busy["usage"]["cpu_ms"] >= 40, busy
    r = h.call("sandbox/exec", {"session_id": sid, "code": "return 2"})["result"]
    assert r["ok"] is True and 0 < r["usage"]["cpu_ms"] < 40, r  # not the session's total
    h.call("sandbox/session/close", {"session_id": sid})


# -- numbers in the raw text ------------------------------------------------------------

def sig_digits(tok):
    mant = tok.lower().split("e")[0].lstrip("-").replace(".", "")
    return len(mant.lstrip("0").rstrip("0")) or 1


def assert_clean(text):
    """Every real of a JSON text is written with its shortest digits, and reads
    back as itself; integers stay integers and reals reals."""
    reals = []

    def real(tok):
        reals.append(tok)
        d = float(tok)
        assert sig_digits(tok) == sig_digits(repr(d)), (tok, repr(d), text)
        return d
    json.loads(text, parse_float=real)
    return reals


USAGE_TIME = re.compile(rb'"(cpu_ms|wall_ms|queue_ms)":(-?[0-9][0-9.eE+-]*)')


def assert_usage_text(line):
    found = USAGE_TIME.findall(line)
    assert {k for k, _ in found} == {b"cpu_ms", b"wall_ms", b"queue_ms"}, line
    for k, v in found:
        assert re.fullmatch(rb"[0-9]+\.[0-9]{1,3}", v), (k, v, line)  # a real, at most 3 decimals


@pytest.mark.parametrize("lang,code,text", [
    ("lua", "return 0.1", b'"value":0.1,'),
    ("python", "0.1+0.2", b'"value":0.30000000000000004,'),
    ("lua", "return 0.1 + 0.2", b'"value":0.30000000000000004,'),
    ("lua", "return {1e300, -0.0, 3.0, 5e-324, -1.5e-7, 2^53, 1/3, 7}",
     b'"value":[1e300,-0.0,3.0,5e-324,-1.5e-7,9007199254740992.0,0.3333333333333333,7],'),
    ("python", "[1e300, -0.0, 3.0, 5e-324, -1.5e-7, 1/3, 7, {'0.10000000000000001': '0.10000000000000001'}]",
     b'"value":[1e300,-0.0,3.0,5e-324,-1.5e-7,0.3333333333333333,7,'
     b'{"0.10000000000000001":"0.10000000000000001"}],'),
    ("lua", "return {s = 'a\\\"0.10000000000000001\\\\', x = -0.1}",
     b'"value":{"s":"a\\"0.10000000000000001\\\\","x":-0.1},'),
])
def test_reals_in_the_raw_reply_are_shortest(h, lang, code, text):
    line, msg = exec_raw(h, code, lang=lang)
    assert msg["result"]["ok"] is True, msg
    assert text in line, line
    assert_usage_text(line)
    assert_clean(line)


def test_usage_of_a_failed_and_a_killed_exec_is_clean(h):
    for code, limits in [("error('x')", {}), ("while true do end", {"wall_ms": 100}),
                         ("while true do end", {"cpu_ms": 50})]:
        line, msg = exec_raw(h, code, limits=limits)
        assert msg["result"]["ok"] is False, msg
        assert_usage_text(line)
        assert_clean(line)


def test_mcp_text_is_clean_inside_and_out(h):
    h.next_id += 1
    id = h.next_id
    h.send({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "run_lua", "arguments": {"code": "return {0.1, 1/3, 3.0, -0.0}"}}})
    h.reply(id)
    line, msg = raw_reply(h, id)
    assert_clean(line)
    text = msg["result"]["content"][0]["text"]
    assert '"value":[0.1,0.3333333333333333,3.0,-0.0]' in text, text
    assert_usage_text(text.encode())
    assert_clean(text)
    assert json.loads(text) == msg["result"]["structuredContent"]


def test_tool_call_arguments_and_audit_lines_are_clean(tmp_path):
    with open(tmp_path / "echo.json", "w") as f:
        json.dump({"name": "echo", "extends": "standard", "tools": ["echo"]}, f)
    audit = tmp_path / "audit.log"
    host = Host(args=("--policy-dir", str(tmp_path), "--policy", "echo", "--audit", str(audit)))
    try:
        host.send({"jsonrpc": "2.0", "id": 1, "method": "sandbox/exec", "params": {
            "lang": "lua", "code": "return tools.call('echo', {x = 0.1, y = 0.1 + 0.2}) * 1"}})
        while True:
            m = host.read_line()
            if m.get("method") == "sandbox/tool_call":
                assert b'"arguments":{"x":0.1,"y":0.30000000000000004}' in host.lines[-1], host.lines[-1]
                host.send({"jsonrpc": "2.0", "id": m["id"], "result": 0.5})
            elif m.get("id") == 1:
                break
        assert m["result"]["value"] == 0.5, m
        for line in host.lines:
            assert_clean(line)
    finally:
        host.close()
    lines = audit.read_bytes().splitlines()
    assert lines, "no audit line"
    for line in lines:
        assert_usage_text(line)
        assert_clean(line)
