"""Workers (and the zygote) killed with SIGKILL at random points: while starting,
while running, while replying. Every exec still gets exactly one reply: its
correct result, or `crashed` (SIGKILL); the host goes on serving."""
import random
import signal
import threading
import time

from faultlib import Host, assert_healthy, kill_quietly, proc_comm, proc_start, wait_reaped

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
                zs = [(proc_start(p), p) for p in kids if proc_comm(p) == "tp-zygote"]
                zs = [z for z in zs if z[0] is not None]
                # The oldest: workers not yet renamed are younger. By start time,
                # not pid: pids wrap (pid_max is 32768 on a small machine).
                zygote = min(zs)[1] if zs else None
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


def run_under_fire(h, comms, n=300, seed=1, enough=lambda kills, outcomes: True, max_rounds=20):
    """Runs rounds of n execs under fire until enough(kills, outcomes): how many
    kills land in a round depends on the machine (how long a worker takes to
    start and run), so a fast machine may need more rounds than a slow one."""
    killer = Killer(h, comms, seed=seed)
    killer.start()
    rng = random.Random(seed)
    outcomes = {"ok": 0, "killed": 0}
    try:
        for round in range(max_rounds):
            sent = {}
            base = round * n
            for i in range(base, base + n):
                code, check = MIX[rng.randrange(len(MIX))]
                sent[h.exec_req(code.replace("{i}", str(i)), id=f"k{i}")] = (i, check)
                if i % 20 == 19:  # keep a window in flight, not all at once
                    for j in range(i - 19, i - 9):
                        if f"k{j}" in sent:
                            h.reply(f"k{j}", timeout=60)
                            sent.pop(f"k{j}")
            for id, (i, check) in sent.items():
                r = h.reply(id, timeout=60)["result"]
                if is_killed(r):
                    outcomes["killed"] += 1
                else:
                    assert check(i, r), (id, r["error"] if not r["ok"] else str(r)[:200])
                    outcomes["ok"] += 1
            if enough(killer.kills, outcomes):
                break
    finally:
        killer.stop.set()
        killer.join()
    wait_reaped(h)  # the last kills: an exec handed to one of those would be killed too
    return killer.kills, outcomes


def test_kill_running_and_replying_workers(host):
    kills, outcomes = run_under_fire(host, {"tp-worker"},
                                     enough=lambda k, o: k > 20 and o["killed"] > 0 and o["ok"] > 0)
    print(f"\n{kills} kills: {outcomes}")
    assert kills > 20 and outcomes["killed"] > 0 and outcomes["ok"] > 0
    assert_healthy(host)
    assert host.null_id == []


def test_kill_workers_while_starting(host):
    # A worker not yet renamed still says tp-zygote: killing those hits the
    # fork, the mapping of the page and the lockdown.
    kills, outcomes = run_under_fire(host, {"tp-zygote"}, n=200, seed=2, enough=lambda k, o: k > 10)
    print(f"\n{kills} kills while starting: {outcomes}")
    assert kills > 10
    assert_healthy(host)


def exec_seconds(h, code, runs=5):
    """The median time from request to reply of code, run as in the loop below
    with the kill coming after the reply: what a kill delay is measured against."""
    times = []
    for _ in range(runs):
        t0 = time.monotonic()
        r = h.exec(code)
        times.append(time.monotonic() - t0)
        assert r["ok"], str(r)[:300]
        for p in h.by_comm("tp-worker"):
            kill_quietly(p)
        wait_reaped(h)
    return sorted(times)[runs // 2]


def test_kill_at_random_delays_after_the_request(host):
    """Aims at the reply: a big value, killed at a random delay after it was
    asked for, between 0 and the time the exec takes on this machine, request
    to reply read (a fixed range would kill every exec on a slow machine, none
    on a fast one)."""
    rng = random.Random(3)
    assert_healthy(host)
    code = f"print('x') return string.rep('r', {BIG})"
    span = exec_seconds(host, code)
    seen = {"ok": 0, "killed": 0}
    for i in range(60):
        id = host.exec_req(code)
        time.sleep(rng.uniform(0, span))
        for p in host.by_comm("tp-worker"):
            kill_quietly(p)
        r = host.reply(id, timeout=30)["result"]
        # The next exec must not go to a worker killed here that the host has
        # not reaped yet: that kill would not be the one aimed at it.
        wait_reaped(host)
        if is_killed(r):
            seen["killed"] += 1
        else:
            assert r["ok"] and r["value"] == "r" * BIG, str(r)[:300]
            seen["ok"] += 1
    print(f"\nkill delays 0..{span * 1000:.0f} ms: {seen}")
    assert seen["ok"] and seen["killed"], seen
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
