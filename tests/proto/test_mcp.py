"""MCP as a server, in every revision tidepool offers: the four initialize-era
ones (2024-11-05 .. 2025-11-25) and the stateless 2026-07-28, whose requests
carry their version in _meta and need no initialize. Each test states one
behaviour and fails on the exact code, message or value it checks."""
import json
import os
import subprocess
import time

import pytest

from conftest import BINARY, LANDLOCK_ABI, Host, assert_healthy

MODERN = "2026-07-28"
LEGACY = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]
REVISIONS = [MODERN, *LEGACY]
META = {"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"}}
SERVER_INFO = "io.modelcontextprotocol/serverInfo"


class Mcp:
    """A client of one revision: initialize first (legacy), or _meta on every
    request (modern)."""

    def __init__(self, rev, args=()):
        self.rev = rev
        self.h = Host(args=args)
        if rev != MODERN:
            r = self.h.call("initialize", {"protocolVersion": rev, "capabilities": {},
                                           "clientInfo": {"name": "test", "version": "1"}})
            assert r["result"]["protocolVersion"] == rev, r
            self.h.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def params(self, params):
        if self.rev != MODERN:
            return params
        return {**params, "_meta": {**META, **params.get("_meta", {})}}

    def call(self, method, params=None, timeout=20.0):
        return self.h.call(method, self.params(params or {}), timeout)

    def result(self, method, params=None):
        r = self.call(method, params)
        assert "result" in r, r
        res = r["result"]
        if self.rev == MODERN:  # every result of the stateless revision is marked
            assert res.pop("resultType") == "complete", res
            meta = res.pop("_meta")
            assert meta[SERVER_INFO]["name"] == "tidepool", meta
        else:
            assert "resultType" not in res and "_meta" not in res, res
        return res

    def tool(self, name, arguments, **extra):
        params = {"name": name, **extra}
        if arguments is not None:
            params["arguments"] = arguments
        return self.result("tools/call", params)


@pytest.fixture(params=REVISIONS)
def mcp(request):
    m = Mcp(request.param)
    yield m
    m.h.close()


LARGE = {  # over 4096 bytes of JSON: the text is the value's, written from its bytes
    "run_python": ("[{'id': i, 's': 'q\"\\\\é/', 'p': i / 7, 'ok': i % 3 == 0} for i in range(120)]",
                   [{"id": i, "s": 'q"\\é/', "p": i / 7, "ok": i % 3 == 0} for i in range(120)]),
    "run_lua": ("local t = {} for i = 1, 120 do t[i] = {id = i, p = i / 8} end return t",
                [{"id": i, "p": i / 8} for i in range(1, 121)]),
}


@pytest.mark.parametrize("tool", sorted(LARGE))
def test_a_large_value_is_written_once_and_the_same_everywhere(mcp, tool):
    """The value, its text (the value's JSON) and the content text (the result's
    JSON) come from the worker's bytes, not from dumps of their trees: each is
    byte for byte what a compact dump writes."""
    code, want = LARGE[tool]
    res = mcp.tool(tool, {"code": code})
    sc = res["structuredContent"]
    assert (sc["ok"], sc["value"]) == (True, want), sc
    assert sc["text"] == json.dumps(want, separators=(",", ":"), ensure_ascii=False)
    assert res["content"][0]["text"] == json.dumps(sc, separators=(",", ":"), ensure_ascii=False)
    line = mcp.h.lines[-1]
    assert b"\x00" not in line and b"\n" not in line and json.loads(line)["result"]["isError"] is False


def text_error(res):
    """An isError result without structuredContent: its text."""
    assert res["isError"] is True, res
    assert "structuredContent" not in res, res
    assert [c["type"] for c in res["content"]] == ["text"], res
    return res["content"][0]["text"]


# -- bad arguments are results the model can read (2025-11-25 wants them so) ----------

