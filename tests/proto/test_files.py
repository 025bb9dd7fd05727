"""Session workspaces: files in (put), written by code, out (get), listed; every
path escape refused and proven to have touched nothing; sessions never see each
other's files, at the language layer and at the kernel layer; the directory is
gone when the session ends, however it ends."""
import base64
import json
import os
import shutil
import tempfile
import time

import pytest

from conftest import Host, needs_landlock, wait_for, said, policy_dir, status_field

NO_SESSION = -32002
INVALID = -32602
pytestmark = needs_landlock  # a workspace is a Landlock rule


def b64(data):
    return base64.b64encode(data).decode()


@pytest.fixture(scope="module")
def pol_dir():
    with policy_dir("tp-ws-", {
            "ws": {"extends": "standard", "session": {"workspace_bytes": 4096, "idle_ms": 1000}},
            "ws-ko": {"extends": "kernel-only", "session": {"workspace_bytes": 4096}},
        }) as d:
        yield d


@pytest.fixture(scope="module")
def h(pol_dir):
    host = Host(args=("--policy-dir", pol_dir, "--policy", "ws"))
    yield host
    host.close()


def open_ws(h, lang="python", **params):
    r = h.call("sandbox/session/open", {"lang": lang, **params})["result"]
    assert r["workspace"]["file_bytes"] == 4096, r
    return r["session_id"], r["workspace"]["path"]


def ex(h, sid, code):
    r = h.call("sandbox/exec", {"session_id": sid, "code": code})
    assert "result" in r, r
    return r["result"]


def files(h, what, **params):
    return h.call("sandbox/session/files/" + what, params)


def err(r, code=INVALID):
    assert "error" in r and r["error"]["code"] == code, r
    return said(r["error"])


@pytest.mark.parametrize("lang,read,write", [
    ("python", "open('in/data.csv').read()", "with open('out.txt', 'w') as f:\n    f.write('from code')"),
    ("lua", "return io.open('in/data.csv'):read('a')",
     "local f = io.open('out.txt', 'w') f:write('from code') f:close()"),
])
def test_files_in_written_out_listed(h, lang, read, write):
    sid, ws = open_ws(h, lang)
    assert files(h, "put", session_id=sid, path="in/data.csv", data=b64(b"a,b\n1,2\n"))["result"] == \
        {"path": "in/data.csv", "bytes": 8}
    r = ex(h, sid, read)
    assert r["ok"] is True and r["value"] == "a,b\n1,2\n", r
    assert ex(h, sid, write)["ok"] is True
    got = files(h, "get", session_id=sid, path="out.txt")["result"]
    assert got == {"path": "out.txt", "bytes": 9, "data": b64(b"from code")}
    assert files(h, "list", session_id=sid)["result"] == {
        "files": [{"path": "in/data.csv", "bytes": 8}, {"path": "out.txt", "bytes": 9}],
        "complete": True}
    h.call("sandbox/session/close", {"session_id": sid})
    assert not os.path.exists(ws)


@pytest.mark.parametrize("path,why", [
    ("../x", "'path' may not name '.' or '..'"),
    ("a/../../x", "'path' may not name '.' or '..'"),
    ("/etc/passwd", "'path' must be relative to the workspace"),
    ("a//b", "'path' has an empty name (a '//' or a trailing '/')"),
    ("a/", "'path' has an empty name (a '//' or a trailing '/')"),
    ("", "'path' is empty"),
    ("x\u0000y", "'path' holds a NUL byte"),
    ("/".join("d" * 9), "'path' is deeper than 8 names"),
    (7, "'path' must be a string"),
])
def test_bad_paths_are_refused_and_touch_nothing(h, path, why):
    sid, ws = open_ws(h)
    before = sorted(os.listdir(os.path.dirname(ws)))
    assert err(files(h, "put", session_id=sid, path=path, data=b64(b"x"))) == why
    assert err(files(h, "get", session_id=sid, path=path)) == why
    assert os.listdir(ws) == [] and sorted(os.listdir(os.path.dirname(ws))) == before
    h.call("sandbox/session/close", {"session_id": sid})


