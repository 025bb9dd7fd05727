"""Workers that break the host⇄worker protocol.

The real workers never write garbage, so these run against build/tests/fake_tidepool:
the real host objects with a fake zygote whose workers read the real request frame and
then do what its `code` names (tests/faults/fake_tidepool.c). The fake is a separate
test-only binary: no snippet can reach these behaviours in build/tidepool.
"""
import json
import time

import pytest

from faultlib import FAKE, Host, dying

SHORT = {"wall_ms": 700}

# scenario -> (limits, check(result))
def internal(msg_part, layer="host"):
    def check(r):
        assert r["ok"] is False, r
        assert r["error"]["kind"] == "internal_error", r
        assert r["error"]["layer"] == layer, r
        assert msg_part in r["error"]["message"], r
    return check


def timeout(r):
    assert r["ok"] is False and r["error"]["kind"] == "timeout", r
    assert r["error"]["layer"] == "host"


def broke(msg_part):
    """A reply or frame the host refuses: the worker's process runs the snippet, so it is
    the process's doing (crashed at layer process), never an internal error of the host."""
    def check(r):
        assert r["ok"] is False, r
        assert (r["error"]["kind"], r["error"]["layer"]) == ("crashed", "process"), r
        assert msg_part in r["error"]["message"], r
        assert "signal" not in r["error"], r
    return check


def timeout_or_never_ran(r):
    """Pipelined behind hanging workers, an exec of wall_ms 700 may wait its 1 s
    (the floor) in the queue: then it never ran and says so (queue_timeout), else timeout."""
    if r["ok"] is False and r["error"]["kind"] == "queue_timeout":
        assert r["error"]["layer"] == "host" and r["usage"]["wall_ms"] == 0, r
        assert r["error"]["limit"]["used"] >= 1000 and r["stdout"] == "", r
    else:
        timeout(r)


def ok(r):
    assert r["ok"] is True and r["value"] == 1, r


def crashed(sig):
    def check(r):
        assert r["ok"] is False and r["error"]["kind"] == "crashed", r
        assert r["error"]["signal"] == sig
    return check


def scribbled(r):
    # Every page field lied: lengths are clamped, output is valid UTF-8, the
    # verdict stays within the protocol's vocabulary.
    assert isinstance(r["ok"], bool)
    assert len(r["stdout"].encode()) <= 4 * (1 << 20)
    assert r["truncated"]["stdout"] in (True, False)
    if not r["ok"]:
        assert r["error"]["kind"] in ("internal_error", "crashed", "memory_limit", "instruction_limit",
                                      "cpu_limit", "output_limit", "policy_violation", "runtime_error")


def overrun(r):
    # The page claimed 1 MiB of stdout and 1 MiB of stderr under output_bytes 1000 and
    # no limit tripped: the host keeps 1000 bytes and says why, whatever the page says.
    assert r["ok"] is False, r
    assert (r["error"]["kind"], r["error"]["layer"]) == ("output_limit", "host"), r
    assert r["error"]["limit"] == {"name": "output_bytes", "limit": 1000, "used": 2 << 20}, r
    assert r["error"]["message"] == ("output limit exceeded: the worker's page held 2097152 bytes "
                                     "of output; the host kept output_bytes"), r
    assert (r["stdout"], r["stderr"]) == ("o" * 1000, ""), (len(r["stdout"]), len(r["stderr"]))
    assert r["truncated"] == {"stdout": True, "stderr": True}, r


SCENARIOS = {
    "ok": (None, ok),
    "garbage": (None, broke("not a reply of this version")),
    "raw_bytes": (None, broke("framing")),
    "truncated": (None, internal("before replying", layer="process")),
    "truncated_hang": (SHORT, timeout),
    "header_only_hang": (SHORT, timeout),
    "oversize": (None, broke("framing")),
    "big_value": (None, broke("larger than result_bytes")),
    "twice": (None, ok),
    "reply_then_hang": (None, ok),
    "bad_kind": (None, broke("a kind the language layer may not claim")),
    "wrong_seq": (None, broke("worker reply refused: it answers another request")),
    "bad_utf8": (None, broke("a value is not JSON")),
    "deep": (None, broke("a value is not JSON")),
    "bad_image": (None, broke("worker reply refused: an image that is not a PNG file")),
    "repr_text": (None, broke("worker reply refused: a text beside a repr value")),
    "silent_exit": (None, internal("before replying", layer="process")),
    "exit3": (None, internal("status 3", layer="process")),
    "segv": (None, crashed("SIGSEGV")),
    "scribble": (None, scribbled),
    "page_overrun": ({"output_bytes": 1000}, overrun),
    "slow": (None, ok),
    "close_then_live": (None, internal("before replying", layer="process")),
    "no_such_scenario": (None, internal("status 5", layer="process")),
}


