"""What the host says while an exec runs: sandbox/output notifications of its new
output (sandbox/exec with "stream": true) and MCP notifications/progress (a
tools/call with _meta.progressToken). The notifications of a stream, joined, are
exactly the reply's stdout or stderr; none comes after the reply, nor after an
MCP cancel; whole characters only; the output cap holds; a policy that redacts
refuses streaming; a slow client stops a stream, never the reply."""
import json
import os
import shutil
import tempfile
import time

import pytest

from conftest import Host

INVALID_PARAMS = -32602

# Lua: spin for s seconds of CPU (os.clock), so the host's 50 ms tick sees the
# output written before it while the code still runs.
SPIN = "local function spin(s) local t=os.clock() while os.clock()-t<s do end end\n"


@pytest.fixture(scope="module")
def h():
    host = Host()
    yield host
    host.close()


@pytest.fixture
def pol_dir():
    d = tempfile.mkdtemp(prefix="tp-stream-", dir="/tmp")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def policy_host(d, name, **extra):
    path = os.path.join(d, name + ".json")
    with open(path, "w") as f:
        json.dump({"name": name, "extends": "standard", **extra}, f)
    return Host(args=("--policy", path))


def send(h, method, params, id=None):
    if id is None:
        h.next_id += 1
        id = h.next_id
    h.send({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
    return id


def until_reply(h, id, timeout=30.0):
    """Reads until the reply to id; returns it and the notifications read before
    it, in order (replies to other ids are kept for h.reply)."""
    notes = []
    while True:
        msg = h.read_line(timeout)
        if "id" not in msg:
            notes.append(msg)
        elif msg["id"] == id:
            return msg, notes
        else:
            h.pending[msg["id"]] = msg


def outputs(notes, id, stream="stdout"):
    """The texts of id's sandbox/output notifications of one stream, in order."""
    out = []
    for n in notes:
        if n["method"] == "sandbox/output" and n["params"]["exec_id"] == id:
            assert set(n["params"]) == {"exec_id", "stream", "text"}, n
            assert n["params"]["stream"] in ("stdout", "stderr"), n
            if n["params"]["stream"] == stream:
                out.append(n["params"]["text"])
    return out


def stream_exec(h, code, lang="lua", id=None, **params):
    """A streaming exec: its result and the notifications before its reply."""
    id = send(h, "sandbox/exec", {"lang": lang, "code": code, "stream": True, **params}, id)
    r, notes = until_reply(h, id)
    assert "result" in r, r
    return id, r["result"], notes


def nothing_more(h, pred, wait=0.0):
    """After wait seconds, a ping: no message matching pred came before its reply."""
    time.sleep(wait)
    id = send(h, "ping", {})
    r, notes = until_reply(h, id)
    assert r["result"] == {}
    assert [n for n in notes if pred(n)] == []


# -- stream: true ------------------------------------------------------------------------

def test_chunks_arrive_while_it_runs_then_the_reply(h):
    code = SPIN + 'print("one") spin(0.3) print("two") return 1'
    id, r, notes = stream_exec(h, code)
    assert r["ok"] is True and r["value"] == 1, r
    assert r["stdout"] == "one\ntwo\n"
    # "one" was sent alone, while the code spun, before "two" existed.
    assert outputs(notes, id) == ["one\n", "two\n"]
    assert outputs(notes, id, "stderr") == []
    nothing_more(h, lambda n: n.get("method") == "sandbox/output", wait=0.2)


def test_joined_notifications_are_the_final_stdout_and_stderr(h):
    # Lua's stderr is warn()'s: "Lua warning: ..." lines.
    code = SPIN + 'warn("@on") for i = 1, 6 do print("out " .. i) warn("err " .. i) spin(0.06) end'
    id, r, notes = stream_exec(h, code)
    assert r["ok"] is True, r
    assert r["stdout"] == "".join(f"out {i}\n" for i in range(1, 7))
    assert r["stderr"] == "".join(f"Lua warning: err {i}\n" for i in range(1, 7))
    out, err = outputs(notes, id), outputs(notes, id, "stderr")
    assert "".join(out) == r["stdout"]
    assert "".join(err) == r["stderr"]
    assert len(out) >= 2 and len(err) >= 2  # it streamed, not one piece at the end


def test_python_streams_its_stdout(h):
    # Python's stderr is not reachable from a standard snippet (no sys): Lua's
    # warn() covers stderr above.
    code = ("import datetime\n"
            "def spin(s):\n"
            "    t = datetime.datetime.now()\n"
            "    while (datetime.datetime.now() - t).total_seconds() < s:\n"
            "        pass\n"
            "print('one')\nspin(0.3)\nprint('two')\n40 + 2\n")
    id, r, notes = stream_exec(h, code, lang="python")
    assert r["ok"] is True and r["value"] == 42, r
    assert outputs(notes, id) == ["one\n", "two\n"]


def test_order_of_many_pieces(h):
    code = SPIN + "for i = 1, 3000 do print(i) if i % 300 == 0 then spin(0.02) end end"
    id, r, notes = stream_exec(h, code)
    want = "".join(f"{i}\n" for i in range(1, 3001))
    assert r["stdout"] == want
    assert "".join(outputs(notes, id)) == want


def test_exec_id_is_the_request_id_as_sent(h):
    id, r, notes = stream_exec(h, 'print("s")', id="req-\u00e9")
    assert r["stdout"] == "s\n"
    assert outputs(notes, "req-\u00e9") == ["s\n"]


def test_a_character_split_across_writes_arrives_whole(h):
    # The euro sign's 3 bytes and an emoji's 4, each written a byte at a time
    # with a pause between: no notification ends inside a character.
    code = SPIN + (
        'local s = "a\\xe2\\x82\\xacb\\xf0\\x9f\\x98\\x80c"\n'
        "for i = 1, #s do io.write(s:sub(i, i)) spin(0.03) end")
    id, r, notes = stream_exec(h, code)
    assert r["stdout"] == "a\u20acb\U0001F600c"
    texts = outputs(notes, id)
    assert "".join(texts) == r["stdout"]
    assert len(texts) >= 3
    assert all("\ufffd" not in t for t in texts), texts


def test_invalid_bytes_are_repaired_as_in_the_reply(h):
    # A stray continuation, a lead without its continuation, and a lead as the
    # very last byte (repaired only at the end, as the reply repairs it).
    code = SPIN + 'io.write("x\\x80y") spin(0.1) io.write("\\xe2z") spin(0.1) io.write("\\xc3")'
    id, r, notes = stream_exec(h, code)
    assert r["stdout"] == "x\ufffdy\ufffdz\ufffd"
    assert "".join(outputs(notes, id)) == r["stdout"]


def test_output_limit_caps_the_notifications(h):
    # 101 bytes of output: 50 two-byte characters and the lead of one more.
    code = SPIN + 'for i = 1, 20 do io.write(string.rep("\\xc3\\xa9", 3)) spin(0.01) end'
    id, r, notes = stream_exec(h, code, limits={"output_bytes": 101})
    assert r["ok"] is False and r["error"]["kind"] == "output_limit", r
    assert r["truncated"]["stdout"] is True
    assert r["stdout"] == "\u00e9" * 50 + "\ufffd"
    assert "".join(outputs(notes, id)) == r["stdout"]


def test_stream_false_or_absent_sends_none(h):
    for extra in ({"stream": False}, {}, {"stream": None}):
        id = send(h, "sandbox/exec", {"lang": "lua", "code": SPIN + 'print("a") spin(0.2) print("b")', **extra})
        r, notes = until_reply(h, id)
        assert r["result"]["stdout"] == "a\nb\n"
        assert notes == [], (extra, notes)


def test_stream_must_be_a_boolean(h):
    r = h.call("sandbox/exec", {"lang": "lua", "code": "", "stream": "yes"})
    assert r["error"]["code"] == INVALID_PARAMS
    assert r["error"]["message"] == "'stream' must be true or false"


def test_a_killed_exec_still_flushes_what_it_wrote(h):
    # Output written up to the kill at wall_ms: the last of it is sent before the reply.
    code = 'local i = 0 while true do i = i + 1 if i % 20000 == 0 then io.write(".") end end'
    id, r, notes = stream_exec(h, code, limits={"wall_ms": 600})
    assert r["ok"] is False and r["error"]["kind"] == "timeout", r
    assert len(r["stdout"]) > 0 and set(r["stdout"]) == {"."}
    assert "".join(outputs(notes, id)) == r["stdout"]


def test_a_cancelled_native_exec_flushes_then_answers(h):
    id = send(h, "sandbox/exec", {"lang": "lua", "stream": True,
                                  "code": 'print("before") while true do end'})
    while True:  # the first notification: it runs
        n = h.read_line()
        if n.get("method") == "sandbox/output":
            assert n["params"] == {"exec_id": id, "stream": "stdout", "text": "before\n"}
            break
    h.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}})
    r, notes = until_reply(h, id)
    assert r["result"]["error"]["kind"] == "cancelled"
    assert r["result"]["stdout"] == "before\n"
    assert outputs(notes, id) == []  # all of it was sent already


