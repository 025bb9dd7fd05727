"""Workers (and the zygote) killed with SIGKILL at random points: while starting,
while running, while replying. Every exec still gets exactly one reply: its
correct result, or `crashed` (SIGKILL); the host goes on serving."""
import random
import signal
import threading
import time

from faultlib import Host, assert_healthy, kill_quietly, proc_comm, start_time

BIG = 900_000


def is_killed(r):
    return r["ok"] is False and r["error"]["kind"] == "crashed" and r["error"]["signal"] == "SIGKILL"


class Killer(threading.Thread):
    """Kills a random matching child of the host every 0..max_gap seconds."""

    def __init__(self, h, comms, max_gap=0.015, seed=1):
        super().__init__(daemon=True)
        self.h, self.comms, self.max_gap = h, comms, max_gap
        self.rng = random.Random(seed)
        self.stop = threading.Event()
        self.kills = 0

    def run(self):
        zygote = None
        while not self.stop.is_set():
            kids = self.h.children()
            if zygote is None or zygote not in kids:
                zs = [p for p in kids if proc_comm(p) == "tp-zygote"]
                zygote = min(zs) if zs else None  # the oldest: workers not yet renamed are younger
            victims = [p for p in kids if p != zygote and proc_comm(p) in self.comms]
            if victims and kill_quietly(self.rng.choice(victims)):
                self.kills += 1
            time.sleep(self.rng.uniform(0, self.max_gap))


MIX = [
    ("return {i}", lambda i, r: r["ok"] and r["value"] == i),
    ("local t=os.clock() while os.clock()-t < 0.02 do end return {i}", lambda i, r: r["ok"] and r["value"] == i),
    ("print(string.rep('o', 100000)) return {i}", lambda i, r: r["ok"] and r["value"] == i and len(r["stdout"]) == 100001),
    (f"return string.rep('v', {BIG})", lambda i, r: r["ok"] and r["value"] == "v" * BIG),
    ("error('e{i}')", lambda i, r: r["error"]["kind"] == "runtime_error" and f"e{i}" in r["error"]["message"]),
]


def run_under_fire(h, comms, n=300, seed=1):
    killer = Killer(h, comms, seed=seed)
    killer.start()
    rng = random.Random(seed)
    sent = {}
    try:
        for i in range(n):
            code, check = MIX[rng.randrange(len(MIX))]
            sent[h.exec_req(code.replace("{i}", str(i)), id=f"k{i}")] = (i, check)
            if i % 20 == 19:  # keep a window in flight, not all at once
                for j in range(i - 19, i - 9):
                    h.reply(f"k{j}", timeout=60)
                    sent.pop(f"k{j}")
        outcomes = {"ok": 0, "killed": 0}
        for id, (i, check) in sent.items():
            r = h.reply(id, timeout=60)["result"]
            if is_killed(r):
                outcomes["killed"] += 1
            else:
                assert check(i, r), (id, r["error"] if not r["ok"] else str(r)[:200])
                outcomes["ok"] += 1
    finally:
        killer.stop.set()
        killer.join()
    return killer.kills, outcomes


def test_kill_running_and_replying_workers(host):
    kills, outcomes = run_under_fire(host, {"tp-worker"})
    print(f"\n{kills} kills: {outcomes}")
    assert kills > 20 and outcomes["killed"] > 0 and outcomes["ok"] > 0
    assert_healthy(host)
    assert host.null_id == []


def test_kill_workers_while_starting(host):
    # A worker not yet renamed still says tp-zygote: killing those hits the
    # fork, the mapping of the page and the lockdown.
    kills, outcomes = run_under_fire(host, {"tp-zygote"}, n=200, seed=2)
    print(f"\n{kills} kills while starting: {outcomes}")
    assert kills > 10
    assert_healthy(host)


def test_kill_at_random_delays_after_the_request(host):
    """Aims at the reply: a big value, killed 0..40 ms after it was asked for."""
    rng = random.Random(3)
    assert_healthy(host)
    seen = {"ok": 0, "killed": 0}
    killed = {}  # pid -> its start time, so a reused pid is not taken for it
    for i in range(60):
        id = host.exec_req(f"print('x') return string.rep('r', {BIG})")
        time.sleep(rng.uniform(0, 0.04))
        for p in host.by_comm("tp-worker"):
            start = start_time(p)
            if start is not None and kill_quietly(p):
                killed[p] = start
        r = host.reply(id, timeout=30)["result"]
        if is_killed(r):
            seen["killed"] += 1
        else:
            assert r["ok"] and r["value"] == "r" * BIG, str(r)[:300]
            seen["ok"] += 1
    assert seen["ok"] and seen["killed"], seen
    # The kills also hit idle warm workers; an exec handed to one before the host
    # reaped it is reported killed, rightly. Health is asked once the host has
    # reaped every worker we killed (a reaped pid leaves /proc).
    deadline = time.monotonic() + 10
    while any(start_time(p) == t for p, t in killed.items()) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not any(start_time(p) == t for p, t in killed.items())
    assert_healthy(host)


def test_kill_the_zygote_under_load(host):
    assert_healthy(host)
    ids = [host.exec_req("local t=os.clock() while os.clock()-t < 0.01 do end return 7") for _ in range(60)]
    for _ in range(3):
        time.sleep(0.05)
        for p in host.by_comm("tp-zygote"):
            kill_quietly(p)
    for id in ids:
        r = host.reply(id, timeout=60)
        # Either it ran, or it was killed, or the host says it could not start it.
        if "error" in r:
            assert r["error"]["code"] == -32603, r
        else:
            res = r["result"]
            assert (res["ok"] and res["value"] == 7) or is_killed(res) or \
                res["error"]["kind"] == "internal_error", res
    assert_healthy(host)
    assert host.proc.poll() is None
