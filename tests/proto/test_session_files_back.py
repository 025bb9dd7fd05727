"""Files back to the model (docs/protocol.md, "Files back"): a session exec's result lists the
files its code created, modified or deleted, exactly; over MCP each is a resource_link (2025-06-18
and later) and, when small, an embedded resource, in every revision as it has them; resources/read
reads such a file for its own client only. A symlink or FIFO planted in the workspace is never
followed, listed or read, and every refusal is exact."""
import base64
import json
import os
import shutil
import tempfile

import pytest

from conftest import Host, needs_landlock, policy_dir
from test_listen import Daemon, Sock
from test_mcp import LEGACY, MODERN, REVISIONS, Mcp

pytestmark = needs_landlock  # a workspace is a Landlock rule

NOT_FOUND = -32002  # before 2026-07-28; -32602 in it
INVALID = -32602
LINKS = {MODERN, "2025-11-25", "2025-06-18"}  # the revisions with resource_link content


def b64(data):
    return base64.b64encode(data).decode()


@pytest.fixture(scope="module")
def pol_dir():
    with policy_dir("tp-back-", {
            "ws": {"extends": "standard", "session": {"workspace_bytes": 4096}},
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
    return r["session_id"], r["workspace"]["path"]


def ex(h, sid, code):
    r = h.call("sandbox/exec", {"session_id": sid, "code": code})
    assert "result" in r, r
    return r["result"]


def entry(path, size, mime, change="created"):
    return {"path": path, "size": size, "mime": mime, "change": change}


WRITE = {
    "python": {
        "first": "open('a/b/c.json', 'w').write('{}')\nopen('out.txt', 'w').write('hi')\n1",
        "append": "open('out.txt', 'a').write('yo')\n2",
        "same": "open('a/b/in.csv').read()",
    },
    "lua": {
        "first": "local f = io.open('a/b/c.json', 'w') f:write('{}') f:close()\n"
                 "f = io.open('out.txt', 'w') f:write('hi') f:close() return 1",
        "append": "local f = io.open('out.txt', 'a') f:write('yo') f:close() return 2",
        "same": "return io.open('a/b/in.csv'):read('a')",
    },
}


@pytest.mark.parametrize("lang", ["python", "lua"])
def test_a_session_exec_lists_what_it_created_and_modified(h, lang):
    sid, ws = open_ws(h, lang)
    # put by the client before the exec (and the directories on the way): not the exec's
    assert h.call("sandbox/session/files/put",
                  {"session_id": sid, "path": "a/b/in.csv", "data": b64(b"x,y\n")})["result"] == \
        {"path": "a/b/in.csv", "bytes": 4}
    r = ex(h, sid, WRITE[lang]["first"])
    assert r["ok"] is True and r["value"] == 1, r
    assert r["files"] == [entry("a/b/c.json", 2, "application/json"), entry("out.txt", 2, "text/plain")]
    assert "files_more" not in r and "files_complete" not in r, r
    r = ex(h, sid, WRITE[lang]["append"])
    assert r["ok"] is True and r["value"] == 2, r
    assert r["files"] == [entry("out.txt", 4, "text/plain", "modified")]  # c.json unchanged: not listed
    r = ex(h, sid, WRITE[lang]["same"])  # reads only
    assert r["ok"] is True and r["value"] == "x,y\n", r
    assert "files" not in r and "files_more" not in r and "files_complete" not in r, r
    h.call("sandbox/session/close", {"session_id": sid})


def test_a_failed_exec_lists_what_it_wrote_and_a_one_shot_exec_has_no_files(h):
    sid, _ = open_ws(h)
    r = ex(h, sid, "open('half.md', 'w').write('# h')\nraise ValueError('no')")
    assert r["ok"] is False and r["error"]["type"] == "ValueError", r
    assert r["files"] == [entry("half.md", 3, "text/markdown")]
    r = h.call("sandbox/exec", {"lang": "python", "code": "1"})["result"]
    assert r["ok"] is True and "files" not in r, r
    h.call("sandbox/session/close", {"session_id": sid})


def test_deleted_files_are_listed_without_size(pol_dir):
    """kernel-only code can remove files in its workspace (Landlock allows it there): a deleted
    file is listed with change "deleted" and no size or mime."""
    h = Host(args=("--policy-dir", pol_dir, "--policy", "ws-ko"))
    try:
        sid, ws = open_ws(h)
        r = ex(h, sid, "open('gone.csv', 'w').write('1')\nopen('stays.txt', 'w').write('2')\n1")
        assert r["files"] == [entry("gone.csv", 1, "text/csv"), entry("stays.txt", 1, "text/plain")], r
        r = ex(h, sid, "import os\nos.remove('gone.csv')\nopen('new.lua', 'w').write('x')\n2")
        assert r["ok"] is True, r
        assert r["files"] == [{"path": "gone.csv", "change": "deleted"}, entry("new.lua", 1, "text/x-lua")]
    finally:
        h.close()


def test_mime_by_ending(h):
    sid, _ = open_ws(h)
    names = ["a.CSV", "b.jpeg", "c.jpg", "d.svg", "e.pdf", "f.npy", "g.parquet", "h.xlsx", "i.html",
             "j.py", "k", "l.tar.gz", ".json"]
    r = ex(h, sid, "for n in %r:\n    open(n, 'w').write('z')\n1" % names)
    assert r["ok"] is True, r
    got = {f["path"]: f["mime"] for f in r["files"]}
    assert got == {
        ".json": "application/octet-stream", "a.CSV": "text/csv", "b.jpeg": "image/jpeg",
        "c.jpg": "image/jpeg", "d.svg": "image/svg+xml", "e.pdf": "application/pdf",
        "f.npy": "application/x-npy", "g.parquet": "application/vnd.apache.parquet",
        "h.xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "i.html": "text/html", "j.py": "text/x-python", "k": "application/octet-stream",
        "l.tar.gz": "application/octet-stream"}
    assert [f["path"] for f in r["files"]] == sorted(got)  # by the path's bytes
    h.call("sandbox/session/close", {"session_id": sid})


def test_a_planted_symlink_and_fifo_are_never_followed_listed_or_read(h):
    outside = tempfile.mkdtemp(prefix="tp-outside-", dir="/tmp")
    try:
        with open(os.path.join(outside, "victim.txt"), "w") as f:
            f.write("SECRET-OUTSIDE")
        sid, ws = open_ws(h)
        r = ex(h, sid, "1")
        assert "files" not in r, r
        # planted between two execs, as a worker (or a bug) might: a link to a file and to a
        # directory, and a FIFO nobody writes to
        os.symlink(os.path.join(outside, "victim.txt"), os.path.join(ws, "link.txt"))
        os.symlink(outside, os.path.join(ws, "dir"))
        os.mkfifo(os.path.join(ws, "pipe.txt"))
        r = ex(h, sid, "open('real.txt', 'w').write('r')\n1")
        assert r["files"] == [entry("real.txt", 1, "text/plain")], r
        for p in ("link.txt", "dir/victim.txt", "pipe.txt"):
            rr = h.call("resources/read", {"uri": "tidepool://sessions/%s/files/%s" % (sid, p)})
            assert rr["error"] == {"code": NOT_FOUND, "message": "Resource not found",
                                   "data": {"uri": "tidepool://sessions/%s/files/%s" % (sid, p)}}, rr
        assert not any(b"SECRET-OUTSIDE" in line for line in h.lines)
        assert open(os.path.join(outside, "victim.txt")).read() == "SECRET-OUTSIDE"
        h.call("sandbox/session/close", {"session_id": sid})
    finally:
        shutil.rmtree(outside, ignore_errors=True)


def test_the_list_is_capped_at_100_with_files_more(h):
    sid, _ = open_ws(h)
    r = ex(h, sid, "for i in range(105):\n    with open('f%03d.txt' % i, 'w') as f:\n        f.write('x' * i)\n1")
    assert r["ok"] is True, r
    assert r["files"] == [entry("f%03d.txt" % i, i, "text/plain") for i in range(100)]
    assert r["files_more"] == 5 and "files_complete" not in r, r
    h.call("sandbox/session/close", {"session_id": sid})


def test_past_the_walks_bounds_the_list_says_it_is_not_complete(h):
    sid, _ = open_ws(h)
    r = ex(h, sid, "for i in range(1001):\n    with open('g%04d' % i, 'w') as f:\n        pass\n1")
    assert r["ok"] is True, r
    assert len(r["files"]) == 100 and r["files_more"] == 900, r  # the walk stops at 1000
    assert r["files_complete"] is False
    assert {f["change"] for f in r["files"]} == {"created"}
    h.call("sandbox/session/close", {"session_id": sid})


# -- MCP ------------------------------------------------------------------------------------

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(24))
CODE = ("open('o.txt', 'w').write('hi')\nopen('p.png', 'wb').write(%r)\n"
        "open('d.bin', 'wb').write(b'\\x00\\xff')\nopen('a b%%.csv', 'w').write('1,2')\n1" % PNG)


@pytest.mark.parametrize("rev", REVISIONS)
def test_mcp_links_and_embeds_per_revision(pol_dir, rev):
    mcp = Mcp(rev, args=("--policy-dir", pol_dir, "--policy", "ws"))
    try:
        res = mcp.tool("run_python", {"code": CODE, "session": "new"})
        sc = res["structuredContent"]
        sid = sc["session_id"]
        assert res["isError"] is False and sc["files"] == [
            entry("a b%.csv", 3, "text/csv"), entry("d.bin", 2, "application/octet-stream"),
            entry("o.txt", 2, "text/plain"), entry("p.png", len(PNG), "image/png")], res
        uri = "tidepool://sessions/%s/files/" % sid

        def link(name, enc, mime, size):
            return [{"type": "resource_link", "uri": uri + enc, "name": name, "mimeType": mime,
                     "size": size}] if rev in LINKS else []
        want = (link("a b%.csv", "a%20b%25.csv", "text/csv", 3)
                + [{"type": "resource", "resource": {"uri": uri + "a%20b%25.csv", "mimeType": "text/csv",
                                                     "text": "1,2"}}]
                + link("d.bin", "d.bin", "application/octet-stream", 2)
                + link("o.txt", "o.txt", "text/plain", 2)
                + [{"type": "resource", "resource": {"uri": uri + "o.txt", "mimeType": "text/plain",
                                                     "text": "hi"}}]
                + link("p.png", "p.png", "image/png", len(PNG))
                + [{"type": "resource", "resource": {"uri": uri + "p.png", "mimeType": "image/png",
                                                     "blob": b64(PNG)}}])
        assert res["content"][0]["type"] == "text"
        assert json.loads(res["content"][0]["text"]) == sc
        assert res["content"][1:] == want
        # resources/read of each: the exact bytes
        for enc, one in [("o.txt", {"mimeType": "text/plain", "text": "hi"}),
                         ("p.png", {"mimeType": "image/png", "blob": b64(PNG)}),
                         ("d.bin", {"mimeType": "application/octet-stream", "blob": b64(b"\x00\xff")}),
                         ("a%20b%25.csv", {"mimeType": "text/csv", "text": "1,2"})]:
            got = mcp.result("resources/read", {"uri": uri + enc})
            cache = {"ttlMs": 0, "cacheScope": "private"} if rev == MODERN else {}
            assert got == {"contents": [{"uri": uri + enc, **one}], **cache}, got
        # a second call that changes nothing has no files and no items
        res = mcp.tool("run_python", {"code": "2", "session": sid})
        assert "files" not in res["structuredContent"] and len(res["content"]) == 1, res
        lst = mcp.result("resources/list")
        assert lst == ({"resources": [], "ttlMs": 3600000, "cacheScope": "private"} if rev == MODERN
                       else {"resources": []}), lst
    finally:
        mcp.h.close()


@pytest.mark.parametrize("rev", [MODERN, *LEGACY])
def test_initialize_and_discover_declare_resources(pol_dir, rev):
    mcp = Mcp(rev, args=("--policy-dir", pol_dir, "--policy", "ws"))
    try:
        if rev == MODERN:
            caps = mcp.result("server/discover")["capabilities"]
            assert caps == {"tools": {}, "resources": {}}, caps
        else:
            r = mcp.h.call("initialize", {"protocolVersion": rev, "capabilities": {}})
            assert r["result"]["capabilities"] == {"tools": {"listChanged": False}, "resources": {}}, r
    finally:
        mcp.h.close()
    h = Host(args=("--policy", "strict"))  # no workspaces: no resources to offer
    try:
        r = h.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}})
        assert r["result"]["capabilities"] == {"tools": {"listChanged": False}}, r
    finally:
        h.close()