def test_symlinks_never_lead_out(h):
    """The worker cannot make a link (seccomp); if one is there anyway, the host
    does not follow it, for a file or for a directory on the way."""
    outside = tempfile.mkdtemp(prefix="tp-outside-", dir="/tmp")
    try:
        with open(os.path.join(outside, "victim"), "w") as f:
            f.write("unchanged")
        sid, ws = open_ws(h)
        os.symlink(os.path.join(outside, "victim"), os.path.join(ws, "link"))
        os.symlink(outside, os.path.join(ws, "dir"))
        assert err(files(h, "get", session_id=sid, path="link")) == "no file 'link' in the workspace"
        assert err(files(h, "get", session_id=sid, path="dir/victim")) == \
            "no file 'dir/victim' in the workspace"
        msg = err(files(h, "put", session_id=sid, path="link", data=b64(b"pwned")))
        assert msg.startswith("could not write 'link' in the workspace: "), msg
        msg = err(files(h, "put", session_id=sid, path="dir/new", data=b64(b"pwned")))
        assert msg.startswith("could not write 'dir/new' in the workspace: "), msg
        assert open(os.path.join(outside, "victim")).read() == "unchanged"
        assert sorted(os.listdir(outside)) == ["victim"]
        # the code cannot make one (the language layer has no symlink; the kernel's
        # refusal is test_the_kernel_holds_workspaces_apart's)
        r = ex(h, sid, "import os\nos.symlink('/etc/passwd', 'l2')")
        assert said(r["error"]) == "module 'os' has no attribute 'symlink'", r
        h.call("sandbox/session/close", {"session_id": sid})
        assert os.path.exists(os.path.join(outside, "victim"))  # removal did not follow either
    finally:
        shutil.rmtree(outside, ignore_errors=True)


def test_code_through_a_planted_symlink_meets_landlock(h):
    """A link planted in the workspace (by something other than the code) passes the
    shim's lexical check; the kernel refuses it, a sandbox_violation that names
    Landlock's right and the path, for a read, a write and a directory."""
    outside = tempfile.mkdtemp(prefix="tp-outside-", dir="/tmp")
    try:
        with open(os.path.join(outside, "victim"), "w") as f:
            f.write("unchanged")
        sid, ws = open_ws(h)
        os.symlink(os.path.join(outside, "victim"), os.path.join(ws, "link"))
        os.symlink(outside, os.path.join(ws, "dir"))
        for code, right, name in [("open('link').read()", "read_file", "link"),
                                  ("open('link', 'r+').write('pwned')", "write_file", "link"),
                                  ("open('link', 'w').write('pwned')", "make_reg", "link"),
                                  ("open('dir/new', 'w').write('pwned')", "make_reg", "dir/new"),
                                  ("import os\nos.listdir('dir')", "read_dir", "dir")]:
            r = ex(h, sid, code)
            e = r["error"]
            path = os.path.join(ws, name)
            assert (e["kind"], e["layer"], e["rule"], e["path"]) == (
                "sandbox_violation", "kernel", "landlock:" + right, path), r
            assert said(e).startswith("the kernel refused "), r
            assert "unchanged" not in json.dumps(r)
        assert open(os.path.join(outside, "victim")).read() == "unchanged"
        assert sorted(os.listdir(outside)) == ["victim"]
        h.call("sandbox/session/close", {"session_id": sid})
    finally:
        shutil.rmtree(outside, ignore_errors=True)


