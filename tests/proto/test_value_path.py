"""The value path (docs/performance.md, "A value kept as text"): a compact array
or object value is checked by the host without a tree (tp_json_check) and
written into the reply from the worker's bytes, where the reply is written at
once and nothing redacts it; everywhere else (a batch, HTTP, a redacting
policy, a value the check cannot tell about, nonfinite numbers) its tree is
made. Every route gives the same value and text, byte for byte where the
host writes the line itself."""
import json
import os
import select

import pytest

from conftest import Host, policy_dir
from test_http import Server, rq

COMPACT = (",", ":")
RECORDS_PY = ("[{'id': i, 'name': 'item %d \\u00e9\"\\\\' % i, 'price': i * 0.25, 'ok': i % 2 == 0}"
              " for i in range(1, 301)]")
RECORDS = [{"id": i, "name": 'item %d \u00e9"\\' % i, "price": i * 0.25, "ok": i % 2 == 0}
           for i in range(1, 301)]
RECORDS_LUA = ("local t = {} for i = 1, 300 do t[i] = {id = i, x = i / 8, s = 'q\"\\\\' .. i} end"
               " return t")
RECORDS_L = [{"id": i, "x": i / 8, "s": 'q"\\' + str(i)} for i in range(1, 301)]
WIDE = {"k%02d" % i: i for i in range(20)}  # more keys than a check compares: a tree

CASES = [  # (lang, code, value): each over 4096 bytes of JSON, so the text is the value's
    ("python", RECORDS_PY, RECORDS),
    ("lua", RECORDS_LUA, RECORDS_L),
    ("python", "[%r for _ in range(300)]" % WIDE, [WIDE] * 300),
    ("python", "[{'\\u00e9\\u00e9': i} for i in range(600)]", [{"\u00e9\u00e9": i} for i in range(600)]),
]


def dumps(v):
    return json.dumps(v, separators=COMPACT, ensure_ascii=False)


def check_result(res, want):
    assert res["ok"] is True, res
    assert res["value"] == want
    assert res["text"] == dumps(res["value"])  # the value's JSON, in the value's key order


@pytest.mark.parametrize("lang,code,want", CASES)
def test_a_value_comes_back_the_same_on_every_route(lang, code, want):
    params = {"lang": lang, "code": code}
    tool = {"name": "run_python" if lang == "python" else "run_lua", "arguments": {"code": code}}
    with policy_dir("tp-value-", {"redacting": {"extends": "standard",
                                                "redact": {"strings": ["never-there-7q"]}}}) as d:
        h = Host(args=("--policy-dir", d))
        try:
            # stdio, written at once: the value and its text from the worker's bytes
            res = h.call("sandbox/exec", params)["result"]
            check_result(res, want)
            line = h.lines[-1]
            text = dumps(res["value"])
            assert b'"value":' + text.encode() + b',"text":' + json.dumps(
                text, ensure_ascii=False, separators=COMPACT).encode() in line
            # MCP: structuredContent, and the content text is the result's JSON
            r = h.call("tools/call", tool)["result"]
            check_result(r["structuredContent"], want)
            assert r["content"][0]["text"] == dumps(r["structuredContent"])
            # a redacting policy: the tree is made and walked
            check_result(h.call("sandbox/exec", dict(params, policy="redacting"))["result"], want)
            # a batch (MCP 2025-03-26 has them): its replies are held, so each
            # value is a tree
            assert "result" in h.call("initialize", {"protocolVersion": "2025-03-26",
                                                     "capabilities": {},
                                                     "clientInfo": {"name": "t", "version": "1"}})
            h.send([rq(1, "sandbox/exec", params), rq(2, "tools/call", tool)])
            line = _read_raw_line(h)
            replies = {m["id"]: m for m in json.loads(line)}
            check_result(replies[1]["result"], want)
            check_result(replies[2]["result"]["structuredContent"], want)
        finally:
            h.proc.stdin.close()
            h.proc.wait(10)


def _read_raw_line(h):
    """The next line, a batch's array (Host.read_line takes one message)."""
    while b"\n" not in h.buf:
        r, _, _ = select.select([h.proc.stdout], [], [], 30)
        assert r, "no reply"
        chunk = os.read(h.proc.stdout.fileno(), 1 << 20)
        assert chunk
        h.buf += chunk
    line, h.buf = h.buf.split(b"\n", 1)
    return line


@pytest.mark.parametrize("lang,code,want", CASES[:2])
def test_a_value_over_http_is_the_same(lang, code, want):
    s = Server()
    try:
        tool = {"name": "run_python" if lang == "python" else "run_lua", "arguments": {"code": code}}
        status, _, body = s.post(rq(1, "tools/call", tool), headers={"Accept": "application/json"})
        assert status == 200, body
        check_result(body["result"]["structuredContent"], want)
        status, _, body = s.post(rq(2, "tools/call", tool))  # an SSE stream
        assert status == 200, body
        check_result(body["result"]["structuredContent"], want)
    finally:
        s.stop()


def test_nonfinite_numbers_in_a_large_value_are_resolved():
    """nonfinite's pointers are resolved in the value's tree: made for them."""
    h = Host()
    try:
        code = "[{'i': i, 'v': float('nan') if i == 7 else i / 2} for i in range(400)]"
        res = h.call("sandbox/exec", {"lang": "python", "code": code})["result"]
        assert res["ok"] is True, res
        assert res["nonfinite"] == {"/7/v": "nan"}
        assert res["value"][7] == {"i": 7, "v": None} and res["value"][8] == {"i": 8, "v": 4.0}
    finally:
        h.proc.stdin.close()
        h.proc.wait(10)
