"""Sessions end to end: state that persists and stays private, the soft stops a
session survives and the kills it does not, every limit of a session's life
(idle, lifetime, execs, how many open, memory, rate), and the errors for a
session that is unknown or has ended. Every verdict is checked by kind and value."""
import json
import os
import shutil
import tempfile
import time

import pytest

from conftest import Host, children_of, dying, needs_landlock, proc_read, status_field, wait_for, said

NO_SESSION = -32002
BUSY = -32001
INVALID_PARAMS = -32602


@pytest.fixture(scope="module")
def h():
    host = Host()
    yield host
    host.close()


@pytest.fixture
def pol_dir():
    d = tempfile.mkdtemp(prefix="tp-sess-", dir="/tmp")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def policy_host(d, name, session=None, rate=None, **extra):
    body = {"name": name, "extends": "standard", **extra}
    if session:
        body["session"] = session
    if rate:
        body["rate"] = rate
    path = os.path.join(d, name + ".json")
    with open(path, "w") as f:
        json.dump(body, f)
    return Host(args=("--policy", path))


def open_session(h, lang="lua", **params):
    r = h.call("sandbox/session/open", {"lang": lang, **params})
    assert "result" in r, r
    return r["result"]["session_id"]


def sx(h, sid, code, **params):
    """An exec in session sid; the whole result."""
    r = h.call("sandbox/exec", {"session_id": sid, "code": code, **params}, timeout=30)
    assert "result" in r, r
    assert r["result"]["session_id"] == sid
    return r["result"]


def ok(res, value):
    assert res["ok"] is True, res
    assert res["value"] == value
    assert res["session_lost"] is False


def rpc_error(r, code):
    assert "error" in r, r
    assert r["error"]["code"] == code, r
    return said(r["error"])


# -- state ------------------------------------------------------------------------------

def test_open_says_what_the_session_is(h):
    r = h.call("sandbox/session/open", {"lang": "python", "limits": {"cpu_ms": 1000}})["result"]
    assert r["session_id"].startswith("s-") and len(r["session_id"]) == 18
    assert r["lang"] == "python" and r["policy"] == "standard"
    assert r["limits"]["cpu_ms"] == 1000
    assert r["limits"]["memory_bytes"] == 67108864  # standard's session.memory_bytes
    assert r["expires"] == {"idle_ms": 600000, "lifetime_ms": 3600000, "max_execs": 1000}
    h.call("sandbox/session/close", {"session_id": r["session_id"]})


@pytest.mark.parametrize("lang,first,second,value", [
    ("lua", "x = 41", "return x + 1", 42),
    ("lua", "t = {} function add(v) t[#t + 1] = v end add(1)", "add(2) return t", [1, 2]),
    ("python", "x = 41", "x + 1", 42),
    ("python", "import math\ndef f(v):\n    return math.floor(v)\nclass C:\n    n = 3",
     "f(2.5) + C.n", 5),
])
def test_state_persists_between_execs(h, lang, first, second, value):
    sid = open_session(h, lang)
    ok(sx(h, sid, first), None)
    ok(sx(h, sid, second), value)
    h.call("sandbox/session/close", {"session_id": sid})


@pytest.mark.parametrize("lang,set_a,set_b,get,missing", [
    ("lua", "x = 'a'", "x = 'b'", "return x", "return x == nil"),
    ("python", "x = 'a'", "x = 'b'", "x",
     "try:\n    x\n    r = False\nexcept NameError:\n    r = True\nr"),
])
def test_sessions_are_private(h, lang, set_a, set_b, get, missing):
    a, b = open_session(h, lang), open_session(h, lang)
    sx(h, a, set_a)
    sx(h, b, set_b)
    ok(sx(h, a, get), "a")
    ok(sx(h, b, get), "b")
    one_shot = h.exec(missing, lang=lang)  # a one-shot exec sees neither
    assert one_shot["ok"] is True and one_shot["value"] is True, one_shot
    assert "session_id" not in one_shot
    for s in (a, b):
        h.call("sandbox/session/close", {"session_id": s})


