"""Hostile Lua snippets, each refused or contained with an exact verdict; after
each one the same host answers `return 1+1` with 2. Classes are those of the
published Lua sandbox escapes: removed libraries, bytecode,
metatables, address leaks, finalizers, resource bombs, state leaks, marshalling."""
import pytest

from conftest import assert_healthy

NIL_CALL = "attempt to call a nil value"
NIL_INDEX = "attempt to index a nil value"
PV = "policy_violation"


def refused(name, why, policy="standard"):
    """A name stock Lua has and the policy leaves out: the read itself is refused."""
    msg = "%s is not available in the sandbox (policy %s%s)" % (name, policy, ": " + why if why else "")
    return lambda r: r["error"]["message"] == msg and r["error"]["type"] == "PolicyViolation"


def no_workspace(call):
    """The default (standard) gives each session a workspace, so every exec has io.open and
    io.lines: a one-shot exec's call refuses each path and says where files are."""
    msg = ("%s('/etc/passwd') is refused: files are in a session's workspace, and this exec has "
           "none (policy standard: open a session)" % call)
    return lambda r: r["error"]["message"] == msg and r["error"]["type"] == "PolicyViolation"

REQ = ("require('%s') is not available in the sandbox (policy standard: no modules; its libraries are "
       "globals: string, table, math, utf8, coroutine, os, io, json)")