def test_a_session_exec_streams_only_its_own_output(h):
    sid = h.call("sandbox/session/open", {"lang": "lua"})["result"]["session_id"]
    code = SPIN + 'n = (n or 0) + 1 print("one " .. n) spin(0.3) print("two " .. n)'
    id, r, notes = stream_exec(h, code, session_id=sid)
    assert r["session_id"] == sid and r["session_lost"] is False
    assert outputs(notes, id) == ["one 1\n", "two 1\n"]
    # The next exec in the same worker and page: nothing of the last is sent again.
    id, r, notes = stream_exec(h, code, session_id=sid)
    assert r["stdout"] == "one 2\ntwo 2\n"
    assert outputs(notes, id) == ["one 2\n", "two 2\n"]
    assert h.call("sandbox/session/close", {"session_id": sid})["result"]["closed"] is True


def test_redaction_refuses_streaming(pol_dir):
    h = policy_host(pol_dir, "secretive", redact={"strings": ["hunter2-pass"]})
    try:
        r = h.call("sandbox/exec", {"lang": "lua", "code": 'print("hunter2-pass")', "stream": True})
        assert r["error"]["code"] == INVALID_PARAMS
        assert r["error"]["message"] == (
            "'stream' is not available under policy 'secretive': it redacts secrets, "
            "which needs the whole output (the reply carries it)")
        sid = h.call("sandbox/session/open", {"lang": "lua"})["result"]["session_id"]
        r = h.call("sandbox/exec", {"session_id": sid, "code": "", "stream": True})
        assert r["error"]["code"] == INVALID_PARAMS and "secretive" in r["error"]["message"]
        # Without stream it runs, redacted, and says nothing before its reply.
        id = send(h, "sandbox/exec", {"lang": "lua", "code": 'print("a hunter2-pass b")'})
        r, notes = until_reply(h, id)
        assert r["result"]["stdout"] == "a [REDACTED] b\n"
        assert notes == []
    finally:
        h.close()