def test_inputs_and_seed_per_exec(h):
    sid = open_session(h, "python")
    ok(sx(h, sid, "n * 2", inputs={"n": 21}), 42)
    ok(sx(h, sid, "n", inputs={"n": 7}), 7)  # inputs of a later exec replace the name
    a = sx(h, sid, "import random\nrandom.random()", seed=5)["value"]
    assert sx(h, sid, "random.random()", seed=5)["value"] == a
    h.call("sandbox/session/close", {"session_id": sid})


def test_a_seed_draws_what_cpython_draws_for_it(h):
    """A seed is random.seed(seed) on the module's generator, done in C
    (pysandbox.c's reseed): the draws are CPython's for that seed, and a gauss()
    pair half used by an earlier exec is dropped, as random.seed drops it."""
    import random
    sid = open_session(h, "python")
    code = "import random\n[random.random(), random.gauss(0, 1), random.randrange(1 << 40)]"
    for seed in (5, (1 << 62) + 12345, (1 << 63) - 1):
        r = random.Random(seed)
        want = [r.random(), r.gauss(0, 1), r.randrange(1 << 40)]
        assert sx(h, sid, "import random\nrandom.gauss(0, 1)")["ok"] is True  # half a pair left
        assert sx(h, sid, code, seed=seed)["value"] == want, seed
        assert h.exec(code, lang="python", seed=seed)["value"] == want, seed
    h.call("sandbox/session/close", {"session_id": sid})


def test_python_workers_never_share_a_random_stream(h):
    """Each one-shot exec is a fresh worker, reseeded from the host's entropy
    (the zygote dropped random's own after-fork reseed: pyfork.c): no two of
    them draw the same numbers."""
    code = "import random\n[random.getrandbits(62), random.random()]"
    draws = [tuple(h.exec(code, lang="python")["value"]) for _ in range(6)]
    assert len(set(d[0] for d in draws)) == 6 and len(set(d[1] for d in draws)) == 6, draws


def test_execs_queue_in_order(h):
    sid = open_session(h, "lua")
    ids = []
    for i, code in enumerate(["n = 1", "n = n * 10", "n = n + 2", "return n"]):
        h.next_id += 1
        ids.append(h.next_id)
        h.send({"jsonrpc": "2.0", "id": h.next_id, "method": "sandbox/exec",
                "params": {"session_id": sid, "code": code}})
    results = [h.reply(i)["result"] for i in ids]
    assert [r["ok"] for r in results] == [True] * 4
    assert results[3]["value"] == 12
    h.call("sandbox/session/close", {"session_id": sid})


# -- soft stops keep the session; kills end it ------------------------------------------

SOFT = [
    ("lua", "while true do end", {"cpu_ms": 200}, "cpu_limit"),
    ("lua", "while true do end", {"instructions": 100000}, "instruction_limit"),
    ("lua", "local t = {} for i = 1, 1e8 do t[i] = i end", {"memory_bytes": 8 << 20}, "memory_limit"),
    ("lua", "for i = 1, 1e6 do print(i) end", {"output_bytes": 1000}, "output_limit"),
    ("lua", "error('boom')", {}, "runtime_error"),
    ("lua", "return os.execute('id')", {}, "policy_violation"),
    ("lua", "return (", {}, "syntax_error"),
    ("python", "while True: pass", {"cpu_ms": 200}, "cpu_limit"),
    ("python", "x = [0] * (1 << 40)", {}, "memory_limit"),
    ("python", "1/0", {}, "runtime_error"),
    ("python", "import socket", {}, "policy_violation"),
    # standard's sessions have a workspace: a path outside it is refused
    ("python", "open('/etc/passwd')", {}, "policy_violation"),
    ("lua", "return io.open('/etc/passwd')", {}, "policy_violation"),
    # a policy without files (strict: no workspace) refuses os itself
    ("python", "import os", {}, "policy_violation", "strict"),
]