def test_sizes_and_encoding(h):
    sid, ws = open_ws(h)
    assert err(files(h, "put", session_id=sid, path="big", data=b64(b"x" * 5000))) == \
        "the file is larger than 4096 bytes (session.workspace_bytes)"
    for bad in ("abc", "ab=c", "YQ==YQ==", "YR==", "a b=", "!!!!"):
        assert err(files(h, "put", session_id=sid, path="f", data=bad)) == \
            "'data' is not base64 (RFC 4648, with padding)", bad
    assert os.listdir(ws) == []
    r = ex(h, sid, "with open('big', 'wb') as f:\n    f.write(b'x' * 5000)")
    assert r["ok"] is False and "File too large" in said(r["error"]), r
    assert os.path.getsize(os.path.join(ws, "big")) == 4096  # RLIMIT_FSIZE: workspace_bytes
    os.unlink(os.path.join(ws, "big"))
    # A file left open: its buffered bytes are written when the exec ends, and
    # a write cut there is the exec's error, never a success.
    r = ex(h, sid, "open('cut', 'w').write('x' * 5000)")
    assert r["ok"] is False and r["error"]["type"] == "OSError", r
    assert said(r["error"]) == (
        "[Errno 27] File too large: a file left open was cut at 4096 bytes when the exec "
        "ended and closed it (session.workspace_bytes): '%s/cut'" % ws), r
    r = ex(h, sid, "f = open('cut2', 'w')\nf.write('x' * 3000)\nf.write('x' * 3000)\nf.close()")
    msg = "[Errno 27] File too large (a file here holds at most 4096 bytes: session.workspace_bytes)"
    assert (r["ok"], r["error"]["type"], said(r["error"])) == (False, "OSError", msg), r
    assert r["error"]["traceback"].endswith("    f.close()\nOSError: " + msg), r
    r = ex(h, sid, "try:\n    with open('cut3', 'w') as f:\n        f.write('x' * 5000)\n"
                   "except OSError as e:\n    r = e.errno == 27  # EFBIG\nr")
    assert r["ok"] is True and r["value"] is True, r
    for name in ("cut", "cut2", "cut3"):
        assert os.path.getsize(os.path.join(ws, name)) == 4096
        os.unlink(os.path.join(ws, name))
    # Lua: write or close answers nil and the message
    sid_l, ws_l = open_ws(h, "lua")
    r = ex(h, sid_l, "local f = io.open('cut', 'w') local a = f:write(string.rep('x', 3000)) "
                     "local b = f:write(string.rep('x', 3000)) local c, d, e = f:close() "
                     "return {a == f, b == f, tostring(c), d, e}")
    assert r["value"] == [True, True, "nil", "File too large", 27], r
    r = ex(h, sid_l, "local f = io.open('cut2', 'w') f:write(string.rep('x', 5000))")
    assert r["ok"] is False and said(r["error"]) == (
        "File too large: a file left open was cut at 4096 bytes when the exec ended and "
        "flushed it (session.workspace_bytes): '%s/cut2'" % ws_l), r
    h.call("sandbox/session/close", {"session_id": sid_l})
    # put and MCP write_file refuse what a file here may not hold
    assert err(files(h, "put", session_id=sid, path="big", data=b64(b"x" * 4097))) == \
        "the file is larger than 4096 bytes (session.workspace_bytes)"
    assert files(h, "put", session_id=sid, path="full", data=b64(b"x" * 4096))["result"] == \
        {"path": "full", "bytes": 4096}
    os.unlink(os.path.join(ws, "full"))
    assert files(h, "put", session_id=sid, path="empty", data="")["result"] == {"path": "empty", "bytes": 0}
    assert err(files(h, "get", session_id=sid, path="missing")) == "no file 'missing' in the workspace"
    assert err(files(h, "list", session_id=sid, path="x")) == "unknown parameter 'path'"
    h.call("sandbox/session/close", {"session_id": sid})