def test_a_slow_client_stops_the_stream_not_the_reply():
    # 6 MiB written at once while the client reads nothing: once 4 MiB wait on
    # stdout the stream stops for good; the reply still has all 6 MiB.
    h = Host(args=("--policy", "permissive"))
    try:
        assert h.exec("return 1")["value"] == 1  # started and warm
        size = 6 << 20
        id = send(h, "sandbox/exec", {"lang": "lua", "stream": True,
                                      "code": f'io.write(string.rep("x", {size}))'})
        time.sleep(2)  # it runs and is answered meanwhile: milliseconds
        r, notes = until_reply(h, id, timeout=60)
        assert r["result"]["ok"] is True, r["result"]["error"]
        assert r["result"]["stdout"] == "x" * size
        joined = "".join(outputs(notes, id))
        assert 0 < len(joined) < size
        assert len(joined) >= (4 << 20) - (64 << 10)  # up to the bound, then no more
        assert all(len(t) <= 64 << 10 for t in outputs(notes, id))  # 64 KiB pieces
        nothing_more(h, lambda n: n.get("method") == "sandbox/output", wait=0.2)
    finally:
        h.close()


# -- MCP progress ------------------------------------------------------------------------

def tool_call(h, code, meta=None, id=None):
    params = {"name": "run_lua", "arguments": {"code": code}}
    if meta is not None:
        params["_meta"] = meta
    return send(h, "tools/call", params, id)


