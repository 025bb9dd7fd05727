"""Sessions: state between runs, the workspace's files, closing, JSON-RPC errors."""
import json

import pytest

import tidepool


def test_state_is_kept(tp):
    with tp.session() as s:
        assert isinstance(s, tidepool.Session) and s.id.startswith("s-")
        assert (s.lang, s.policy) == ("python", "agent")
        assert s.run("x = 41\ndef f(y): return y + x").value is None
        r = s.run("f(1)")
        assert (r.value, r.session_id, r.session_lost) == (42, s.id, False)
    with tp.session("lua") as s:
        s.run("n = 1")
        assert s.run("n = n + 1 return n").value == 2
    # A one-shot run sees no session's state.
    assert tp.run("return n", "lua").value is None


def test_closed_session_raises_unknown_session(tp):
    s = tp.session()
    sid = s.id
    s.close()
    s.close()  # idempotent
    with pytest.raises(tidepool.TidepoolError) as ei:
        s.run("1")
    assert (ei.value.code, ei.value.message) == (
        -32002, f"session '{sid}' has ended: closed by the client")


def test_too_many_sessions_is_busy(tp):
    with tp.session(policy="one"):
        with pytest.raises(tidepool.TidepoolError) as ei:
            tp.session(policy="one")
        assert (ei.value.code, ei.value.message) == (
            -32001, "policy 'one' allows 1 open sessions and they are all open; close one "
            "(sandbox/session/close)")
    with tp.session(policy="one") as s:  # closed by the context manager: room again
        assert s.policy == "one"


def test_session_limits(tp):
    with tp.session(limits={"cpu_ms": 200}) as s:
        assert s.limits["cpu_ms"] == 200
        r = s.run("x = 1\nwhile True: pass")
        assert (r.error.kind, r.error.limit["name"], r.session_lost) == ("cpu_limit", "cpu_ms", False)
        assert s.run("x").value == 1  # a soft stop keeps the session and its state


@pytest.fixture
def ws(tp):
    with tp.session() as s:
        if s.workspace is None:
            pytest.skip("no Landlock on this kernel: sessions get no workspace")
        yield s


def test_files_round_trip(ws):
    assert ws.workspace["file_bytes"] == 4096
    assert ws.put_file("data/in.csv", b"a,b\n1,2\n") == 8
    assert ws.put_file("note.txt", "tid\u00e9") == 5  # a str goes as UTF-8
    r = ws.run("rows = open('data/in.csv').read().split()\n"
               "open('out.bin', 'wb').write(bytes(range(256)))\nlen(rows)")
    assert r.value == 2
    assert ws.get_file("out.bin") == bytes(range(256))
    assert ws.get_file("note.txt") == "tid\u00e9".encode()
    files = ws.list_files()
    assert files == [("data/in.csv", 8), ("note.txt", 5), ("out.bin", 256)]
    assert files[0].path == "data/in.csv" and files[0].size == 8 and files.complete is True


def test_lua_files(tp):
    with tp.session("lua") as s:
        if s.workspace is None:
            pytest.skip("no Landlock on this kernel: sessions get no workspace")
        s.put_file("n.txt", b"41")
        s.run("local f = io.open('n.txt') local n = f:read('n') f:close() "
              "f = io.open('m.txt', 'w') f:write(n + 1) f:close()")
        assert s.get_file("m.txt") == b"42"


@pytest.mark.parametrize("call, message", [
    (lambda s: s.get_file("nope"), "no file 'nope' in the workspace"),
    (lambda s: s.put_file("../x", b"x"), "'path' may not name '.' or '..'"),
    (lambda s: s.put_file("big", b"x" * 4097),
     "the file is larger than 4096 bytes (session.workspace_bytes)"),
])
def test_file_refusals(ws, call, message):
    with pytest.raises(tidepool.TidepoolError) as ei:
        call(ws)
    assert (ei.value.code, ei.value.message) == (-32602, message)


def test_files_of_an_ended_session(tp):
    s = tp.session()
    s.close()
    with pytest.raises(tidepool.TidepoolError) as ei:
        s.list_files()
    assert ei.value.code == -32002


def test_a_file_larger_than_a_request_goes_in_parts(tmp_path):
    """put_file and get_file move a file of any size within workspace_bytes: 4 MiB a request
    (a request line is at most 8 MiB of JSON)."""
    (tmp_path / "big.json").write_text(json.dumps({"name": "big", "extends": "standard",
                                                   "session": {"workspace_bytes": 20 << 20}}))
    with tidepool.Client(args=["--policy-dir", str(tmp_path), "--policy", "big"]) as c:
        with c.session() as s:
            if s.workspace is None:
                pytest.skip("no Landlock on this kernel: sessions get no workspace")
            data = bytes(range(256)) * (10 * 4096 + 7)  # 10 MiB and a bit
            assert s.put_file("big.bin", data) == len(data)
            assert s.run("import os\nos.path.getsize('big.bin')").value == len(data)
            assert s.get_file("big.bin") == data
            assert s.put_file("big.bin", b"") == 0  # a first part replaces the file
            assert s.get_file("big.bin") == b""


def test_a_request_longer_than_a_line_raises_at_once(tp):
    """tidepool could refuse it only without an id; the client says so before sending."""
    with pytest.raises(tidepool.TidepoolError) as e:
        tp.request("ping", {"pad": "x" * (8 << 20)})
    assert e.value.code is None and "more than one line tidepool reads (8388608)" in str(e.value)
    assert tp.request("ping") == {}  # nothing was sent; the client works on