def test_a_file_in_parts_append_and_offset(h):
    """put appends with append: true (a file larger than one request carries goes in
    parts), held to workspace_bytes as a whole; get reads from offset, with the file's
    size, at most what one get carries."""
    sid, ws = open_ws(h)
    assert files(h, "put", session_id=sid, path="p/f", data=b64(b"a" * 1000))["result"] == \
        {"path": "p/f", "bytes": 1000}
    assert files(h, "put", session_id=sid, path="p/f", data=b64(b"b" * 2000),
                 append=True)["result"] == {"path": "p/f", "bytes": 3000}
    assert open(os.path.join(ws, "p/f"), "rb").read() == b"a" * 1000 + b"b" * 2000
    # append to a file that is not there makes it; append false replaces
    assert files(h, "put", session_id=sid, path="new", data=b64(b"x"), append=True)["result"] == \
        {"path": "new", "bytes": 1}
    assert files(h, "put", session_id=sid, path="p/f", data=b64(b"c"), append=False)["result"] == \
        {"path": "p/f", "bytes": 1}
    files(h, "put", session_id=sid, path="p/f", data=b64(b"a" * 3000))
    # the whole file stays within workspace_bytes, and the refused part leaves it as it was
    assert err(files(h, "put", session_id=sid, path="p/f", data=b64(b"b" * 1097), append=True)) == \
        "'p/f' would be 4097 bytes, more than 4096 (session.workspace_bytes)"
    assert os.path.getsize(os.path.join(ws, "p/f")) == 3000
    assert err(files(h, "put", session_id=sid, path="p/f", data=b64(b"b"), append=1)) == \
        "'append' must be true or false"
    # get from an offset: that part, where it is, and the file's size
    r = files(h, "get", session_id=sid, path="p/f", offset=2990)["result"]
    assert r == {"path": "p/f", "bytes": 10, "data": b64(b"a" * 10), "offset": 2990, "size": 3000}
    r = files(h, "get", session_id=sid, path="p/f", offset=0)["result"]
    assert (r["bytes"], r["offset"], r["size"]) == (3000, 0, 3000)
    r = files(h, "get", session_id=sid, path="p/f", offset=5000)["result"]
    assert r == {"path": "p/f", "bytes": 0, "data": "", "offset": 5000, "size": 3000}
    for bad in (-1, 1.5, "0", True):
        assert err(files(h, "get", session_id=sid, path="p/f", offset=bad)) == \
            "'offset' must be an integer, 0 or more", bad
    # without offset: the whole file, as before (no offset or size in the answer)
    assert files(h, "get", session_id=sid, path="new")["result"] == \
        {"path": "new", "bytes": 1, "data": b64(b"x")}
    h.call("sandbox/session/close", {"session_id": sid})


def test_a_name_that_is_not_utf8_is_listed_in_base64(h):
    """JSON carries no such name as a string: the entry has path_b64 (the path's
    bytes in base64) instead of path, and the list stays complete (before: the
    file was left out, complete true)."""
    sid, ws = open_ws(h, "lua")
    r = ex(h, sid, "local f = io.open('\\255.txt', 'w') f:write('abc') f:close() "
                   "local g = io.open('ok.txt', 'w') g:write('x') g:close()")
    assert r["ok"] is True, r
    assert os.path.getsize(os.path.join(ws.encode(), b"\xff.txt")) == 3
    os.mkdir(os.path.join(ws.encode(), b"d\xfe"))
    with open(os.path.join(ws.encode(), b"d\xfe", b"in.txt"), "wb") as f:
        f.write(b"12345")
    assert files(h, "list", session_id=sid)["result"] == {"files": [
        {"path_b64": b64(b"d\xfe/in.txt"), "bytes": 5},  # by the path's bytes
        {"path": "ok.txt", "bytes": 1},
        {"path_b64": b64(b"\xff.txt"), "bytes": 3},
    ], "complete": True}
    h.call("sandbox/session/close", {"session_id": sid})


def test_a_tree_deeper_than_the_listing_is_not_complete(h):
    sid, ws = open_ws(h)
    deep = os.path.join(ws, *["d"] * 8)
    os.makedirs(deep)
    with open(os.path.join(deep, "hidden.txt"), "w") as f:
        f.write("x")
    assert files(h, "list", session_id=sid)["result"] == {"files": [], "complete": False}
    h.call("sandbox/session/close", {"session_id": sid})