# (id, code, limits, expected kind or "ok", check on the result[, policy])
# Without a policy the case runs under the default (standard); what a policy without
# files leaves out (io.open, io.lines) is tested under strict, which has no workspace.
CASES = [
    # -- removed globals and libraries (CVE-2022-0543 class) --------------------
    ("require", "return require('lpeg')", {}, PV, lambda r: r["error"]["message"] == REQ % "lpeg"),
    ("require the stock io", "return require('tidepool.io')", {}, PV, lambda r: r["error"]["message"] == REQ % "tidepool.io"),
    ("require what the snippet has", "return require('io') == io and require('json') == json and rawget(io, 'open') == nil", {}, "ok", lambda r: r["value"] is True, "strict"),
    ("require what the snippet has, files", "return require('io') == io and require('json') == json and type(rawget(io, 'open')) == 'function' and rawget(io, 'popen') == nil", {}, "ok", lambda r: r["value"] is True),
    ("package.loadlib", "return package.loadlib('liblua5.4.so', 'luaopen_io')", {}, PV, refused("package", "no modules")),
    ("dofile", "return dofile('/etc/passwd')", {}, PV, refused("dofile", "no files")),
    ("loadfile", "return loadfile('/etc/passwd')", {}, PV, refused("loadfile", "no files")),
    ("io.open", "return io.open('/etc/passwd'):read('a')", {}, PV, refused("io.open", "no files", "strict"), "strict"),
    ("io.open without a workspace", "return io.open('/etc/passwd'):read('a')", {}, PV, no_workspace("io.open")),
    ("io.popen", "return io.popen('id'):read('a')", {}, PV, refused("io.popen", "no processes")),
    ("io.lines", "for l in io.lines('/etc/passwd') do print(l) end", {}, PV, lambda r: r["stdout"] == "" and refused("io.lines", "no files", "strict")(r), "strict"),
    ("io.lines without a workspace", "for l in io.lines('/etc/passwd') do print(l) end", {}, PV, lambda r: r["stdout"] == "" and no_workspace("io.lines")(r)),
    ("io.stdout", "return io.stdout:write('escape')", {}, PV, refused("io.stdout", "no files")),
    ("os.execute", "return os.execute('id')", {}, PV, refused("os.execute", "no processes")),
    ("os.getenv", "return os.getenv('PATH')", {}, PV, refused("os.getenv", "no environment")),
    ("os.exit", "os.exit(0)", {}, PV, refused("os.exit", "no processes")),
    ("os.remove", "return os.remove('/tmp/x')", {}, PV, refused("os.remove", "no files")),
    ("debug.getregistry", "return debug.getregistry()", {}, PV, refused("debug", "no debug library")),
    ("debug.sethook", "debug.sethook() while true do end", {}, PV, refused("debug", "no debug library")),
    ("coroutine.close", "return coroutine.close(coroutine.create(print))", {}, PV, refused("coroutine.close", None)),
    ("collectgarbage.collect", "collectgarbage('collect')", {}, "runtime_error", None),
    ("collectgarbage.stop", "collectgarbage('stop') local t = {} for i=1,1e7 do t = {} end", {}, "runtime_error", None),
    ("globals via _G lookup", "return _G['pack'..'age'] == nil", {}, PV, refused("package", "no modules")),
    ("globals via rawget", "return rawget(_G, 'pack'..'age') == nil and rawget(_G['i'..'o'], 'open') == nil", {}, "ok", lambda r: r["value"] is True, "strict"),
    ("globals via rawget, files", "return rawget(_G, 'pack'..'age') == nil and rawget(_G['i'..'o'], 'po'..'pen') == nil", {}, "ok", lambda r: r["value"] is True),
    # -- bytecode (CVE-2015-4335 class) -----------------------------------------
    ("string.dump", "return string.dump(print)", {}, PV, refused("string.dump", "no bytecode")),
    ("binary chunk", "local f, e = load('\\27Lua\\84\\0\\25\\147') return {f == nil, e}", {}, "ok",
     lambda r: r["value"][0] is True and "binary chunk" in r["value"][1]),
    ("binary chunk mode b", "local f, e = load('\\27Lua\\84\\0', 'x', 'b') return {f == nil, e}", {}, "ok",
     lambda r: r["value"][0] is True and "binary chunk" in r["value"][1]),
    # -- metatables (mesecons#380, CVE-2025-46818 class) -------------------------
    ("string metatable", "return type(getmetatable(''))", {}, "ok", lambda r: r["value"] != "table"),
    ("string metatable write", "getmetatable('').__index = nil", {}, "runtime_error", None),
    ("setmetatable _G", "setmetatable(_G, nil) return require", {}, "runtime_error", lambda r: "protected metatable" in r["error"]["message"]),
    ("index loop", "local t = setmetatable({}, {}) getmetatable(t).__index = t return t.x", {}, "runtime_error",
     lambda r: "loop" in r["error"]["message"]),
    # -- address leaks -------------------------------------------------------------
    ("tostring pointer", "return tostring({}) .. tostring(print) .. tostring(coroutine.create(print))", {}, "ok",
     lambda r: "0x" not in r["value"]),
    ("print pointer", "print({}, print)", {}, "ok", lambda r: "0x" not in r["stdout"]),
    ("format %p", "return string.format('%p', {})", {}, "runtime_error", None),
    ("format %s table", "return string.format('%s', {})", {}, "ok", lambda r: "0x" not in r["value"]),
    # -- marshalling (Redis #11030 class) -----------------------------------------
    ("metamethod result", "return setmetatable({a = 1}, {__index = function() while true do end end, __pairs = function() while true do end end, __len = function() while true do end end})",
     {}, "ok", lambda r: r["value"] == {"a": 1}),
    ("tostring error object", "error(setmetatable({}, {__tostring = function() while true do end end}))", {}, "runtime_error",
     lambda r: r["error"]["type"] == "table"),
    ("huge error message", "error(string.rep('e', 1e7))", {}, "runtime_error", lambda r: len(r["error"]["message"]) < 100000),
    ("invalid utf8 output", "io.write('a\\0b\\255') return 'c\\255'", {}, "ok",
     lambda r: r["stdout"] == "a\x00b\ufffd" and r["value"] == "c\ufffd"),
    ("cycle", "local t = {} t.self = t return t", {}, "result_error", lambda r: "cycle" in r["error"]["message"]),
    # -- resource bombs in C (string.rep, pack, concat, unpack) --------------------
    ("string.rep 2^31", "return #string.rep('x', 2^31)", {}, "runtime_error", lambda r: "too large" in r["error"]["message"]),
    ("string.rep 2^30", "return #string.rep('x', 2^30)", {"memory_bytes": 16 << 20}, "memory_limit", None),
    ("string.pack width", "return #string.pack('c2000000000', '')", {"memory_bytes": 16 << 20}, "memory_limit", None),
    ("table.concat bomb", "local t = {} for i = 1, 64 do t[i] = string.rep('x', 1 << 20) end return #table.concat(t)", {"memory_bytes": 32 << 20}, "memory_limit", None),
    ("unpack bomb", "return select('#', table.unpack({}, 1, 1e8))", {}, "runtime_error", lambda r: "too many results" in r["error"]["message"]),
    ("gsub bomb", "local s = string.rep('x', 1 << 20) for i = 1, 10 do s = s:gsub('x', 'xx') end return #s", {"memory_bytes": 16 << 20}, "memory_limit", None),
    # -- recursion -----------------------------------------------------------------
    # 64 MiB runs out before Lua's 1M-slot stack does; a smaller depth shows the VM's own guard.
    ("lua recursion bomb", "local function f() return 1 + f() end return f()", {}, "memory_limit", None),
    ("lua stack overflow", "local function f(n) if n == 0 then return 0 end return 1 + f(n - 1) end return f(1e6)", {}, "runtime_error", lambda r: "stack overflow" in r["error"]["message"]),
    ("c stack overflow", "local function f() return pcall(f) end return f()", {}, None, None),
    ("parser depth", "local f, e = load(string.rep('(', 100000)) return e", {}, "ok", lambda r: "overflow" in r["value"] or "levels" in r["value"]),
    ("coroutine nesting", "local function nest(n) if n == 0 then return 0 end local co = coroutine.wrap(nest) return co(n - 1) end return nest(100000)", {"memory_bytes": 16 << 20}, None, None),
    # -- syntax ----------------------------------------------------------------------
    ("syntax error", "return 1 +", {}, "syntax_error", lambda r: r["error"]["line"] == 1),
    # -- warnings go to stderr, never to the protocol --------------------------------
    ("warn", "warn('@on') warn('hello')", {}, "ok", lambda r: "hello" in r["stderr"]),
]