def test_embedding_is_bounded_64k_a_file_256k_in_all():
    """Under standard (16 MiB a file): a 70 KiB text file is linked, not embedded; of five 60 KiB
    ones the first four are embedded (240 KiB) and the fifth would pass 256 KiB: linked only."""
    mcp = Mcp("2025-11-25")
    try:
        code = ("open('big.txt', 'w').write('b' * 71680)\n"
                "for i in range(5):\n    open('m%d.txt' % i, 'w').write(str(i) * 61440)\n1")
        res = mcp.tool("run_python", {"code": code, "session": "new"})
        items = res["content"][1:]
        assert [(i["type"], i.get("name") or i["resource"]["uri"].rsplit("/", 1)[1]) for i in items] == [
            ("resource_link", "big.txt"),
            ("resource_link", "m0.txt"), ("resource", "m0.txt"),
            ("resource_link", "m1.txt"), ("resource", "m1.txt"),
            ("resource_link", "m2.txt"), ("resource", "m2.txt"),
            ("resource_link", "m3.txt"), ("resource", "m3.txt"),
            ("resource_link", "m4.txt")], items
        assert items[2]["resource"]["text"] == "0" * 61440
        # the one not embedded reads whole with resources/read
        uri = items[-1]["uri"]
        got = mcp.result("resources/read", {"uri": uri})
        assert got == {"contents": [{"uri": uri, "mimeType": "text/plain", "text": "4" * 61440}]}
    finally:
        mcp.h.close()


