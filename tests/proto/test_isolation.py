"""Isolation levels. "process" (the default): a fresh process per exec.
"state" (Lua, by policy): a locked-down worker serves several one-shot execs,
each in a fresh lua_State built from the allowlist, and is replaced after
TP_STATE_MAX_EXECS execs and at once after any limit, crash, stop or refusal.
Each test proves what "state" keeps apart, and when a new process is used:
`isolation.worker_exec` of a result is 1 in a fresh process."""
import json
import os
import shutil
import tempfile
import time

import pytest

from conftest import Host, state_fresh, state_run, policy_dir

MAX_EXECS = 100  # TP_STATE_MAX_EXECS (common/spawn.h)
INVALID = -32602


@pytest.fixture(scope="module")
def pol_dir():
    with policy_dir("tp-iso-", {
            "st": {"extends": "standard", "isolation": "state"},
            "st-child": {"extends": "st"},
        }) as d:
        yield d


@pytest.fixture(scope="module")
def h(pol_dir):
    host = Host(args=("--policy-dir", pol_dir, "--policy", "st"))
    yield host
    host.close()


run, fresh = state_run, state_fresh


def test_each_exec_has_a_fresh_state_in_a_reused_worker(h):
    fresh(h)
    for i in range(2, 7):
        r = run(h, "x = (x or 0) + 1 return x")
        assert r["value"] == 1, r  # no global survives
        assert r["isolation"] == {"level": "state", "worker_exec": i}, r


@pytest.mark.parametrize("plant,probe", [
    ("string.upper = function() return 'pwned' end", "return ('a'):upper()"),
    ("string.format = nil _G.print = error", "print('x') return string.format('%d', 5)"),
    ("table.insert = nil", "local t = {} table.insert(t, 1) return #t"),
    ("math.pi = 3", "return math.pi"),
    ("local mt = getmetatable('') if type(mt) == 'table' then pcall(function() mt.__index = nil end) end "
     "string.len = function() return -1 end", "return ('abc'):len()"),
    ("package = {loaded = {x = 1}}", "return type(package)"),
    ("x = string.rep('secret', 1000)", "return x"),
    ("coroutine.wrap(function() secret = 1 coroutine.yield() end)()", "return secret"),
])
def test_what_one_exec_changes_the_next_does_not_see(h, plant, probe):
    """The probe reads in the reused worker exactly what it reads in a fresh process."""
    def seen(r):
        e = r["error"]
        return (r["ok"], r["value"], r["stdout"], e and (e["kind"], e["message"]))
    want = seen(run(h, probe, isolation="process"))
    fresh(h)
    r = run(h, plant + "\nreturn 'planted'")
    assert r["value"] == "planted" and r["isolation"]["worker_exec"] == 2, r
    r = run(h, probe)
    assert r["isolation"]["worker_exec"] == 3, r  # the same worker
    assert seen(r) == want, (r, want)


def test_math_random_is_reseeded_for_every_exec(h):
    fresh(h)
    code = "local t = {} for i = 1, 4 do t[i] = math.random(1, 1 << 30) end return t"
    a, b = run(h, code), run(h, code)
    assert a["isolation"]["worker_exec"] + 1 == b["isolation"]["worker_exec"]
    assert a["value"] != b["value"]
    # a seed gives the same stream in a reused worker as in a fresh process
    s1 = run(h, code, seed=7)
    s2 = run(h, code, seed=7)
    s3 = run(h, code, seed=7, isolation="process")
    assert s1["isolation"]["worker_exec"] > 1 and s3["isolation"] == {"level": "process", "worker_exec": 1}
    assert s1["value"] == s2["value"] == s3["value"]


def test_memory_peaks_are_each_execs_own(h):
    fresh(h)
    big = run(h, "local t = {} for i = 1, 200000 do t[i] = i end return #t")
    assert big["value"] == 200000 and big["usage"]["memory_peak_bytes"] > 2_000_000, big
    small = run(h, "return 1")
    assert small["isolation"]["worker_exec"] == 3
    assert small["usage"]["memory_peak_bytes"] < 200_000, small
    # and the memory limit is the exec's own, not what the last one left
    r = run(h, "local t = {} for i = 1, 200000 do t[i] = i end return #t",
            limits={"memory_bytes": 8 << 20})
    assert r["ok"] is True and r["isolation"]["worker_exec"] == 4, r


@pytest.mark.parametrize("code,limits,kind", [
    ("while true do end", {"cpu_ms": 50}, "cpu_limit"),
    ("local t = {} for i = 1, 1e8 do t[i] = i end", {"memory_bytes": 4 << 20}, "memory_limit"),
    ("for i = 1, 1e6 do print(i) end", {"output_bytes": 1000}, "output_limit"),
    ("for i = 1, 1e9 do end", {"instructions": 100000}, "instruction_limit"),
    ("return io.open('/etc/passwd')", None, "policy_violation"),
    ("while true do end", {"wall_ms": 200, "cpu_ms": 5000}, "timeout"),
])
def test_after_a_limit_or_refusal_the_next_exec_gets_a_new_process(h, code, limits, kind):
    fresh(h)
    assert run(h, "return 2")["isolation"]["worker_exec"] == 2
    r = run(h, code, **({"limits": limits} if limits else {}))
    assert r["error"]["kind"] == kind, r
    assert r["isolation"]["worker_exec"] == 3, r
    r = run(h, "return 3")
    assert r["value"] == 3 and r["isolation"] == {"level": "state", "worker_exec": 1}, r


