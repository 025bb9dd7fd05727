"""Isolation "state" (Lua): an exec in a reused worker observes nothing of the
execs before it. Differential: each probe B is run in a fresh process
(`"isolation": "process"`) and again in a state worker right after a corpus of
"dirtying" execs A that the same worker served; what B shows (ok, value,
stdout, stderr, error; not usage) must be the same both ways.

Besides the Lua state itself (globals, libraries, the string metatable, the
random stream, all rebuilt per exec), the layer's C side keeps per-exec state:
the numbering of tostring's "table: #3", the warn() switch, the origin of
os.clock(). Those are what this file is about (lenv.c, struct exec_env)."""
import json
import os
import shutil
import tempfile
import time

import pytest

from conftest import Host, state_fresh, state_run


@pytest.fixture(scope="module")
def h():
    d = tempfile.mkdtemp(prefix="tp-streset-", dir="/tmp")
    os.chmod(d, 0o755)
    with open(os.path.join(d, "st.json"), "w") as f:
        json.dump({"name": "st", "extends": "standard", "isolation": "state"}, f)
    host = Host(args=("--policy-dir", d, "--policy", "st"))
    yield host
    host.close()
    shutil.rmtree(d, ignore_errors=True)


run, fresh = state_run, state_fresh


# Each leaves something behind if anything per process survives its state;
# none trips a limit or a refusal (either would replace the worker).
DIRTY = [
    "local t = {} for i = 1, 1000 do t[i] = tostring({}) end return #t",
    "local s = {} for i = 1, 50 do s[i] = tostring(function() end) .. tostring(coroutine.create(print)) end",
    "local t0 = os.clock() while os.clock() - t0 < 0.15 do end return os.clock() > 0.1",
    "warn('@on') warn('dirty')",
    "warn('@on') warn('a', 'b', 'c')",
    "x = 1 secret = 'dirty' _G.print = error string.upper = nil",
    "local ok = pcall(setmetatable, '', {}) local mt = getmetatable('') "
    "pcall(function() mt.__index = {} end) return ok",
    "for i = 1, 100 do math.random() end return math.random(1, 100)",
    "local co = coroutine.wrap(function() for i = 1, 10 do coroutine.yield(tostring({})) end end) "
    "for i = 1, 10 do co() end",
    "print(string.format('%s %s', {}, print)) io.write(tostring(io.write))",
    "pcall(collectgarbage, 'stop') pcall(collectgarbage, 'generational')",
    "local t = setmetatable({}, {__tostring = function() return 'x' end}) return tostring(t)",
]

PROBES = [
    ("return tostring({})", {}),
    ("return tostring(print)", {}),
    ("return tostring({}), tostring({}), tostring(string)", {}),
    ("return tostring(coroutine.create(print))", {}),
    ("return string.format('%s', {})", {}),
    ("print({}, print)", {}),
    ("error({})", {}),
    ("return os.clock() < 0.05", {}),
    ("return os.clock() >= 0", {}),
    ("warn('x')", {}),
    ("warn('x', 'y') warn('@on') warn('z')", {}),
    ("return type(secret), x, type(string.upper)", {}),
    ("print('p') return 1", {}),
    ("return getmetatable('') == false", {}),
    ("local n = 0 for _ in pairs(_G) do n = n + 1 end return n", {}),
    ("local t = {} for i = 1, 4 do t[i] = math.random(1, 1 << 30) end return t", {"seed": 7}),
    ("return collectgarbage('isrunning')", {}),
]


def seen(r):
    e = r["error"]
    return (r["ok"], r["value"], r["stdout"], r["stderr"], e and (e["kind"], e["message"]))


@pytest.mark.parametrize("probe,params", PROBES, ids=[p for p, _ in PROBES])
def test_a_probe_reads_the_same_after_dirty_execs_as_in_a_fresh_process(h, probe, params):
    want = run(h, probe, isolation="process", **params)
    assert want["isolation"] == {"level": "process", "worker_exec": 1}, want
    fresh(h)
    for n, code in enumerate(DIRTY, start=2):
        r = run(h, code)
        assert r["ok"] is True, (code, r)
        assert r["isolation"] == {"level": "state", "worker_exec": n}, (code, r)
    r = run(h, probe, **params)
    # the same worker, reused: it served every dirty exec before this one
    assert r["isolation"] == {"level": "state", "worker_exec": len(DIRTY) + 2}, r
    assert seen(r) == seen(want), (r, want)


@pytest.mark.parametrize("probe,params", PROBES, ids=[p for p, _ in PROBES])
def test_a_probe_reads_the_same_after_itself(h, probe, params):
    """B after B: what a probe changes, its next run does not see either."""
    want = run(h, probe, isolation="process", **params)
    fresh(h)
    for n in range(2, 5):
        r = run(h, probe, **params)
        assert r["isolation"] == {"level": "state", "worker_exec": n}, r
        assert seen(r) == seen(want), (r, want)


def test_the_warn_switch_and_ids_are_each_execs_own(h):
    fresh(h)
    r = run(h, "warn('@on') warn('one') return tostring({})")
    assert r["stderr"] == "Lua warning: one\n" and r["value"] == "table: #1", r
    r = run(h, "warn('two') return tostring({}), tostring({})")
    assert r["isolation"]["worker_exec"] == 3, r
    assert r["stderr"] == "" and r["value"] == ["table: #1", "table: #2"], r


def test_a_session_keeps_its_numbering_warn_switch_and_clock():
    """A session's execs share one state: what the environment keeps for it runs on."""
    h = Host()
    try:
        sid = h.call("sandbox/session/open", {"lang": "lua"})["result"]["session_id"]

        def ex(code):
            r = h.call("sandbox/exec", {"session_id": sid, "code": code})["result"]
            assert r["ok"] is True, r
            return r

        r = ex("t1 = {} warn('@on') return tostring(t1), tostring({}), os.clock() < 0.05")
        assert r["value"] == ["table: #1", "table: #2", True] and r["stderr"] == "", r
        r = ex("local c = os.clock() while os.clock() - c < 0.1 do end warn('w') "
               "return tostring(t1), tostring({}), os.clock() >= 0.1")
        assert r["value"] == ["table: #1", "table: #3", True], r
        assert r["stderr"] == "Lua warning: w\n", r
    finally:
        h.close()