@pytest.mark.parametrize("name,code,limits,kind,check,policy", [(*c, None)[:6] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_hostile(shared_host, name, code, limits, kind, check, policy):
    params = {"policy": policy} if policy else {}
    if limits:
        params["limits"] = limits
    r = shared_host.exec(code, **params)
    if kind == "ok":
        assert r["ok"] is True, r
    elif kind is not None:
        assert r["ok"] is False, r
        assert r["error"]["kind"] == kind, r
        assert r["error"]["layer"] == "language", r
    else:  # a VM crash is acceptable only as a contained verdict
        assert r["ok"] is True or r["error"]["kind"] in ("runtime_error", "memory_limit", "crashed"), r
    if check is not None:
        assert check(r), r
    assert_healthy(shared_host)


def test_no_state_leaks_between_execs(shared_host):
    r = shared_host.exec("leaked_global = 5 string.rep = nil math.pi = 3 getmetatable('').__index = nil return 1")
    # Whatever the first exec managed to change, a fresh worker sees none of it.
    r = shared_host.exec("return {leaked_global == nil, string.rep('a', 3), math.pi > 3.14}")
    assert r["value"] == [True, "aaa", True]


def test_random_differs_between_workers_unless_seeded(shared_host):
    a = shared_host.exec("return math.random(1, 1 << 40)")["value"]
    b = shared_host.exec("return math.random(1, 1 << 40)")["value"]
    assert a != b
    s1 = shared_host.exec("return {math.random(1, 1 << 40), math.random()}", seed=7)["value"]
    s2 = shared_host.exec("return {math.random(1, 1 << 40), math.random()}", seed=7)["value"]
    assert s1 == s2


def test_case_count():
    assert len(CASES) >= 30