@pytest.mark.parametrize("lang,code,limits,kind,policy", [(*s, "standard")[:5] for s in SOFT])
def test_soft_stops_keep_the_session(h, lang, code, limits, kind, policy):
    sid = open_session(h, lang, policy=policy)
    sx(h, sid, "kept = 5" if lang == "python" else "kept = 5")
    r = sx(h, sid, code, limits=limits)
    assert r["ok"] is False and r["error"]["kind"] == kind, r
    assert r["session_lost"] is False
    ok(sx(h, sid, "kept" if lang == "python" else "return kept"), 5)
    # and the next exec's budget is whole again
    ok(sx(h, sid, "sum(range(1000))" if lang == "python" else
          "local s = 0 for i = 1, 999 do s = s + i end return s"), 499500)
    h.call("sandbox/session/close", {"session_id": sid})


def test_a_timeout_is_a_soft_stop_when_the_code_yields(h):
    sid = open_session(h, "python")
    sx(h, sid, "x = 1")
    r = sx(h, sid, "print('so far')\nwhile True: pass", limits={"wall_ms": 300})
    assert r["ok"] is False and r["error"]["kind"] == "timeout" and r["error"]["layer"] == "host", r
    assert r["error"]["limit"]["name"] == "wall_ms" and r["error"]["limit"]["limit"] == 300
    assert r["stdout"] == "so far\n"
    assert r["session_lost"] is False
    ok(sx(h, sid, "x"), 1)
    h.call("sandbox/session/close", {"session_id": sid})


@pytest.mark.parametrize("lang,code", [
    # a C call no check reaches in time: killed after the grace period
    ("python", "x = 2\nsum(range(10 ** 12))"),
    # Lua runs finalizers with hooks off
    ("lua", "x = 2 setmetatable({}, {__gc = function() while true do end end}) "
            "for i = 1, 1e7 do local t = {i} end"),
])
def test_a_kill_ends_the_session_and_says_so(h, lang, code):
    sid = open_session(h, lang)
    sx(h, sid, "x = 1")
    t = time.monotonic()
    r = sx(h, sid, code, limits={"wall_ms": 300, "cpu_ms": 5000})
    assert r["ok"] is False and r["error"]["kind"] == "timeout", r
    assert r["session_lost"] is True
    assert r["usage"]["cpu_ms"] < 2000  # this exec's share, not the worker's life
    msg = rpc_error(h.call("sandbox/exec", {"session_id": sid, "code": "x"}), NO_SESSION)
    assert msg == f"session '{sid}' has ended: its worker was killed (signal 9)"
    assert all(s["session_id"] != sid for s in h.call("sandbox/session/list")["result"]["sessions"])


def test_finalizers_left_behind_run_under_the_next_exec(h):
    sid = open_session(h, "lua")
    sx(h, sid, "setmetatable({}, {__gc = function() n = (n or 0) + 1 end}) x = 1")
    ok(sx(h, sid, "return n"), None)  # no collection ran between the execs
    churn = "for i = 1, 300000 do local t = {i} end "  # allocation drives the collector
    ok(sx(h, sid, churn + "return n"), 1)
    # Lua runs finalizers with hooks off: a loop in one is stopped by the CPU
    # timer's grace period, which kills the worker, so the session ends.
    sx(h, sid, "setmetatable({}, {__gc = function() while true do end end})")
    r = sx(h, sid, churn + "return x", limits={"cpu_ms": 200})
    assert r["ok"] is False and r["error"]["kind"] == "cpu_limit", r
    assert r["session_lost"] is True
    msg = rpc_error(h.call("sandbox/exec", {"session_id": sid, "code": "return x"}), NO_SESSION)
    assert msg == f"session '{sid}' has ended: a limit tripped and its code did not stop " \
                  "within the grace period, so its worker ended itself"