def test_a_lua_session_call_links_its_file():
    mcp = Mcp("2025-06-18")
    try:
        res = mcp.tool("run_lua", {"code": "local f = io.open('t.json', 'w') f:write('[1]') f:close()",
                                   "session": "new"})
        sid = res["structuredContent"]["session_id"]
        uri = "tidepool://sessions/%s/files/t.json" % sid
        assert res["structuredContent"]["files"] == [entry("t.json", 3, "application/json")]
        assert res["content"][1:] == [
            {"type": "resource_link", "uri": uri, "name": "t.json", "mimeType": "application/json",
             "size": 3},
            {"type": "resource", "resource": {"uri": uri, "mimeType": "application/json", "text": "[1]"}}]
    finally:
        mcp.h.close()


# -- resources/read's refusals --------------------------------------------------------------

@pytest.mark.parametrize("rev", [MODERN, "2025-11-25", "2024-11-05"])
def test_resources_read_refusals_are_exact(pol_dir, rev):
    mcp = Mcp(rev, args=("--policy-dir", pol_dir, "--policy", "ws"))
    nf = INVALID if rev == MODERN else NOT_FOUND
    try:
        sc = mcp.tool("run_python", {"code": "open('ok.txt', 'w').write('fine')", "session": "new"})[
            "structuredContent"]
        sid = sc["session_id"]
        base = "tidepool://sessions/%s/files/" % sid

        def refused(uri, code, message):
            r = mcp.call("resources/read", {"uri": uri})
            assert r.get("error") == {"code": code, "message": message, "data": {"uri": uri}}, r

        dots = "Resource not found: its path may not name '.' or '..'"
        refused(base + "../ok.txt", nf, dots)
        refused(base + "%2E%2E/ok.txt", nf, dots)
        refused(base + "a/./ok.txt", nf, dots)
        refused(base + "a//b", nf, "Resource not found: its path has an empty name (a '//' or a trailing '/')")
        refused(base + "x%00y", nf, "Resource not found: its path holds a NUL byte")
        refused(base + "/".join("d" * 9), nf, "Resource not found: its path is deeper than 8 names")
        refused(base + "nope.txt", nf, "Resource not found")
        refused(base + "ok.txt?x=1", nf, "Resource not found")
        refused(base + "ok%zz", nf, "Resource not found")
        refused("tidepool://sessions/s-0000000000000000/files/ok.txt", nf, "Resource not found")
        refused("tidepool://sessions/%s/ok.txt" % sid, nf, "Resource not found")
        refused("file:///etc/passwd", nf, "Resource not found")
        r = mcp.call("resources/read", {"uri": 7})
        assert r["error"] == {"code": INVALID,
                              "message": "Invalid params: resources/read takes {\"uri\": a string}"}, r
        r = mcp.call("resources/list", {"cursor": "x"})
        assert r["error"] == {"code": INVALID,
                              "message": "Invalid params: unknown cursor (resources/list has one page)"}, r
        # a closed session's file is not found either
        mcp.tool("close_session", {"session_id": sid})
        refused(base + "ok.txt", nf, "Resource not found")
    finally:
        mcp.h.close()