def test_sessions_never_see_each_other(h):
    a, wa = open_ws(h)
    b, wb = open_ws(h, "lua")
    files(h, "put", session_id=b, path="secret", data=b64(b"b's"))
    r = ex(h, a, f"open({os.path.join(wb, 'secret')!r}).read()")
    assert r["error"]["kind"] == "policy_violation" and r["error"]["layer"] == "language", r
    r = ex(h, b, f"return io.open({os.path.join(wa, 'x')!r}, 'w')")
    assert r["error"]["kind"] == "policy_violation", r
    assert os.listdir(wa) == []
    # a one-shot exec of the same policy has no workspace
    r = h.call("sandbox/exec", {"lang": "python", "code": "open('secret').read()"})["result"]
    assert (r["error"]["kind"], r["error"]["layer"], said(r["error"])) == (
        "policy_violation", "language", "open('secret') is refused: files are in a session's "
        "workspace, and this exec has none (policy ws: open a session)"), r
    for s in (a, b):
        h.call("sandbox/session/close", {"session_id": s})


def test_the_kernel_holds_workspaces_apart(pol_dir):
    """kernel-only: no language layer, so the kernel alone refuses."""
    h = Host(args=("--policy-dir", pol_dir, "--policy", "ws-ko"))
    try:
        a, wa = open_ws(h)
        b, wb = open_ws(h)
        files(h, "put", session_id=b, path="secret", data=b64(b"b's"))
        r = ex(h, a, "open('mine', 'w').write('ok')\nimport os\n[open('mine').read(), os.getpid()]")
        assert r["ok"] is True and r["value"][0] == "ok", r
        pid = r["value"][1]
        mask = status_field(pid, "SigBlk")
        r = ex(h, a, f"open({os.path.join(wb, 'secret')!r}).read()")
        assert (r["error"]["kind"], r["error"]["layer"]) == ("sandbox_violation", "kernel"), r
        assert "EACCES" in said(r["error"])
        # The refusal left the worker's signal mask as it was: SIGSYS deliverable, so
        # a later trap is named (a failed SIG_BLOCK once restored a mask of garbage).
        assert status_field(pid, "SigBlk") == mask and not int(mask, 16) & (1 << 30), mask
        r = ex(h, a, f"import os\nos.listdir({os.path.dirname(wa)!r})")
        assert (r["error"]["kind"], r["error"]["layer"]) == ("sandbox_violation", "kernel"), r
        r = h.call("sandbox/exec", {"lang": "python", "code": f"open({os.path.join(wa, 'mine')!r}).read()"})
        assert r["result"]["error"]["kind"] == "sandbox_violation", r
        r = ex(h, a, "import os\nos.symlink('/etc/passwd', 'l2')")
        assert (r["error"]["kind"], r["error"]["layer"]) == ("sandbox_violation", "kernel"), r
        # seccomp refuses symlink under every policy; kernel-only traps it and names it
        assert (said(r["error"]), r["error"]["syscall"]) == (
            "seccomp refused the system call 'symlink'", "symlink"), r
        assert not os.path.lexists(os.path.join(wa, "l2"))
        assert sorted(os.listdir(wb)) == ["secret"]
    finally:
        h.close()


def test_the_workspace_goes_when_the_session_ends(h):
    sid, ws = open_ws(h)
    files(h, "put", session_id=sid, path="d/f", data=b64(b"x"))
    time.sleep(1.5)  # idle_ms 1000
    assert err(files(h, "list", session_id=sid), NO_SESSION).endswith("(session.idle_ms of policy 'ws')")
    assert not os.path.exists(ws)
    sid, ws = open_ws(h, "lua")
    ex(h, sid, "local f = io.open('f', 'w') f:write('x') f:close()")
    r = h.call("sandbox/exec", {"session_id": sid, "code": "setmetatable({}, {__gc = function() while true do end end}) "
                                                        "for i = 1, 1e7 do local t = {i} end",
                                "limits": {"wall_ms": 300}})["result"]
    assert r["session_lost"] is True
    assert not os.path.exists(ws)