def progress_of(notes, token):
    out = []
    for n in notes:
        if n["method"] == "notifications/progress":
            assert set(n["params"]) == {"progressToken", "progress", "message"}, n
            if n["params"]["progressToken"] == token:
                out.append(n["params"])
    return out


@pytest.mark.parametrize("token", ["tok-1", 77])
def test_progress_with_a_token(h, token):
    id = tool_call(h, SPIN + "spin(1.3) return 5", {"progressToken": token})
    r, notes = until_reply(h, id)
    assert r["result"]["structuredContent"]["value"] == 5
    ps = progress_of(notes, token)
    assert len(ps) >= 2, notes  # at ~500 and ~1000 ms
    values = [p["progress"] for p in ps]
    assert all(isinstance(v, int) for v in values)
    assert values[0] >= 500
    assert all(a < b for a, b in zip(values, values[1:])), values  # strictly increasing
    assert all(b - a >= 500 for a, b in zip(values, values[1:])), values  # at most one per 500 ms
    assert all(p["message"].startswith(("running for ", "waiting to run for ")) for p in ps)
    assert outputs(notes, id) == []  # a tools/call never streams output
    nothing_more(h, lambda n: n.get("method") == "notifications/progress", wait=0.7)


def test_no_progress_without_a_token(h):
    for meta in (None, {}, {"progressToken": None}):
        id = tool_call(h, SPIN + "spin(0.8) return 1", meta)
        r, notes = until_reply(h, id)
        assert r["result"]["isError"] is False
        assert notes == [], (meta, notes)


def test_a_cancelled_mcp_call_says_nothing_after_the_cancel(h):
    id = tool_call(h, "while true do end", {"progressToken": "c-1"})
    while True:  # the first progress: it runs
        n = h.read_line()
        if n.get("method") == "notifications/progress":
            assert n["params"]["progressToken"] == "c-1"
            break
    # The cancel and a ping in one write: the host handles them in order, so
    # whatever comes after the ping's reply came after the cancel.
    h.next_id += 1
    ping = h.next_id
    h.send_raw((json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                            "params": {"requestId": id}}) + "\n" +
                json.dumps({"jsonrpc": "2.0", "id": ping, "method": "ping"}) + "\n").encode())
    r, _ = until_reply(h, ping)
    assert r["result"] == {}
    # Two progress periods later: no progress, no reply for the cancelled call.
    nothing_more(h, lambda n: n.get("method") == "notifications/progress" or n.get("id") == id,
                 wait=1.2)
    assert id not in h.pending


def test_a_session_exec_never_streams_the_last_execs_output(h):
    # The session's page holds the last exec's output until the next exec
    # begins, and a large inputs takes its worker a while to decode before
    # that: the host clears the page when it hands the exec over, so a tick
    # meanwhile reads nothing of the last exec.
    sid = h.call("sandbox/session/open", {"lang": "lua"})["result"]["session_id"]
    r = h.exec('print("old output")', session_id=sid)
    assert r["stdout"] == "old output\n"
    id, r, notes = stream_exec(h, 'print("new " .. #big)', session_id=sid,
                               inputs={"big": [0] * 1_000_000})
    assert r["ok"] is True, r["error"]
    assert r["stdout"] == "new 1000000\n"
    assert outputs(notes, id) == ["new 1000000\n"]
    assert h.call("sandbox/session/close", {"session_id": sid})["result"]["closed"] is True