def test_resources_read_of_a_file_over_the_cap_and_of_a_symlink(h):
    outside = tempfile.mkdtemp(prefix="tp-outside-", dir="/tmp")
    try:
        with open(os.path.join(outside, "secret"), "w") as f:
            f.write("TOP-SECRET-BYTES")
        sid, ws = open_ws(h)
        with open(os.path.join(ws, "big.bin"), "wb") as f:  # more than the policy's 4096
            f.write(b"B" * 5000)
        os.symlink(os.path.join(outside, "secret"), os.path.join(ws, "s.txt"))
        uri = "tidepool://sessions/%s/files/" % sid
        r = h.call("resources/read", {"uri": uri + "big.bin"})
        assert r["error"] == {"code": INVALID, "message": "Invalid params: 'big.bin' is 5000 bytes, "
                              "more than the 4096 one read carries", "data": {"uri": uri + "big.bin"}}, r
        r = h.call("resources/read", {"uri": uri + "s.txt"})
        assert r["error"] == {"code": NOT_FOUND, "message": "Resource not found",
                              "data": {"uri": uri + "s.txt"}}, r
        assert not any(b"TOP-SECRET-BYTES" in line for line in h.lines)
        h.call("sandbox/session/close", {"session_id": sid})
    finally:
        shutil.rmtree(outside, ignore_errors=True)