def test_no_workspace_without_the_policy_or_landlock(pol_dir):
    h = Host(args=("--policy-dir", pol_dir, "--policy", "strict"))  # strict: workspace_bytes 0
    try:
        r = h.call("sandbox/session/open", {"lang": "lua"})["result"]
        assert "workspace" not in r
        assert err(files(h, "list", session_id=r["session_id"])) == \
            f"session '{r['session_id']}' has no workspace (policy 'strict' has session.workspace_bytes 0)"
        # the default's sessions have one (standard: 16 MiB a file)
        r = h.call("sandbox/session/open", {"lang": "lua", "policy": "standard"})["result"]
        assert r["workspace"]["file_bytes"] == 16 << 20, r
        assert files(h, "list", session_id=r["session_id"])["result"] == {"files": [], "complete": True}
    finally:
        h.close()
    h = Host(env={"PATH": "/usr/bin:/bin", "TIDEPOOL_TEST_NO_LANDLOCK": "1"},
             args=("--policy-dir", pol_dir, "--policy", "ws"))
    try:
        r = h.call("sandbox/session/open", {"lang": "lua"})["result"]
        assert "workspace" not in r
        assert err(files(h, "list", session_id=r["session_id"])) == \
            f"session '{r['session_id']}' has no workspace: a workspace needs Landlock, which this kernel lacks"
    finally:
        h.close()


def test_exit_removes_every_workspace(pol_dir):
    h = Host(args=("--policy-dir", pol_dir, "--policy", "ws"))
    sid, ws = open_ws(h)
    files(h, "put", session_id=sid, path="a/b/c", data=b64(b"x"))
    base = os.path.dirname(ws)
    h.proc.stdin.close()
    assert h.proc.wait(timeout=10) == 0
    assert not os.path.exists(base)


def test_unknown_session_and_params(h):
    assert err(files(h, "list", session_id="s-0000000000000000"), NO_SESSION).startswith("unknown session")
    assert err(h.call("sandbox/session/files/put", [1])) == "params must be an object with 'session_id'"
    assert err(files(h, "get", session_id=5, path="x")) == "'session_id' must be a string"
    assert h.call("sandbox/session/files/delete", {"session_id": "x"})["error"]["code"] == -32601


def test_mcp_moves_files_as_text(pol_dir):
    """An MCP client: a session with session: "new", then write_file, the code,
    read_file and list_files, all in text (the tools are listed only when the
    default policy gives workspaces)."""
    h = Host(args=("--policy-dir", pol_dir, "--policy", "ws"))
    try:
        names = [t["name"] for t in h.call("tools/list")["result"]["tools"]]
        assert names == ["run_lua", "run_python", "list_sessions", "close_session",
                         "write_file", "read_file", "list_files"]

        def tool(name, args):
            return h.call("tools/call", {"name": name, "arguments": args})["result"]
        sid = tool("run_python", {"code": "1", "session": "new"})["structuredContent"]["session_id"]
        assert tool("write_file", {"session_id": sid, "path": "in.txt", "text": "héllo"})[
            "structuredContent"] == {"path": "in.txt", "bytes": 6}
        r = tool("run_python", {"code": "t = open('in.txt').read()\nopen('out.txt', 'w').write(t.upper())\n"
                                        "open('raw.bin', 'wb').write(bytes([255, 0]))\nt",
                                "session": sid})
        assert r["structuredContent"]["value"] == "héllo", r
        assert tool("read_file", {"session_id": sid, "path": "out.txt"})["structuredContent"] == \
            {"path": "out.txt", "bytes": 6, "text": "HÉLLO"}
        assert tool("read_file", {"session_id": sid, "path": "raw.bin"})["structuredContent"] == \
            {"path": "raw.bin", "bytes": 2, "data": "/wA="}
        assert [f["path"] for f in tool("list_files", {"session_id": sid})["structuredContent"]["files"]] == \
            ["in.txt", "out.txt", "raw.bin"]
        bad = tool("read_file", {"session_id": sid, "path": "../etc/passwd"})
        assert bad["isError"] is True and bad["content"][0]["text"] == "'path' may not name '.' or '..'"
        bad = tool("write_file", {"session_id": sid, "path": "big.txt", "text": "x" * 4097})
        assert bad["isError"] is True and \
            bad["content"][0]["text"] == "the file is larger than 4096 bytes (session.workspace_bytes)"
        bad = tool("write_file", {"session_id": sid, "path": "x"})
        assert bad["content"][0]["text"] == 'write_file takes {"session_id", "path", "text"}'
    finally:
        h.close()
    h = Host(args=("--policy", "strict"))  # strict: no workspaces, no file tools
    try:
        assert "write_file" not in [t["name"] for t in h.call("tools/list")["result"]["tools"]]
        r = h.call("tools/call", {"name": "write_file", "arguments": {}})
        assert r["error"]["code"] == INVALID and said(r["error"]) == "Unknown tool: write_file"
    finally:
        h.close()


