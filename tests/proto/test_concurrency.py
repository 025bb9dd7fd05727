"""Concurrency: --jobs bounds the execs running at once, --queue the execs
waiting (past it: a busy error at once, and the host reads on), waiting and
running are separate verdicts (an exec waits at most its wall_ms, or 1 s, to
start, then is answered queue_timeout; its wall_ms is its own running time, and
usage.queue_ms shows the wait), and the next exec to
start is from the flow with the fewest running, so a burst cannot starve a
session. Timing is asserted only as order and completeness; figures are for
`make bench`."""
import json
import subprocess
import time

import pytest

from conftest import BINARY, Host

SPIN = "local t = os.clock() while os.clock() - t < {s} do end return {v}"


def start(h, rid, params, method="sandbox/exec"):
    h.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})


def test_jobs_and_queue_bound():
    h = Host(args=("--jobs", "1", "--queue", "2"))
    try:
        start(h, "run", {"lang": "lua", "code": "while true do end", "limits": {"wall_ms": 1500}})
        time.sleep(0.2)
        start(h, "q1", {"lang": "lua", "code": "return 1"})
        start(h, "q2", {"lang": "lua", "code": "return 2"})
        start(h, "over", {"lang": "lua", "code": "print('ran') return 3"})
        r = h.reply("over", timeout=1.0)  # at once, not after the running exec
        assert r["error"] == {"code": -32001, "message": "busy: 2 execs are waiting, the most this "
                              "tidepool queues (--queue); retry later"}, r
        # the host still reads: a ping is answered while the exec runs and two wait
        assert h.call("ping", timeout=1.0)["result"] == {}
        assert "run" not in h.pending
        assert h.reply("q1", timeout=10)["result"]["value"] == 1
        assert h.reply("q2", timeout=10)["result"]["value"] == 2
        assert h.reply("run")["result"]["error"]["kind"] == "timeout"
    finally:
        h.close()


def test_an_exec_that_waited_too_long_never_runs_and_says_so():
    h = Host(args=("--jobs", "1"))
    try:
        start(h, "first", {"lang": "lua", "code": SPIN.format(s=1.6, v=1)})
        time.sleep(0.1)
        # wall_ms 200: it may wait 1 s (the floor) to start, and the spin holds the job 1.6 s
        start(h, "short", {"lang": "lua", "code": "print('ran') return 2", "limits": {"wall_ms": 200}})
        start(h, "long", {"lang": "lua", "code": "return 3", "limits": {"wall_ms": 10000}})
        short = h.reply("short")["result"]
        err = short["error"]
        assert short["ok"] is False and (err["kind"], err["layer"]) == ("queue_timeout", "host"), short
        assert err["message"].startswith("it waited ") and err["message"].endswith(
            " ms in the queue and never started (an exec waits at most its wall_ms, or 1 s, to "
            "start): every job was busy; retry later"), err
        assert err["limit"]["name"] == "wall_ms" and err["limit"]["limit"] == 200
        assert err["limit"]["used"] >= 1000  # the floor: a wall_ms of 200 waits 1 s
        assert short["stdout"] == "" and short["usage"]["wall_ms"] == 0  # never ran
        assert short["usage"]["queue_ms"] >= 1000
        first = h.reply("first")["result"]
        assert first["ok"] is True and first["usage"]["queue_ms"] < first["usage"]["wall_ms"]
        long = h.reply("long")["result"]
        assert long["ok"] is True and long["value"] == 3
        assert long["usage"]["queue_ms"] > 0
    finally:
        h.close()


def test_wall_ms_is_the_snippets_own_time_not_its_wait():
    # 0.5 s waiting behind another exec, then 0.5 s running, under wall_ms 900: it ran
    # for less than its wall clock, so it succeeds (the wait counted against it before)
    h = Host(args=("--jobs", "1"))
    try:
        start(h, "first", {"lang": "lua", "code": SPIN.format(s=0.5, v=1)})
        time.sleep(0.05)
        start(h, "second", {"lang": "lua", "code": SPIN.format(s=0.5, v=2), "limits": {"wall_ms": 900}})
        second = h.reply("second")["result"]
        assert second["ok"] is True and second["value"] == 2, second
        assert second["usage"]["queue_ms"] >= 300, second["usage"]
        assert second["usage"]["queue_ms"] + second["usage"]["wall_ms"] > 900, second["usage"]
        # a snippet that overruns its own wall clock is still a timeout, counted from its start
        start(h, "spin", {"lang": "lua", "code": "while true do end", "limits": {"wall_ms": 300}})
        spin = h.reply("spin")["result"]
        assert spin["error"]["kind"] == "timeout", spin
        assert spin["error"]["limit"]["used"] == int(spin["usage"]["wall_ms"]), spin
    finally:
        h.close()


def test_concurrent_execs_all_finish_once():
    h = Host(args=("--jobs", "2"))
    try:
        for i in range(8):
            start(h, i, {"lang": "python" if i % 2 else "lua",
                         "code": f"{i} * 2" if i % 2 else SPIN.format(s=0.05, v=f"{i} * 2")})
        got = {i: h.reply(i, timeout=60)["result"] for i in range(8)}
        assert {i: r["value"] for i, r in got.items()} == {i: i * 2 for i in range(8)}
        h.send({"jsonrpc": "2.0", "id": "probe", "method": "ping"})
        assert h.reply("probe")["result"] == {} and h.pending == {}
    finally:
        h.close()


def test_a_burst_does_not_starve_a_session():
    h = Host(args=("--jobs", "1"))
    try:
        sid = h.call("sandbox/session/open", {"lang": "lua"})["result"]["session_id"]
        assert h.call("sandbox/exec", {"session_id": sid, "code": "x = 1"})["result"]["ok"]
        for i in range(6):
            start(h, f"burst{i}", {"lang": "lua", "code": SPIN.format(s=0.15, v=i)})
        time.sleep(0.05)
        start(h, "sess", {"session_id": sid, "code": "return x"})
        order = []
        while len(order) < 7:
            order.append(h.read_line(timeout=30)["id"])
        # the session's exec starts next after the running one, not after the burst
        assert order.index("sess") <= 2, order
        assert sorted(order) == sorted(["sess"] + [f"burst{i}" for i in range(6)])
    finally:
        h.close()


@pytest.mark.parametrize("args,msg", [
    (("--jobs", "0"), "tidepool: --jobs must be a whole number from 1 to 1024, not '0'"),
    (("--jobs", "x"), "tidepool: --jobs must be a whole number from 1 to 1024, not 'x'"),
    (("--queue", "-1"), "tidepool: --queue must be a whole number from 0 to 100000, not '-1'"),
])
def test_bad_flags(args, msg):
    p = subprocess.run([BINARY, *args], input="", capture_output=True, text=True, timeout=30)
    assert p.returncode == 2
    assert p.stdout == ""
    assert p.stderr.splitlines()[0] == msg