def test_another_clients_session_is_never_read(pol_dir):
    """Two clients of one host (stdio and a socket): the socket's client names a file of the
    stdio client's session, which exists, and is told only what it would be told of none."""
    d = Daemon("--policy", "ws", policy_dir=pol_dir)
    s = Sock(d.path)
    try:
        sid, ws = open_ws(d.host)
        r = ex(d.host, sid, "open('mine.txt', 'w').write('STDIO-CLIENT-ONLY')\n1")
        assert r["files"] == [entry("mine.txt", 17, "text/plain")], r
        uri = "tidepool://sessions/%s/files/mine.txt" % sid
        assert d.host.call("resources/read", {"uri": uri})["result"] == {
            "contents": [{"uri": uri, "mimeType": "text/plain", "text": "STDIO-CLIENT-ONLY"}]}
        r = s.call("resources/read", {"uri": uri})
        assert r == {"jsonrpc": "2.0", "id": r["id"],
                     "error": {"code": NOT_FOUND, "message": "Resource not found", "data": {"uri": uri}}}, r
        assert "STDIO-CLIENT-ONLY" not in json.dumps(r)
        # nor can it run in it, to learn what changed
        r = s.call("sandbox/exec", {"session_id": sid, "code": "1"})
        assert r["error"]["code"] == NOT_FOUND and "STDIO-CLIENT-ONLY" not in json.dumps(r), r
    finally:
        s.close()
        d.host.close()
        shutil.rmtree(d.dir, ignore_errors=True)