@pytest.fixture
def fake():
    h = Host(binary=FAKE)
    yield h
    h.close()


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_each_misbehaviour_gets_one_error_reply(fake, name):
    limits, check = SCENARIOS[name]
    params = {"limits": limits} if limits else {}
    id = fake.exec_req(name, **params)
    r = fake.reply(id, timeout=20)
    assert "result" in r, r
    check(r["result"])
    if name == "segv":
        assert r["result"]["stdout"] == "before the crash\n"
    # The host goes on serving, and nothing else was said about that id.
    assert fake.exec("ok")["value"] == 1
    assert fake.seen[json.dumps(id)] == 1


def test_all_misbehaviours_pipelined(fake):
    ids = {}
    for round in range(3):
        for name, (limits, _) in SCENARIOS.items():
            params = {"limits": limits} if limits else {}
            ids[fake.exec_req(name, id=f"{name}-{round}", **params)] = name
    for id, name in ids.items():
        r = fake.reply(id, timeout=60)
        assert "result" in r, r
        check = SCENARIOS[name][1]
        (timeout_or_never_ran if check is timeout else check)(r["result"])
    assert fake.exec("ok")["value"] == 1
    assert fake.proc.poll() is None
    fake.proc.stdin.close()
    fake.read_to_eof()
    assert fake.proc.wait(timeout=10) == 0
    assert fake.null_id == []


def test_worker_deaths_back_off_and_recover_per_language(fake):
    """A snippet able to signal other workers (a kernel without Landlock's signal
    scope) kills every warm worker of its language for two seconds: the host
    never gives up, the other language is not stopped, and its own recovers."""
    assert fake.exec("ok", lang="python")["value"] == 1
    internal("before replying", layer="process")(fake.exec("kill_siblings"))
    assert fake.stderr().count("a warm worker died before use") >= 8  # the attack happened
    assert fake.exec("ok", lang="python")["value"] == 1
    for _ in range(3):  # Lua's next execs run: the backoff is over, the pool refilled
        assert fake.exec("ok", timeout=30)["value"] == 1
    # And while it happens, the other language keeps serving.
    killer = fake.exec_req("kill_siblings")
    served, end = 0, time.monotonic() + 1.5
    while time.monotonic() < end:
        assert fake.exec("ok", lang="python")["value"] == 1
        served += 1
    internal("before replying", layer="process")(fake.reply(killer, timeout=30)["result"])
    assert served > 5
    assert fake.exec("ok", timeout=30)["value"] == 1
    assert fake.proc.poll() is None


# ---- a session's worker that runs when it should wait -------------------------------------
#
# The host learns a session worker's state from the kernel, never from the worker: after
# a reply it reads the worker's CPU time (/proc/PID/stat) and watches it while the session
# is idle; a worker that uses more than the tolerance while idle is ended, with its
# session. An exec is handed to a session's worker only while it sleeps (state S).

IDLE_SPIN = ("the session's worker kept running after its reply (more than 100 ms of CPU "
             "while idle): session ended")
NO_SESSION = -32002


def open_session(h):
    r = h.call("sandbox/session/open", {"lang": "lua"})
    assert "result" in r, r
    return r["result"]["session_id"]


def sexec_req(h, sid, code, **params):
    return h.request("sandbox/exec", {"session_id": sid, "code": code, **params})


def sexec(h, sid, code, **params):
    r = h.reply(sexec_req(h, sid, code, **params), timeout=30)
    assert "result" in r, r
    assert r["result"]["session_id"] == sid, r
    return r["result"]


def listed(h):
    r = h.call("sandbox/session/list")
    assert "result" in r, r
    return {s["session_id"]: s for s in r["result"]["sessions"]}