def test_coroutine_carried_over_is_counted(h):
    sid = open_session(h, "lua")
    sx(h, sid, "co = coroutine.wrap(function() while true do coroutine.yield() end end)")
    r = sx(h, sid, "while true do co() end", limits={"instructions": 50000})
    assert r["ok"] is False and r["error"]["kind"] == "instruction_limit", r
    assert r["error"]["limit"]["limit"] == 50000
    h.call("sandbox/session/close", {"session_id": sid})


def test_memory_is_held_per_session(h):
    sid = open_session(h, "python", limits={"memory_bytes": 48 << 20})
    ok(sx(h, sid, "a = bytearray(30 << 20)\nlen(a)"), 30 << 20)
    r = sx(h, sid, "b = bytearray(30 << 20)")
    assert r["ok"] is False and r["error"]["kind"] == "memory_limit", r
    assert r["error"]["limit"]["limit"] == 48 << 20
    ok(sx(h, sid, "del a\nb = bytearray(30 << 20)\nlen(b)"), 30 << 20)
    h.call("sandbox/session/close", {"session_id": sid})


def test_exec_limits_lower_the_sessions(h):
    sid = open_session(h, "lua", limits={"cpu_ms": 1000})
    msg = rpc_error(h.call("sandbox/exec", {"session_id": sid, "code": "return 1",
                                            "limits": {"cpu_ms": 2000}}), INVALID_PARAMS)
    assert "cpu_ms" in msg and msg.endswith("(the session's limits)"), msg
    ok(sx(h, sid, "return 1", limits={"cpu_ms": 500}), 1)
    h.call("sandbox/session/close", {"session_id": sid})


# -- bad requests -------------------------------------------------------------------------

def test_unknown_session(h):
    msg = rpc_error(h.call("sandbox/exec", {"session_id": "s-0000000000000000", "code": "1"}),
                    NO_SESSION)
    assert msg.startswith("unknown session 's-0000000000000000'"), msg
    rpc_error(h.call("sandbox/session/close", {"session_id": "nope"}), NO_SESSION)


@pytest.mark.parametrize("params,text", [
    ({"session_id": 5, "code": "1"}, "'session_id' must be a string"),
    ({"session_id": None, "code": "return 1"}, None),  # null: a one-shot exec
])
def test_session_id_type(h, params, text):
    r = h.call("sandbox/exec", {"lang": "lua", **params})
    if text is None:
        assert r["result"]["ok"] is True and "session_id" not in r["result"]
    else:
        assert text in rpc_error(r, INVALID_PARAMS)


def test_a_session_fixes_language_and_policy(h):
    sid = open_session(h, "lua")
    m = rpc_error(h.call("sandbox/exec", {"session_id": sid, "lang": "python", "code": "1"}),
                  INVALID_PARAMS)
    assert m == "'lang' must be \"lua\", the session's language"
    m = rpc_error(h.call("sandbox/exec", {"session_id": sid, "policy": "strict", "code": "1"}),
                  INVALID_PARAMS)
    assert m == "'policy' must be \"standard\", the session's policy"
    ok(sx(h, sid, "return 1", lang="lua", policy="standard"), 1)
    h.call("sandbox/session/close", {"session_id": sid})


@pytest.mark.parametrize("params,text", [
    (None, "params must be an object with 'lang'"),
    ({}, "'lang' must be"),
    ({"lang": "lua", "code": "1"}, "unknown parameter 'code'"),
    ({"lang": "lua", "policy": "nope"}, "unknown policy 'nope'"),
    ({"lang": "lua", "limits": {"cpu_ms": 10 ** 9}}, "cpu_ms"),
])
def test_open_refuses_bad_params(h, params, text):
    assert text in rpc_error(h.call("sandbox/session/open", params), INVALID_PARAMS)