@pytest.mark.parametrize("name,arguments,text", [
    ("run_lua", {}, "'code' must be a string"),
    ("run_python", {"code": 42}, "'code' must be a string"),
    ("run_lua", {"code": "return 1", "timeout": 5}, "unknown parameter 'timeout'"),
    ("run_python", None, "'arguments' is missing: run_python takes {\"code\": a string, ...}"),
    ("run_lua", "x", "'arguments' must be an object"),
    ("run_lua", {"code": "return 1", "limits": {"cpu_ms": 999999}},
     "limit 'cpu_ms' may only be tightened: 999999 > ceiling 5000 (policy 'standard')"),
    ("run_lua", {"code": "return 1", "limits": {"fuel": 1}},
     "unknown limit 'fuel' (policy 'standard')"),
    ("run_lua", {"code": "return 1", "seed": "x"}, "'seed' must be an integer"),
    ("run_lua", {"code": "return 1", "session": 5},
     "'session' must be \"new\" or a session_id a result returned"),
    ("run_lua", {"code": "return 1", "session": "s-0000000000000000"},
     "unknown session 's-0000000000000000' (session: \"new\" opens one; list_sessions shows those open)"),
])
def test_bad_arguments_are_an_is_error_result(mcp, name, arguments, text):
    assert text_error(mcp.tool(name, arguments)) == text
    assert mcp.result("ping") == {}  # and the host goes on


def test_only_an_unknown_tool_is_a_protocol_error(mcp):
    r = mcp.call("tools/call", {"name": "run_ruby", "arguments": {"code": "1"}})
    assert r["error"] == {"code": -32602, "message": "Unknown tool: run_ruby"}, r
    r = mcp.call("tools/call", {"arguments": {"code": "1"}})
    assert r["error"] == {"code": -32602, "message": "Unknown tool: (none)"}, r


def test_a_session_refused_in_its_first_call_is_not_left_open(mcp):
    res = mcp.tool("run_lua", {"code": 5, "session": "new"})
    assert text_error(res) == "'code' must be a string"
    listed = mcp.tool("list_sessions", {})
    assert listed["structuredContent"] == {"sessions": []}, listed


# -- limits and seed, now tool arguments ----------------------------------------------

def test_limits_tighten_a_call(mcp):
    res = mcp.tool("run_lua", {"code": "while true do end", "limits": {"instructions": 1000}})
    sc = res["structuredContent"]
    assert res["isError"] is True and sc["error"]["kind"] == "instruction_limit", sc
    assert sc["error"]["limit"] == {"name": "instructions", "limit": 1000, "used": 1000}, sc


def test_seed_makes_random_reproducible(mcp):
    code = "import random\n[random.randint(0, 10**9) for _ in range(3)]"
    a = mcp.tool("run_python", {"code": code, "seed": 7})["structuredContent"]["value"]
    b = mcp.tool("run_python", {"code": code, "seed": 7})["structuredContent"]["value"]
    c = mcp.tool("run_python", {"code": code, "seed": 8})["structuredContent"]["value"]
    assert a == b and a != c, (a, b, c)


# -- initialize and tools/list ----------------------------------------------------------