@pytest.mark.parametrize("code,kind", [
    ("error('boom')", "runtime_error"),
    ("return +", "syntax_error"),
    ("local t = {} t.t = t return t", "result_error"),
])
def test_the_codes_own_errors_keep_the_worker(h, code, kind):
    fresh(h)
    r = run(h, code)
    assert r["error"]["kind"] == kind and r["isolation"]["worker_exec"] == 2, r
    assert run(h, "return 1")["isolation"]["worker_exec"] == 3


def test_no_code_of_an_exec_runs_after_it(h):
    """A finalizer would run when the state closes, after the reply, where the
    next exec may already wait: under "state", a metatable with __gc is refused
    (a policy_violation, so the worker is replaced); a __gc added to a metatable
    afterwards never marks its object (Lua's rule), so it never runs."""
    fresh(h)
    r = run(h, "leak = setmetatable({}, {__gc = function() print('leaked') end}) return 1")
    assert r["error"]["kind"] == "policy_violation" and r["error"]["layer"] == "language", r
    assert r["error"]["message"] == ('a __gc metamethod is not available under isolation "state" '
                                     '(policy st): nothing of an exec may run after it'), r
    assert run(h, "return 1")["isolation"]["worker_exec"] == 1
    r = run(h, "local mt = {} keep = setmetatable({}, mt)\n"
               "mt.__gc = function() print('leaked') while true do end end\n"
               "spin = setmetatable({}, {__close = function() print('leaked') end})\nreturn 2")
    assert r["ok"] is True and r["isolation"]["worker_exec"] == 2, r
    r = run(h, "return 3", limits={"wall_ms": 2000})
    assert r["ok"] is True and r["stdout"] == "" and r["stderr"] == "", r
    assert r["isolation"]["worker_exec"] == 3, r
    # a process-isolation exec of the same policy has the same rule
    r = run(h, "x = setmetatable({}, {__gc = print})", isolation="process")
    assert r["error"]["kind"] == "policy_violation", r


def test_a_state_worker_is_replaced_after_its_execs(h):
    fresh(h)
    seen = [run(h, "return 1")["isolation"]["worker_exec"] for _ in range(MAX_EXECS + 1)]
    assert seen == list(range(2, MAX_EXECS + 1)) + [1, 2], seen


def test_a_request_may_ask_process_of_a_state_policy(h):
    fresh(h)
    for _ in range(3):
        r = run(h, "x = (x or 0) + 1 return x", isolation="process")
        assert r["value"] == 1 and r["isolation"] == {"level": "process", "worker_exec": 1}, r
    r = run(h, "return 1")
    assert r["isolation"]["level"] == "state", r


@pytest.mark.parametrize("params,msg", [
    ({"policy": "standard", "isolation": "state"},
     "isolation \"state\" is looser than policy 'standard' gives (\"process\"): a request may ask "
     "\"process\" of a \"state\" policy, never the other way"),
    ({"lang": "python", "code": "1", "isolation": "state"},
     "isolation \"state\" is for Lua: Python 3.11 execs each get a fresh process"),
    ({"isolation": "thread"}, "'isolation' must be \"process\" or \"state\""),
    ({"isolation": 1}, "'isolation' must be \"process\" or \"state\""),
])
def test_isolation_may_only_be_tightened(h, params, msg):
    r = h.call("sandbox/exec", {"lang": "lua", "code": "return 1", **params})
    assert r["error"]["code"] == INVALID and r["error"]["message"] == msg, r


def test_sessions_and_process_policies_say_nothing_of_isolation(h, pol_dir):
    sid = h.call("sandbox/session/open", {"lang": "lua"})["result"]["session_id"]
    r = h.call("sandbox/exec", {"session_id": sid, "code": "return 1", "isolation": "state"})
    assert r["error"]["message"] == ("'isolation' is for one-shot execs: a session keeps its state "
                                     "from one exec to the next by design"), r
    r = h.call("sandbox/exec", {"session_id": sid, "code": "return 1"})["result"]
    assert "isolation" not in r and r["value"] == 1
    r = run(h, "return 1", policy="standard")
    assert "isolation" not in r and r["value"] == 1
    r = run(h, "return 1", policy="st-child")  # extends carries isolation
    assert r["isolation"]["level"] == "state", r


def test_python_under_a_state_policy_gets_a_process(h):
    for _ in range(2):
        r = h.call("sandbox/exec", {"lang": "python", "code": "seen = 'x' in dir()\nx = 1\nseen"})["result"]
        assert r["value"] is False and "isolation" not in r, r


def test_a_policy_without_the_language_layer_cannot_have_state(pol_dir):
    d = tempfile.mkdtemp(prefix="tp-iso-ko-", dir="/tmp")
    try:
        with open(os.path.join(d, "ko.json"), "w") as f:
            json.dump({"name": "ko", "extends": "kernel-only", "isolation": "state"}, f)
        import subprocess
        p = subprocess.run([os.environ.get("TIDEPOOL", "build/tidepool"), "policy", "check",
                            os.path.join(d, "ko.json")], capture_output=True, text=True)
        assert p.returncode == 2, p
        assert "isolation \"state\" needs the language layer: without it, code can corrupt its " \
               "worker's memory and reach the next exec in it" in p.stderr, p.stderr
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_back_to_back_execs_alternate_workers_and_share_nothing(h):
    """Sent without a pause, the next exec may come while the last one's worker
    is still building its fresh state: it takes another warm worker rather than
    wait. Whichever serves it, nothing carries over."""
    for i in range(60):
        h.send({"jsonrpc": "2.0", "id": f"b{i}", "method": "sandbox/exec",
                "params": {"lang": "lua", "code": "x = (x or 0) + 1 return x"}})
    rs = [h.reply(f"b{i}")["result"] for i in range(60)]
    assert all(r["value"] == 1 and r["isolation"]["level"] == "state" for r in rs), rs
    assert max(r["isolation"]["worker_exec"] for r in rs) > 1  # workers were reused