def test_close_and_list_params(h):
    assert rpc_error(h.call("sandbox/session/close", {}), INVALID_PARAMS) == \
        'params must be {"session_id": a session\'s id}'
    assert rpc_error(h.call("sandbox/session/list", {"x": 1}), INVALID_PARAMS) == \
        "params must be {} or absent"


def test_list_and_close(h):
    sid = open_session(h, "python")
    sx(h, sid, "a = 1")
    sx(h, sid, "a += 1")
    s = [x for x in h.call("sandbox/session/list")["result"]["sessions"] if x["session_id"] == sid]
    assert len(s) == 1
    s = s[0]
    assert (s["lang"], s["policy"], s["execs"], s["running"], s["queued"]) == \
        ("python", "standard", 2, False, 0)
    assert 0 <= s["idle_ms"] <= s["age_ms"] and s["memory_bytes"] > 0
    r = h.call("sandbox/session/close", {"session_id": sid})["result"]
    assert r == {"session_id": sid, "closed": True, "execs": 2}
    assert rpc_error(h.call("sandbox/exec", {"session_id": sid, "code": "a"}), NO_SESSION) == \
        f"session '{sid}' has ended: closed by the client"


def start(h, params):
    h.next_id += 1
    h.send({"jsonrpc": "2.0", "id": h.next_id, "method": "sandbox/exec", "params": params})
    return h.next_id


def cancel(h, rid):
    h.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid}})


@pytest.mark.parametrize("lang,code,get", [
    ("lua", "print('so far') while true do end", "return x"),
    ("python", "print('so far')\nwhile True: pass", "x"),
])
def test_cancel_in_a_session_keeps_it(h, lang, code, get):
    sid = open_session(h, lang)
    sx(h, sid, "x = 7")
    rid = start(h, {"session_id": sid, "code": code})
    time.sleep(0.3)
    cancel(h, rid)
    r = h.reply(rid)["result"]
    assert r["ok"] is False, r
    assert r["error"] == {"kind": "cancelled", "layer": "host", "type": None,
                          "message": "cancelled by the client (notifications/cancelled)",
                          "traceback": None, "line": None, "column": None,
                          "rule": None, "policy": "standard"}
    assert r["stdout"] == "so far\n" and r["session_lost"] is False
    ok(sx(h, sid, get), 7)
    h.call("sandbox/session/close", {"session_id": sid})


def test_cancel_of_a_queued_exec_never_runs_it(h):
    sid = open_session(h, "lua")
    sx(h, sid, "n = 0")
    first = start(h, {"session_id": sid, "code": "local t = os.clock() while os.clock() - t < 0.3 do end n = n + 1"})
    second = start(h, {"session_id": sid, "code": "n = n + 100"})
    cancel(h, second)
    r2 = h.reply(second)["result"]
    assert r2["error"]["kind"] == "cancelled" and r2["usage"]["wall_ms"] == 0, r2
    assert r2["session_lost"] is False
    assert h.reply(first)["result"]["ok"] is True
    ok(sx(h, sid, "return n"), 1)  # the queued exec never ran
    h.call("sandbox/session/close", {"session_id": sid})


def test_a_cancel_of_a_fresh_sessions_first_exec_keeps_it(h):
    # The stop may be asked before the zygote has told the host the new worker's
    # pid (the page's flag is set; the signal waits for the pid), and the worker
    # may answer "cancelled" before that pid is read: a stop the host asked for,
    # not a broken worker (it lost the session in ~1 round of 20).
    for i in range(40):
        sid = open_session(h, "lua")
        rid = start(h, {"session_id": sid, "code": "return 7"})
        cancel(h, rid)
        r = h.reply(rid)["result"]
        assert (r["ok"] is True and r["value"] == 7) or r["error"]["kind"] == "cancelled", r
        assert r["session_lost"] is False, (i, r)
        ok(sx(h, sid, "return 1"), 1)
        h.call("sandbox/session/close", {"session_id": sid})