def test_an_unclosed_file_is_written_when_the_exec_ends(pol_dir):
    """open(...).write(...) without close: the shim closes what an exec left open
    when it ends, so the bytes are on disk (a one-shot exec's too, under a write
    grant), and a session does not run out of fds."""
    out = tempfile.mkdtemp(prefix="tp-grant-", dir="/tmp")
    os.chmod(out, 0o777)
    path = os.path.join(pol_dir, "grant.json")
    with open(path, "w") as f:
        json.dump({"name": "grant", "extends": "standard",
                   "filesystem": {"write": [out], "file_bytes": 4096},
                   "session": {"workspace_bytes": 4096}}, f)
    h = Host(args=("--policy", path))
    try:
        r = h.call("sandbox/exec", {"lang": "python",
                                    "code": f"open({os.path.join(out, 'one.txt')!r}, 'w').write('one-shot')"})
        assert r["result"]["ok"] is True, r
        assert open(os.path.join(out, "one.txt")).read() == "one-shot"
        sid, ws = open_ws(h)
        for i in range(40):  # more than the worker's 32 fds
            r = ex(h, sid, f"open('f{i}.txt', 'w').write('{i}')")
            assert r["ok"] is True, (i, r)
        assert open(os.path.join(ws, "f39.txt")).read() == "39"
    finally:
        h.close()
        shutil.rmtree(out, ignore_errors=True)


def test_a_fifo_left_by_code_cannot_hold_the_host(h):
    """Code leaves a FIFO where the client will put a file (and one it holds
    open for reading). The host never blocks in open() or write(): each put is
    refused at once, and the host goes on answering."""
    sid, ws = open_ws(h)
    r = ex(h, sid, "import os\nos.mkfifo('pipe')\n1")
    if r["ok"] is False:  # a policy without mkfifo: plant it as the code would have
        os.mkfifo(os.path.join(ws, "pipe"))
    assert os.path.exists(os.path.join(ws, "pipe"))
    r = files(h, "put", session_id=sid, path="pipe", data=b64(b"x"))
    assert r["error"]["code"] == INVALID, r
    assert "pipe" in said(r["error"]), r
    fd = os.open(os.path.join(ws, "pipe"), os.O_RDONLY | os.O_NONBLOCK)  # a reader now
    try:
        r = files(h, "put", session_id=sid, path="pipe", data=b64(b"x"))
        assert said(r["error"]) == "'pipe' in the workspace is not a regular file", r
        assert os.read(fd, 10) == b""  # nothing was written into it
    finally:
        os.close(fd)
    r = files(h, "get", session_id=sid, path="pipe")
    assert r["error"]["code"] == INVALID, r
    assert h.call("ping")["result"] == {}
    h.call("sandbox/session/close", {"session_id": sid})
    assert not os.path.exists(ws)


def test_a_tree_of_any_depth_goes_with_its_session(h):
    """Code can make directories far deeper than the host would recurse: the
    workspace still goes whole when the session ends."""
    sid, ws = open_ws(h)
    r = ex(h, sid, "import os\nfor i in range(300):\n    os.mkdir('d')\n    os.chdir('d')\n"
                   "open('leaf', 'w').write('x')\n1")
    if r["ok"] is False:  # no os.mkdir in this policy: make the tree as the code would have
        p = ws
        for _ in range(300):
            p = os.path.join(p, "d")
            os.mkdir(p)
        with open(os.path.join(p, "leaf"), "w") as f:
            f.write("x")
    assert os.path.exists(os.path.join(ws, *["d"] * 300, "leaf"))
    h.call("sandbox/session/close", {"session_id": sid})
    assert not os.path.exists(ws)
