"""Every limit, hit on purpose: exact kind, layer and figures; then the host goes on."""
import pytest

from conftest import assert_healthy


def err(r):
    assert r["ok"] is False, r
    return r["error"]


def test_memory_string_rep_bomb(shared_host):
    e = err(shared_host.exec("local s = string.rep('x', 1 << 20) return #string.rep(s, 1000)",
                             limits={"memory_bytes": 8 << 20}))
    assert (e["kind"], e["layer"]) == ("memory_limit", "language")
    assert e["limit"]["name"] == "memory_bytes"
    assert e["limit"]["limit"] == 8 << 20
    assert e["limit"]["used"] > 8 << 20
    assert_healthy(shared_host)


def test_memory_table_bomb(shared_host):
    r = shared_host.exec("local t = {} for i = 1, 1e9 do t[i] = {i} end", limits={"memory_bytes": 4 << 20})
    e = err(r)
    assert e["kind"] == "memory_limit"
    assert e["limit"]["limit"] == 4 << 20
    assert r["usage"]["memory_peak_bytes"] <= 4 << 20
    assert_healthy(shared_host)


def test_memory_caught_by_pcall_still_ends_the_run(shared_host):
    r = shared_host.exec("local ok = pcall(string.rep, 'x', 1 << 30) print('after', ok) return 'survived'",
                         limits={"memory_bytes": 4 << 20})
    assert err(r)["kind"] == "memory_limit"
    assert r["value"] is None


def test_instructions_exact(shared_host):
    r = shared_host.exec("while true do end", limits={"instructions": 1000})
    e = err(r)
    assert (e["kind"], e["layer"]) == ("instruction_limit", "language")
    assert e["limit"] == {"name": "instructions", "limit": 1000, "used": 1000}
    assert r["usage"]["instructions"] == 1000


@pytest.mark.parametrize("code", [
    "while true do pcall(function() while true do end end) end",
    "while true do xpcall(function() while true do end end, function(m) return m end) end",
    "while true do local co = coroutine.create(function() while true do end end) coroutine.resume(co) end",
    "while true do pcall(coroutine.wrap(function() while true do end end)) end",
    "local function f() return pcall(f) end while true do f() end",
    "while true do local ok, e = pcall(error, 'x') end",
])
def test_instruction_limit_cannot_be_swallowed(shared_host, code):
    r = shared_host.exec(code, limits={"instructions": 100000})
    e = err(r)
    assert e["kind"] == "instruction_limit", r
    assert e["limit"]["limit"] == 100000
    assert_healthy(shared_host)


@pytest.mark.parametrize("code", [
    "while true do end",
    "while true do pcall(function() while true do end end) end",
    "coroutine.wrap(function() while true do end end)()",
    "while true do local co = coroutine.create(function() while true do end end) coroutine.resume(co) end",
])
def test_cpu_limit_only(shared_host, code):
    r = shared_host.exec(code, limits={"cpu_ms": 200})
    e = err(r)
    assert e["kind"] == "cpu_limit", r
    assert e["limit"]["name"] == "cpu_ms"
    assert e["limit"]["limit"] == 200
    assert 200 <= e["limit"]["used"] < 2000
    assert_healthy(shared_host)


def test_cpu_limit_inside_one_c_call_is_killed_after_grace(shared_host):
    # A catastrophic pattern runs inside string.find: no hook can fire there.
    r = shared_host.exec("print('before') return string.find(string.rep('a', 40), string.rep('a?', 40) .. string.rep('a', 40) .. 'b')",
                         limits={"cpu_ms": 300})
    e = err(r)
    assert e["kind"] == "cpu_limit", r
    assert e["layer"] in ("process", "kernel")
    assert r["stdout"] == "before\n"  # partial output survives the kill
    assert_healthy(shared_host)


def test_wall_timeout_keeps_partial_output(shared_host):
    # Waiting without CPU: only the host's clock can stop it. os.clock busy
    # waits would trip cpu_ms, so give CPU room and a small wall budget.
    r = shared_host.exec("print('started') while true do end", limits={"wall_ms": 300, "cpu_ms": 5000})
    e = err(r)
    assert (e["kind"], e["layer"]) == ("timeout", "host")
    assert e["limit"]["name"] == "wall_ms"
    assert e["limit"]["limit"] == 300
    assert r["stdout"] == "started\n"
    assert r["usage"]["wall_ms"] >= 300
    assert_healthy(shared_host)


def test_output_limit(shared_host):
    r = shared_host.exec("while true do io.write('0123456789') end", limits={"output_bytes": 1000})
    e = err(r)
    assert (e["kind"], e["layer"]) == ("output_limit", "language")
    assert e["limit"]["name"] == "output_bytes"
    assert e["limit"]["limit"] == 1000
    assert r["stdout"] == "0123456789" * 100
    assert r["truncated"]["stdout"] is True


def test_output_limit_swallowed_by_pcall_still_stops(shared_host):
    r = shared_host.exec("while true do pcall(print, string.rep('y', 100)) end", limits={"output_bytes": 500})
    assert err(r)["kind"] == "output_limit"
    assert len(r["stdout"]) == 500


def test_result_size_limit(shared_host):
    r = shared_host.exec("return string.rep('z', 5000)", limits={"result_bytes": 1000})
    e = err(r)
    assert e["kind"] == "output_limit"
    assert e["limit"]["name"] == "result_bytes"
    assert e["limit"]["limit"] == 1000
    r = shared_host.exec("return string.rep('z', 990)", limits={"result_bytes": 1000})
    assert r["ok"] is True and len(r["value"]) == 990


def test_result_depth_limit(shared_host):
    deep = "local t = {} local c = t for i = 1, 100 do c[1] = {} c = c[1] end return t"
    e = err(shared_host.exec(deep, limits={"result_depth": 10}))
    assert e["kind"] == "output_limit"
    assert e["limit"]["name"] == "result_depth"
    assert e["limit"]["limit"] == 10
    ok = shared_host.exec("return {{{1}}}", limits={"result_depth": 3})
    assert ok["ok"] is True and ok["value"] == [[[1]]]


def test_gc_finalizer_cannot_outlive_the_limit(shared_host):
    code = """
    setmetatable({}, {__gc = function() while true do end end})
    local t = {}
    for i = 1, 1e9 do t[#t+1] = {} end
    """
    r = shared_host.exec(code, limits={"memory_bytes": 4 << 20, "cpu_ms": 2000})
    assert err(r)["kind"] in ("memory_limit", "cpu_limit")
    # The finalizer spins until the CPU budget (2 s) and its grace end it: bound
    # the CPU it burnt, not the wall clock, which on a busy 2-CPU machine is a
    # multiple of it (the default wall_ms limit still bounds the wait).
    assert r["usage"]["cpu_ms"] < 5000
    assert_healthy(shared_host)


def test_close_handler_cannot_outlive_the_limit(shared_host):
    code = """
    local guard <close> = setmetatable({}, {__close = function() while true do end end})
    while true do end
    """
    r = shared_host.exec(code, limits={"instructions": 10000})
    e = err(r)
    assert e["kind"] == "instruction_limit"
    assert_healthy(shared_host)