def test_cancel_racing_completion_gets_one_answer(h):
    sid = open_session(h, "lua")
    for i in range(20):
        rid = start(h, {"session_id": sid, "code": f"x = {i} return x"})
        cancel(h, rid)
        r = h.reply(rid)["result"]
        assert r["ok"] is True and r["value"] == i or r["error"]["kind"] == "cancelled", r
        assert r["session_lost"] is False, r
    ok(sx(h, sid, "return 1"), 1)
    # no second answer to any of them
    h.send({"jsonrpc": "2.0", "id": "probe", "method": "ping"})
    assert h.reply("probe")["result"] == {}
    assert not h.pending, h.pending
    h.call("sandbox/session/close", {"session_id": sid})


def test_close_while_running_cancels_the_exec(h):
    sid = open_session(h, "lua")
    h.next_id += 1
    eid = h.next_id
    h.send({"jsonrpc": "2.0", "id": eid, "method": "sandbox/exec",
            "params": {"session_id": sid, "code": "print('started') while true do end"}})
    time.sleep(0.3)
    assert h.call("sandbox/session/close", {"session_id": sid})["result"]["closed"] is True
    r = h.reply(eid)["result"]
    assert r["error"]["kind"] == "cancelled" and r["error"]["layer"] == "host", r
    assert r["session_lost"] is True


def test_a_session_worker_is_locked_down(h):
    sid = open_session(h, "lua")
    sx(h, sid, "x = 1")
    workers = [p for p in h.children()
               if (proc_read(p, "comm", "r") or "").strip() == "tp-worker" and not dying(p)]
    # the session's worker is alive between execs, and confined like any worker
    assert workers
    for p in workers:
        assert status_field(p, "NoNewPrivs") == "1"
        assert status_field(p, "Seccomp") == "2"
    h.call("sandbox/session/close", {"session_id": sid})


# -- the limits of a session's life ------------------------------------------------------

def test_idle_expiry(pol_dir):
    h = policy_host(pol_dir, "idle", session={"idle_ms": 1000})
    try:
        sid = open_session(h)
        sx(h, sid, "x = 1")
        time.sleep(1.5)
        assert rpc_error(h.call("sandbox/exec", {"session_id": sid, "code": "return x"}),
                         NO_SESSION) == \
            f"session '{sid}' has ended: it was idle for 1000 ms (session.idle_ms of policy 'idle')"
        assert h.call("sandbox/session/list")["result"]["sessions"] == []
    finally:
        h.close()


def test_lifetime_expiry(pol_dir):
    h = policy_host(pol_dir, "life", session={"lifetime_ms": 1500})
    try:
        sid = open_session(h)
        for _ in range(3):  # activity does not extend a lifetime
            sx(h, sid, "x = 1")
            time.sleep(0.3)
        time.sleep(1.0)
        msg = rpc_error(h.call("sandbox/exec", {"session_id": sid, "code": "return x"}),
                        NO_SESSION)
        assert msg.endswith("1500 ms (session.lifetime_ms of policy 'life')"), msg
    finally:
        h.close()


def test_max_execs(pol_dir):
    h = policy_host(pol_dir, "few", session={"max_execs": 2})
    try:
        sid = open_session(h)
        ok(sx(h, sid, "x = 1"), None)
        ok(sx(h, sid, "return x"), 1)
        msg = rpc_error(h.call("sandbox/exec", {"session_id": sid, "code": "return x"}),
                        NO_SESSION)
        assert msg == f"session '{sid}' has ended: it has had its 2 execs " \
                      "(session.max_execs of policy 'few')"
    finally:
        h.close()