def test_names_and_contents_are_redacted_as_read_files_are(pol_dir):
    """A policy's redact: the listed names, the links, the embedded text and image bytes, and
    resources/read carry no secret (as files/list and read_file)."""
    path = os.path.join(pol_dir, "secret-ws.json")
    with open(path, "w") as f:
        json.dump({"name": "secret-ws", "extends": "standard", "redact": {"strings": ["tok-file-42"]},
                   "session": {"workspace_bytes": 65536}}, f)
    mcp = Mcp("2025-11-25", args=("--policy", path))
    try:
        code = ("open('tok-file-42.txt', 'w').write('a tok-file-42 b')\n"
                "open('p.png', 'wb').write(b'\\x89PNG tok-file-42')\n1")
        res = mcp.tool("run_python", {"code": code, "session": "new"})
        sid = res["structuredContent"]["session_id"]
        uri = "tidepool://sessions/%s/files/" % sid
        # by the real names' bytes, then redacted; a size is the file's on disk
        assert res["structuredContent"]["files"] == [
            entry("p.png", 16, "image/png"), entry("[REDACTED].txt", 15, "text/plain")], res
        assert res["content"][1:] == [
            {"type": "resource_link", "uri": uri + "p.png", "name": "p.png", "mimeType": "image/png",
             "size": 16},
            {"type": "resource", "resource": {"uri": uri + "p.png", "mimeType": "image/png",
                                              "blob": b64(b"\x89PNG [REDACTED]")}},
            {"type": "resource_link", "uri": uri + "[REDACTED].txt", "name": "[REDACTED].txt",
             "mimeType": "text/plain", "size": 15},
            {"type": "resource", "resource": {"uri": uri + "[REDACTED].txt", "mimeType": "text/plain",
                                              "text": "a [REDACTED] b"}}], res
        got = mcp.result("resources/read", {"uri": uri + "tok-file-42.txt"})
        assert got == {"contents": [{"uri": uri + "[REDACTED].txt", "mimeType": "text/plain",
                                     "text": "a [REDACTED] b"}]}, got
        assert not any(b"tok-file-42" in line for line in mcp.h.lines)
    finally:
        mcp.h.close()


def test_over_http_another_tenant_never_reads_a_sessions_file():
    """--tokens: acme's MCP session writes a file; globex, and another MCP session of acme
    itself, are told only "Resource not found", with no byte of it."""
    from test_tenants import session, tenant, tokens_file
    from test_http import Server, rq
    srv = Server("--tokens", tokens_file([tenant("acme"), tenant("globex")]))
    try:
        a = session(srv, "acme")
        _, _, m = srv.post(rq(2, "tools/call", {"name": "run_python", "arguments": {
            "code": "open('acme.txt', 'w').write('ACME-ONLY-BYTES')", "session": "new"}}), headers=a)
        res = m["result"]
        sid = res["structuredContent"]["session_id"]
        uri = "tidepool://sessions/%s/files/acme.txt" % sid
        assert res["content"][1:] == [
            {"type": "resource_link", "uri": uri, "name": "acme.txt", "mimeType": "text/plain", "size": 15},
            {"type": "resource", "resource": {"uri": uri, "mimeType": "text/plain", "text": "ACME-ONLY-BYTES"}}]
        _, _, m = srv.post(rq(3, "resources/read", {"uri": uri}), headers=a)
        assert m["result"] == {"contents": [{"uri": uri, "mimeType": "text/plain", "text": "ACME-ONLY-BYTES"}]}
        for other in (session(srv, "globex"), session(srv, "acme")):
            status, _, m = srv.post(rq(4, "resources/read", {"uri": uri}), headers=other)
            assert m == {"jsonrpc": "2.0", "id": 4, "error": {
                "code": NOT_FOUND, "message": "Resource not found", "data": {"uri": uri}}}, m
            assert "ACME-ONLY-BYTES" not in json.dumps(m)
    finally:
        srv.stop()