@pytest.mark.parametrize("params", [{}, {"protocolVersion": None}, {"protocolVersion": 20251125},
                                    {"capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}])
def test_initialize_without_a_protocol_version_is_refused(host, params):
    r = host.call("initialize", params)
    assert r["error"] == {"code": -32602,
                          "message": "Invalid params: initialize needs protocolVersion, a string"}, r


def test_initialize_cannot_pick_the_stateless_revision(host):
    r = host.call("initialize", {"protocolVersion": MODERN, "capabilities": {}})
    assert r["result"]["protocolVersion"] == "2025-11-25", r


@pytest.mark.parametrize("cursor,msg", [
    ("abc", "Invalid params: unknown cursor 'abc' (tools/list has one page)"),
    ("", "Invalid params: unknown cursor '' (tools/list has one page)"),
    (3, "Invalid params: unknown cursor (tools/list has one page)"),
])
def test_tools_list_refuses_a_cursor_it_never_gave(mcp, cursor, msg):
    r = mcp.call("tools/list", {"cursor": cursor})
    assert r["error"] == {"code": -32602, "message": msg}, r


def test_tools_list_has_one_page(mcp):
    res = mcp.result("tools/list")
    assert "nextCursor" not in res
    names = [t["name"] for t in res["tools"]]
    # standard gives each session a workspace: its file tools are listed too
    assert names == ["run_lua", "run_python", "list_sessions", "close_session",
                     "write_file", "read_file", "list_files"], names
    if mcp.rev == MODERN:  # 2026-07-28's CacheableResult
        assert (res.pop("ttlMs"), res.pop("cacheScope")) == (3600000, "private")
    assert set(res) == {"tools"}, res


# -- the stateless revision (2026-07-28) ---------------------------------------------------

def test_server_discover_names_every_revision(host):
    r = host.call("server/discover", {"_meta": META})["result"]
    assert r["resultType"] == "complete"
    assert r["supportedVersions"] == REVISIONS
    # the default gives sessions a workspace: its files come back as resources
    assert r["capabilities"] == {"tools": {}, "resources": {}}
    assert r["_meta"][SERVER_INFO]["name"] == "tidepool"
    assert (r["ttlMs"], r["cacheScope"]) == (3600000, "private")
    assert r["instructions"].startswith("Call run_lua with Lua 5.4 code")
    # the default's sessions have a workspace, and the instructions say how files move
    assert r["instructions"].endswith(
        " A session's working directory is its workspace: write_file puts a file there for its "
        "code, read_file and list_files get what the code wrote."), r["instructions"]


def test_a_modern_request_needs_no_initialize(host):
    r = host.call("tools/call", {"name": "run_lua", "arguments": {"code": "return 6 * 7"},
                                 "_meta": META})["result"]
    assert r["resultType"] == "complete" and r["_meta"][SERVER_INFO]["version"] == "0.1.0", r
    assert r["structuredContent"]["value"] == 42 and r["isError"] is False


@pytest.mark.parametrize("version", ["2030-01-01", "2025-11-25", 7])
def test_an_unsupported_version_in_meta_is_refused(host, version):
    meta = {**META, "io.modelcontextprotocol/protocolVersion": version}
    for method in ("server/discover", "tools/list", "tools/call"):
        r = host.call(method, {"name": "run_lua", "arguments": {"code": "return 1"}, "_meta": meta})
        assert r["error"] == {"code": -32022, "message": "Unsupported protocol version",
                              "data": {"supported": REVISIONS, "requested": version}}, r


def test_modern_meta_without_client_capabilities_is_refused(host):
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN}
    r = host.call("tools/list", {"_meta": meta})
    assert r["error"] == {"code": -32602, "message": "Invalid params: _meta.io.modelcontextprotocol/"
                          "clientCapabilities must be an object (revision 2026-07-28)"}, r


def test_legacy_requests_are_not_marked(host):
    r = host.call("tools/call", {"name": "run_lua", "arguments": {"code": "return 1"},
                                 "_meta": {"progressToken": 3}})["result"]
    assert set(r) == {"content", "structuredContent", "isError"}, r


# -- batches: received under 2025-03-26 only -------------------------------------------------

def batch_host():
    m = Mcp("2025-03-26")
    return m.h


def test_a_batch_gets_one_array_of_replies():
    h = batch_host()
    try:
        h.send([{"jsonrpc": "2.0", "id": "a", "method": "ping"},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": "b", "method": "tools/call",
                 "params": {"name": "run_lua", "arguments": {"code": "return 2"}}},
                {"jsonrpc": "2.0", "id": "c", "method": "tools/call",
                 "params": {"name": "run_python", "arguments": {"code": "3"}}},
                {"jsonrpc": "2.0", "id": "d", "method": "nope"},
                {"jsonrpc": "1.0", "id": "e", "method": "ping"},
                5])
        arr = read_array(h)
        by_id = {m.get("id"): m for m in arr}
        assert len(arr) == 6, arr
        assert by_id["a"]["result"] == {}
        assert by_id["b"]["result"]["structuredContent"]["value"] == 2
        assert by_id["c"]["result"]["structuredContent"]["value"] == 3
        assert by_id["d"]["error"] == {"code": -32601, "message": "Method not found"}
        assert by_id["e"]["error"]["code"] == -32600
        assert by_id[None]["error"] == {"code": -32600, "message": "Invalid Request: not an object"}
        assert h.call("ping")["result"] == {}
    finally:
        h.close()


def read_array(h, timeout=20.0):
    """The next line, which must be a JSON array (a batch's replies)."""
    deadline = time.monotonic() + timeout
    import select
    while b"\n" not in h.buf:
        r, _, _ = select.select([h.proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
        assert r, "no reply from tidepool"
        chunk = os.read(h.proc.stdout.fileno(), 1 << 20)
        assert chunk, "tidepool closed stdout"
        h.buf += chunk
    line, h.buf = h.buf.split(b"\n", 1)
    arr = json.loads(line)
    assert isinstance(arr, list), line
    return arr


def test_an_empty_batch_is_an_invalid_request():
    h = batch_host()
    try:
        h.send_raw(b"[]\n")
        assert h.read_line() == {"jsonrpc": "2.0", "error": {"code": -32600,
                                                             "message": "Invalid Request: an empty batch"}}
    finally:
        h.close()


def test_a_batch_of_notifications_gets_nothing():
    h = batch_host()
    try:
        h.send([{"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}}])
        r = h.call("ping")  # the next line is the ping's reply: nothing came before it
        assert r["result"] == {} and len(h.lines) == 2, h.lines  # initialize's, then ping's
    finally:
        h.close()


def test_a_cancelled_call_in_a_batch_is_left_out_of_its_array():
    h = batch_host()
    try:
        h.send([{"jsonrpc": "2.0", "id": "long", "method": "tools/call",
                 "params": {"name": "run_lua", "arguments": {"code": "while true do end"}}},
                {"jsonrpc": "2.0", "id": "short", "method": "tools/call",
                 "params": {"name": "run_lua", "arguments": {"code": "return 1"}}}])
        time.sleep(0.3)
        h.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "long"}})
        arr = read_array(h)
        assert [m["id"] for m in arr] == ["short"], arr
        assert arr[0]["result"]["structuredContent"]["value"] == 1
    finally:
        h.close()


@pytest.mark.parametrize("rev", ["2025-11-25", "2025-06-18", "2024-11-05", None])
def test_other_revisions_refuse_batches(rev):
    h = Mcp(rev).h if rev else Host()
    try:
        h.send([{"jsonrpc": "2.0", "id": 1, "method": "ping"}])
        assert h.read_line() == {"jsonrpc": "2.0", "error": {
            "code": -32600, "message": "Invalid Request: batches are not supported"}}
    finally:
        h.close()


# -- EOF: every client's drains what is in flight (test_shutdown.py has the rest) ----------

def test_eof_in_an_mcp_session_finishes_execs_and_exits(mcp):
    h = mcp.h
    slow = "local t = os.clock() while os.clock() - t < 0.3 do end return 'done'"
    h.send({"jsonrpc": "2.0", "id": "tool", "method": "tools/call",
            "params": mcp.params({"name": "run_lua", "arguments": {"code": slow}})})
    h.send({"jsonrpc": "2.0", "id": "native", "method": "sandbox/exec",
            "params": {"lang": "lua", "code": slow}})
    h.proc.stdin.close()
    assert h.proc.wait(timeout=20) == 0
    rest = h.buf + h.proc.stdout.read()
    replies = {r["id"]: r for r in map(json.loads, rest.splitlines())}
    assert sorted(replies) == ["native", "tool"], replies
    assert replies["tool"]["result"]["structuredContent"]["value"] == "done", replies["tool"]
    assert replies["native"]["result"]["value"] == "done", replies["native"]


def test_eof_in_a_session_finishes_its_exec(mcp):
    h = mcp.h
    sid = mcp.tool("run_lua", {"code": "x = 1", "session": "new"})["structuredContent"]["session_id"]
    h.send({"jsonrpc": "2.0", "id": "last", "method": "tools/call",
            "params": mcp.params({"name": "run_lua", "arguments": {
                "code": "local t = os.clock() while os.clock() - t < 0.2 do end return x + 1",
                "session": sid}})})
    h.proc.stdin.close()
    assert h.proc.wait(timeout=20) == 0
    rest = [json.loads(l) for l in (h.buf + h.proc.stdout.read()).splitlines()]
    assert [r["id"] for r in rest] == ["last"], rest
    assert rest[0]["result"]["structuredContent"]["value"] == 2, rest


def test_eof_without_mcp_drains_as_documented(host):
    host.send({"jsonrpc": "2.0", "id": 1, "method": "sandbox/exec",
               "params": {"lang": "lua", "code": "local t = os.clock() while os.clock() - t < 0.5 do end return 5"}})
    time.sleep(0.1)
    host.proc.stdin.close()
    assert host.proc.wait(timeout=20) == 0
    out = host.buf + host.proc.stdout.read()
    r = json.loads(out.splitlines()[0])
    assert r["id"] == 1 and r["result"]["value"] == 5, r


# -- what tools/list tells a model ---------------------------------------------------------

def tools_by_name(mcp):
    return {t["name"]: t for t in mcp.result("tools/list")["tools"]}


def test_annotations_say_what_each_tool_does(mcp):
    want = {
        "run_lua": (False, False, False, False),
        "run_python": (False, False, False, False),
        "list_sessions": (True, False, True, False),
        "close_session": (False, True, True, False),
        "write_file": (False, True, True, False),
        "read_file": (True, False, True, False),
        "list_files": (True, False, True, False),
    }
    tools = tools_by_name(mcp)
    assert sorted(tools) == sorted(want), sorted(tools)
    for name, t in tools.items():
        a = t["annotations"]
        got = (a["readOnlyHint"], a["destructiveHint"], a["idempotentHint"], a["openWorldHint"])
        assert got == want[name], (name, a)


def test_descriptions_state_the_policys_real_limits_and_imports(mcp):
    tools = tools_by_name(mcp)
    pol = mcp.h.call("sandbox/policy/get", {"name": "standard"})["result"]
    limits = ("Limits of each call (policy 'standard'; the limits argument may only lower them): "
              "memory 64 MiB, CPU time 5 s, wall clock 10 s, stdout+stderr 1 MiB, value 1 MiB of "
              "JSON nested at most 64 deep, no instruction limit.")
    for name in ("run_lua", "run_python"):
        assert limits in tools[name]["description"], tools[name]["description"]
    mods = pol["python"]["modules"]
    imports = "Only these modules can be imported: " + ", ".join(mods) + \
        ", and os, os.path and pathlib for files (any other import is a policy_violation)."
    assert imports in tools["run_python"]["description"]
    assert "Libraries: base, string, table, math, utf8, coroutine and json; functions: os.clock, os.date, " \
           "os.difftime, os.time, io.write, and io.open and io.lines for files (anything else is nil). " \
           "json.encode(value) gives JSON text, json.decode(text) a value; json.null stands for " \
           "null." in tools["run_lua"]["description"]
    files = ("No network or processes. Files live in a session's workspace, its working directory "
             "(relative paths); a call without a session has none.")
    for name in ("run_lua", "run_python"):
        assert files in tools[name]["description"], tools[name]["description"]
    # what a description says is what happens: a module it leaves out is refused, a file
    # module it names works in a session and refuses without one
    res = mcp.tool("run_python", {"code": "import socket"})
    assert res["structuredContent"]["error"]["kind"] == "policy_violation"
    if LANDLOCK_ABI > 0:  # the kernel holds workspaces: without Landlock, sessions get none
        res = mcp.tool("run_python", {"code": "import pathlib\npathlib.Path('a.txt').write_text('hi')",
                                      "session": "new"})
        assert res["structuredContent"]["value"] == 2, res
    res = mcp.tool("run_python", {"code": "open('a.txt')"})
    assert res["structuredContent"]["error"]["message"] == (
        "open('a.txt') is refused: files are in a session's workspace, and this exec has none "
        "(policy standard: open a session)"), res


def test_a_policy_without_files_says_so(tmp_path):
    (tmp_path / "nofiles.json").write_text(json.dumps(
        {"name": "nofiles", "extends": "standard", "session": {"workspace_bytes": 0}}))
    os.chmod(tmp_path, 0o755)
    m = Mcp("2025-11-25", args=("--policy-dir", str(tmp_path), "--policy", "nofiles"))
    try:
        tools = tools_by_name(m)
        assert [t for t in tools if t.endswith("_file") or t == "list_files"] == []
        for name in ("run_lua", "run_python"):
            d = tools[name]["description"]
            assert "`stdout`. No files, network or processes. Limits of each call" in d, d
        assert "html.parser and html.entities (any other import" in tools["run_python"]["description"]
        assert "os.time and io.write (anything else is nil)" in tools["run_lua"]["description"]
    finally:
        m.h.close()


def test_input_schema_offers_limits_and_seed(mcp):
    s = tools_by_name(mcp)["run_lua"]["inputSchema"]
    assert s["additionalProperties"] is False and s["required"] == ["code"]
    assert s["properties"]["seed"]["type"] == "integer"
    lim = s["properties"]["limits"]
    assert lim["additionalProperties"] is False
    assert sorted(lim["properties"]) == sorted(["memory_bytes", "instructions", "cpu_ms", "wall_ms",
                                                "output_bytes", "result_bytes", "result_depth",
                                                "tool_calls"])
    assert lim["properties"]["cpu_ms"] == {"type": "integer", "minimum": 1, "maximum": 5000}
    assert lim["properties"]["instructions"] == {"type": "integer", "minimum": 1}  # off: no ceiling


ALL_KINDS = ["syntax_error", "runtime_error", "input_error", "result_error", "memory_limit",
             "instruction_limit", "cpu_limit", "timeout", "output_limit", "policy_violation",
             "sandbox_violation", "crashed", "rate_limit", "tool_limit", "queue_timeout", "cancelled",
             "internal_error"]


def test_output_schema_is_precise(mcp):
    o = tools_by_name(mcp)["run_python"]["outputSchema"]
    p = o["properties"]
    assert p["value"]["anyOf"] == [{"type": t} for t in
                                   ("null", "boolean", "number", "string", "array", "object")]
    null, err = p["error"]["anyOf"]
    assert null == {"type": "null"} and "type" not in p["error"]
    assert sorted(err["properties"]["kind"]["enum"]) == sorted(ALL_KINDS)
    assert err["properties"]["line"] == {"anyOf": [{"type": "integer"}, {"type": "null"}]}
    assert err["properties"]["column"] == {"anyOf": [{"type": "integer"}, {"type": "null"}]}
    assert "column" not in err["required"]
    assert p["usage"]["required"] == ["instructions", "memory_peak_bytes", "cpu_ms", "wall_ms",
                                      "queue_ms", "tool_calls"]
    assert p["usage"]["properties"]["cpu_ms"] == {"type": "number", "minimum": 0}
    assert p["isolation"]["properties"]["level"]["enum"] == ["process", "state"]
    assert "isolation" not in o["required"]
    # no property anywhere has a list as its type (portable to single-type dialects)
    def walk(s):
        if isinstance(s, dict):
            assert not isinstance(s.get("type"), list), s
            for v in s.values():
                walk(v)
        elif isinstance(s, list):
            for v in s:
                walk(v)
    walk(o)


def conforms(v, s, path="$"):
    """The JSON Schema subset outputSchema uses: type, enum, anyOf, properties,
    required, minimum."""
    kinds = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}
    if "anyOf" in s:
        errs = []
        for sub in s["anyOf"]:
            try:
                conforms(v, sub, path)
                break
            except AssertionError as e:
                errs.append(str(e))
        else:
            raise AssertionError(f"{path}: no branch of anyOf: {errs}")
    t = s.get("type")
    if t == "integer":
        assert isinstance(v, int) and not isinstance(v, bool), f"{path}: {v!r} not integer"
    elif t == "number":
        assert isinstance(v, (int, float)) and not isinstance(v, bool), f"{path}: {v!r} not number"
    elif t is not None:
        assert isinstance(v, kinds[t]), f"{path}: {v!r} not {t}"
    if "enum" in s:
        assert v in s["enum"], f"{path}: {v!r} not in enum"
    if "minimum" in s:
        assert v >= s["minimum"], f"{path}: {v!r} < {s['minimum']}"
    if isinstance(v, dict):
        for k in s.get("required", []):
            assert k in v, f"{path}: {k} missing"
        for k, sub in s.get("properties", {}).items():
            if k in v:
                conforms(v[k], sub, f"{path}.{k}")
        extra = s.get("additionalProperties")
        if isinstance(extra, dict):
            for k in v:
                if k not in s.get("properties", {}):
                    conforms(v[k], extra, f"{path}.{k}")


def test_isolation_results_conform_under_a_state_policy(tmp_path):
    os.chmod(tmp_path, 0o755)
    (tmp_path / "st.json").write_text(json.dumps({"name": "st", "extends": "standard",
                                                  "isolation": "state"}))
    m = Mcp("2025-11-25", args=("--policy-dir", str(tmp_path), "--policy", "st"))
    try:
        schema = tools_by_name(m)["run_lua"]["outputSchema"]
        for code in ("return 1", "error('x')", "return {a = {1, 2}}"):
            sc = m.tool("run_lua", {"code": code})["structuredContent"]
            assert sc["isolation"]["level"] in ("state", "process"), sc  # results carry it
            conforms(sc, schema)
        bad = dict(sc, isolation={"level": "thread", "worker_exec": 1})
        with pytest.raises(AssertionError):
            conforms(bad, schema)  # the check can fail
    finally:
        m.h.close()


def test_results_conform_to_the_output_schema(mcp):
    schema = tools_by_name(mcp)["run_lua"]["outputSchema"]
    for name, args in [("run_lua", {"code": "return 1.5"}), ("run_lua", {"code": "return ("}),
                       ("run_python", {"code": "1/0"}), ("run_python", {"code": "{1}"}),
                       ("run_lua", {"code": "while true do end", "limits": {"wall_ms": 100}})]:
        sc = mcp.tool(name, args)["structuredContent"]
        conforms(sc, schema)
    with pytest.raises(AssertionError):
        conforms(dict(sc, usage={"cpu_ms": -1}), schema)


@pytest.mark.parametrize("name,code,value,nonfinite", [
    ("run_python", "0/1 * float('nan')", None, {"": "nan"}),
    ("run_python", "import math\nmath.inf", None, {"": "inf"}),
    ("run_python", "float('nan')", None, {"": "nan"}),
    ("run_python", "import math\n[1, math.inf]", [1, None], {"/1": "inf"}),
    ("run_python", "{'x': float('nan')}", {"x": None}, {"/x": "nan"}),
    ("run_lua", "return 0/0", None, {"": "nan"}),
    ("run_lua", "return math.huge", None, {"": "inf"}),
])
def test_nonfinite_values_over_mcp_conform(mcp, name, code, value, nonfinite):
    """A NaN or an infinity is a value over MCP too: structuredContent stays JSON (null,
    named in nonfinite) and conforms to the outputSchema; the text content shows it."""
    schema = tools_by_name(mcp)[name]["outputSchema"]
    r = mcp.tool(name, {"code": code})
    sc = r["structuredContent"]
    assert r.get("isError") is not True and (sc["ok"], sc["value"], sc["nonfinite"]) == (
        True, value, nonfinite), r
    conforms(sc, schema)
    shown = {"": "nan"} if nonfinite == {"": "nan"} else nonfinite
    assert any(x in r["content"][0]["text"] for x in shown.values()), r["content"]
    with pytest.raises(AssertionError):
        conforms(dict(sc, nonfinite={"": "NaN"}), schema)  # the check can fail