def test_max_sessions(pol_dir):
    h = policy_host(pol_dir, "two", session={"max_sessions": 2})
    try:
        a, b = open_session(h), open_session(h)
        msg = rpc_error(h.call("sandbox/session/open", {"lang": "python"}), BUSY)
        assert msg == "policy 'two' allows 2 open sessions and they are all open; " \
                      "close one (sandbox/session/close)"
        # refused means refused: no third worker was started
        h.call("sandbox/session/close", {"session_id": a})
        c = open_session(h)
        ok(sx(h, c, "return 3"), 3)
        ok(sx(h, b, "return 2"), 2)
    finally:
        h.close()


def test_no_sessions_policy(pol_dir):
    h = policy_host(pol_dir, "none", session={"max_sessions": 0})
    try:
        assert rpc_error(h.call("sandbox/session/open", {"lang": "lua"}), INVALID_PARAMS) == \
            "policy 'none' allows no sessions (session.max_sessions is 0)"
        assert h.call("sandbox/session/list")["result"]["sessions"] == []
    finally:
        h.close()


def test_session_rate(pol_dir):
    h = policy_host(pol_dir, "slow", rate={"session_per_minute": 2})
    try:
        sid = open_session(h)
        ok(sx(h, sid, "return 1"), 1)
        ok(sx(h, sid, "return 2"), 2)
        r = sx(h, sid, "return 3")
        assert r["ok"] is False and r["error"]["kind"] == "rate_limit", r
        assert said(r["error"]).startswith(
            "rate limit: 2 execs per minute in one session under policy 'slow'; retry in ")
        assert 0 < r["error"]["retry_after_ms"] <= 30000
        other = open_session(h)  # the bucket is per session
        ok(sx(h, other, "return 4"), 4)
    finally:
        h.close()


def test_eof_ends_sessions_at_once():
    h = Host()
    sid = open_session(h, "python")
    sx(h, sid, "x = 1")
    kids = h.children()
    t = time.monotonic()
    h.proc.stdin.close()
    assert h.proc.wait(timeout=10) == 0
    assert time.monotonic() - t < 5
    wait_for(lambda: all(dying(p) for p in kids), 10, "the session's worker outlived its host")


# -- MCP: state without knowing tidepool -----------------------------------------------

def tool(h, name, args):
    r = h.call("tools/call", {"name": name, "arguments": args})
    assert "result" in r, r
    return r["result"]


def test_mcp_tools_say_how_to_keep_state(h):
    tools = {t["name"]: t for t in h.call("tools/list")["result"]["tools"]}
    for name in ("run_lua", "run_python"):
        t = tools[name]
        assert t["inputSchema"]["properties"]["session"]["type"] == "string"
        assert 'pass session: "new"' in t["description"]
        assert "ends after 600 s without a call" in t["description"]
        assert t["outputSchema"]["properties"]["session_id"] == {"type": "string"}
    assert tools["close_session"]["inputSchema"]["required"] == ["session_id"]
    assert tools["list_sessions"]["inputSchema"]["properties"] == {}


def test_mcp_session_new_then_continue(h):
    r = tool(h, "run_python", {"code": "x = 41", "session": "new"})
    assert r["isError"] is False, r
    sid = r["structuredContent"]["session_id"]
    assert sid.startswith("s-") and json.loads(r["content"][0]["text"])["session_id"] == sid
    r = tool(h, "run_python", {"code": "x + 1", "session": sid})
    assert r["structuredContent"]["value"] == 42 and r["structuredContent"]["session_id"] == sid
    # a call without session starts fresh
    r = tool(h, "run_python", {"code": "x"})
    assert r["isError"] is True and r["structuredContent"]["error"]["type"] == "NameError"
    # the other language's tool cannot use it
    r = tool(h, "run_lua", {"code": "return 1", "session": sid})  # an isError result the model reads
    assert r["isError"] is True and "structuredContent" not in r, r
    assert r["content"][0]["text"] == f"session '{sid}' runs Python 3.11: call run_python"
    listed = tool(h, "list_sessions", {})
    assert listed["isError"] is False
    mine = [s for s in listed["structuredContent"]["sessions"] if s["session_id"] == sid]
    assert len(mine) == 1 and mine[0]["execs"] == 2 and mine[0]["lang"] == "python"
    closed = tool(h, "close_session", {"session_id": sid})
    assert closed["isError"] is False
    assert closed["structuredContent"] == {"session_id": sid, "closed": True, "execs": 2}
    again = tool(h, "close_session", {"session_id": sid})
    assert again["isError"] is True
    assert again["content"][0]["text"] == f"session '{sid}' has ended: closed by the client"
    r = tool(h, "run_python", {"code": "1", "session": sid})
    assert r["isError"] is True
    assert r["content"][0]["text"] == f"session '{sid}' has ended: closed by the client"