def gone_within(pid, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if dying(pid):
            return True
        time.sleep(0.02)
    return dying(pid)


def spinner(h, sid):
    """Runs spin_after_reply in sid: its exec is answered ok at once; the worker's pid."""
    r = sexec(h, sid, "spin_after_reply")
    assert r["ok"] is True and r["value"] == 1, r
    assert r["stdout"].startswith("pid "), r
    return int(r["stdout"].split()[1])


def ended_spinning(r):
    """r: the reply to an exec that met a worker still running after its reply."""
    assert r["ok"] is False, r
    assert (r["error"]["kind"], r["error"]["layer"]) == ("crashed", "process"), r
    assert r["error"]["message"] == IDLE_SPIN, r
    assert r["session_lost"] is True, r


def session_ended_spinning(fake, sid):
    """sid was ended by the idle watch: a later exec is refused, saying why."""
    e = fake.call("sandbox/exec", {"session_id": sid, "code": "ok"})
    assert e["error"]["code"] == NO_SESSION, e
    assert e["error"]["message"] == f"session '{sid}' has ended: {IDLE_SPIN}", e


def test_session_worker_running_after_reply_is_ended_at_the_next_exec(fake):
    honest = open_session(fake)
    assert sexec(fake, honest, "ok")["value"] == 1
    sid = open_session(fake)
    pid = spinner(fake, sid)
    # The next exec at once: the spinning worker would read and answer it (ok).
    ended_spinning(sexec(fake, sid, "ok"))
    assert gone_within(pid, 5), f"worker {pid} still runs"
    sessions = listed(fake)
    assert sid not in sessions and honest in sessions, sessions
    session_ended_spinning(fake, sid)
    # The honest session on the same host is as it was, and serves on.
    for _ in range(3):
        r = sexec(fake, honest, "ok")
        assert r["ok"] is True and r["value"] == 1 and r["session_lost"] is False, r
    assert listed(fake)[honest]["execs"] == 4


def test_session_worker_running_after_reply_is_ended_while_idle(fake):
    honest = open_session(fake)
    assert sexec(fake, honest, "ok")["value"] == 1
    sid = open_session(fake)
    pid = spinner(fake, sid)
    # Nothing more is asked of it: the host's idle watch finds it (every 500 ms).
    assert gone_within(pid, 5), f"worker {pid} still runs"
    sessions = listed(fake)
    assert sid not in sessions and honest in sessions, sessions
    assert sessions[honest]["running"] is False, sessions
    session_ended_spinning(fake, sid)
    # Honest idle sessions are never ended by the watch.
    time.sleep(1.5)
    assert honest in listed(fake)
    assert sexec(fake, honest, "ok")["ok"] is True


def open_late_session(h):
    """A session whose worker's pid the fake zygote tells 1.5 s after its fork
    (under 'permissive': fake_tidepool.c, LATE_PID_MS), so the worker's first
    reply reaches the host before its pid does."""
    r = h.call("sandbox/session/open", {"lang": "lua", "policy": "permissive"})
    assert "result" in r, r
    return r["result"]["session_id"]


def test_session_worker_that_replies_before_its_pid_is_told_is_watched_from_the_pid(fake):
    sid = open_late_session(fake)
    pid = spinner(fake, sid)
    # Its reply came first: the watch starts when the pid comes.
    assert gone_within(pid, 8), f"worker {pid} still runs"
    session_ended_spinning(fake, sid)


def test_session_exec_waits_for_the_pid_of_a_worker_that_replied_before_it(fake):
    sid = open_late_session(fake)
    pid = spinner(fake, sid)
    # The next exec at once: not handed to a worker the host cannot watch yet
    # (the spinner would answer it ok).
    ended_spinning(sexec(fake, sid, "ok"))
    assert gone_within(pid, 5), f"worker {pid} still runs"


def test_session_worker_that_replies_before_its_pid_is_told_serves_on_when_honest(fake):
    sid = open_late_session(fake)
    for _ in range(3):
        r = sexec(fake, sid, "ok")
        assert r["ok"] is True and r["value"] == 1 and r["session_lost"] is False, r
    assert listed(fake)[sid]["execs"] == 3


def may_raise_hard_limits():
    """The host (run as this user) holds CAP_SYS_RESOURCE: it can set a worker's hard
    RLIMIT_CPU before each exec (and raise it for the next)."""
    with open("/proc/self/status") as f:
        eff = next(int(l.split()[1], 16) for l in f if l.startswith("CapEff:"))
    return bool(eff & (1 << 24))


def test_session_exec_that_switches_off_its_timer_dies_at_its_cpu_bound(fake):
    """Native code can switch off the language's CPU timer and ignore every stop and
    SIGXCPU: before each exec of a session the host sets the worker's RLIMIT_CPU
    (prlimit) to its CPU so far plus the exec's cpu_ms and a margin, so the kernel
    kills it (a host without CAP_SYS_RESOURCE sets the soft limit only, reads the
    worker's CPU time and kills it there itself) long before the wall clock would."""
    layer = "kernel" if may_raise_hard_limits() else "host"
    sid = open_session(fake)
    assert sexec(fake, sid, "ok")["value"] == 1
    t = time.monotonic()
    r = sexec(fake, sid, "spin_no_timer", limits={"cpu_ms": 100, "wall_ms": 10000})
    assert r["ok"] is False, r
    assert (r["error"]["kind"], r["error"]["layer"]) == ("cpu_limit", layer), r
    assert r["error"]["message"] == "CPU time limit exceeded", r
    lim = r["error"]["limit"]
    # The bound: ceil((its CPU so far + 100 + 200 ms of grace) / 1 s) + 1 s, and the
    # kill at one more second: 3 s of CPU for a worker that had used next to none.
    assert (lim["name"], lim["limit"]) == ("cpu_ms", 100) and 3000 <= lim["used"] < 4500, r
    assert r["session_lost"] is True, r
    assert time.monotonic() - t < 10, "the wall clock ended it, not its CPU bound"
    assert sid not in listed(fake)