@pytest.mark.parametrize("name,args,text", [
    ("close_session", {}, 'close_session takes {"session_id": a string}'),
    ("close_session", {"session_id": 3}, 'close_session takes {"session_id": a string}'),
    ("close_session", {"session_id": "s-0000000000000000"}, "unknown session 's-0000000000000000'"),
    ("list_sessions", {"x": 1}, "list_sessions takes no arguments"),
])
def test_mcp_session_tools_refuse_bad_arguments(h, name, args, text):
    r = tool(h, name, args)
    assert r["isError"] is True and r["content"][0]["text"] == text, r


def test_mcp_session_new_refused_leaves_nothing_open(h):
    before = len(h.call("sandbox/session/list")["result"]["sessions"])
    r = tool(h, "run_lua", {"code": 5, "session": "new"})
    assert r["isError"] is True and r["content"][0]["text"] == "'code' must be a string", r
    r = tool(h, "run_lua", {"code": "1", "session": 5})
    assert r["content"][0]["text"] == "'session' must be \"new\" or a session_id a result returned"
    assert len(h.call("sandbox/session/list")["result"]["sessions"]) == before


@needs_landlock
def test_a_seccomp_trap_in_a_session_ends_it(h):
    """kernel-only: the code reaches the kernel; a trapped call kills the worker,
    so the session ends with a sandbox_violation that names the call."""
    sid = open_session(h, "python", policy="kernel-only")
    sx(h, sid, "x = 1")
    r = sx(h, sid, "import socket\nsocket.socket()")
    assert (r["ok"], r["error"]["kind"], r["error"]["layer"], r["error"]["syscall"]) == \
        (False, "sandbox_violation", "kernel", "socket"), r
    assert r["session_lost"] is True
    msg = rpc_error(h.call("sandbox/exec", {"session_id": sid, "code": "x"}), NO_SESSION)
    assert msg == f"session '{sid}' has ended: seccomp refused a system call and ended its worker"


def test_a_burst_of_session_opens_all_start(tmp_path):
    """Sessions opened faster than the zygote forks (a thousand pipelined at
    once) fill the zygote's socket: the host waits for room instead of failing
    the spawn, so every one opens and runs."""
    (tmp_path / "many.json").write_text(json.dumps({"name": "many", "extends": "standard", "session": {
        "max_sessions": 2000, "workspace_bytes": 0}}))
    os.chmod(tmp_path, 0o755)
    h = Host(args=("--policy-dir", str(tmp_path), "--policy", "many"))
    try:
        n = 1200
        for i in range(n):
            h.send({"jsonrpc": "2.0", "id": i, "method": "sandbox/session/open", "params": {"lang": "lua"}})
        ids = {}
        for _ in range(n):
            m = h.read_line(60)
            assert "result" in m, m
            ids[m["id"]] = m["result"]["session_id"]
        assert len(ids) == n and len(set(ids.values())) == n
        last = h.call("sandbox/exec", {"session_id": ids[n - 1], "code": "return 'alive'"})
        assert last["result"]["value"] == "alive", last
    finally:
        h.close()
