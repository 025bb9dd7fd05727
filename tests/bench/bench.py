#!/usr/bin/env python3
"""make bench: tidepool's latency and cost beside the plain interpreters and the
machine's own costs, all measured in the same run on the same machine, printed
as ratios (the machine is shared and noisy: only ratios of one run compare).
Prints figures; asserts only that replies are correct, never a timing.

Sections, in order (BENCH_ONLY=a,b picks some; docs/performance.md describes
every row): machine, paced, b2b, cpu, phases, value, compute, sessions, data, dataloop, http;
then the goal
table; capacity only when BENCH_ONLY names it
table. data is the `data` policy preset's numpy + pandas group-by
against a cold `python3.11 -c` doing the same, and the data zygote's start and
memory; it is skipped, with the reason, where python3.11 cannot import them.
BENCH_QUICK=1 (make bench QUICK=1) is a short run; BENCH_N (back-to-back and
CPU execs), BENCH_PACED (paced requests per row) and BENCH_SPAWN (interpreter
spawns) set the counts."""
import json
import os
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time

BINARY = os.environ.get("TIDEPOOL", "build/tidepool")
PROBE = os.environ.get("BENCH_PROBE", "")
# tests/bench/lua_state_probe.c: tidepool's own Lua state built, run and rebuilt
# in one process, the floor of an exec at isolation "state".
LUA_STATE_PROBE = os.environ.get("BENCH_LUA_STATE", "")
LUA = "/usr/bin/lua5.4"
PYTHON = "/usr/bin/python3.11"  # named explicitly: the python3 on PATH may be a pyenv shim
QUICK = os.environ.get("BENCH_QUICK", "") not in ("", "0")
N_EXEC = int(os.environ.get("BENCH_N", "100" if QUICK else "1000"))
N_PACED = int(os.environ.get("BENCH_PACED", "40" if QUICK else "300"))
N_SPAWN = int(os.environ.get("BENCH_SPAWN", "40" if QUICK else "200"))
N_WARM = 20 if QUICK else 50        # execs before anything is timed; K of the CPU figures
CPU_PAIRS = 1 if QUICK else 3       # host pairs (K execs, K + N execs) per CPU figure
PACED_GAP = 0.02                    # the CPU section's paced rows: 20 ms, as agents pace requests
COMPUTE_REPS = 3 if QUICK else 9
ONLY = {x.strip() for x in os.environ.get("BENCH_ONLY", "").split(",") if x.strip()}
LUA_SPAWN = [LUA, "-e", "return 1+1"]
PY_SPAWN = [PYTHON, "-I", "-S", "-c", "1+1"]
# name, label, lang, code, extra params: the isolation levels measured.
MODES = [("lua-process", "Lua, process", "lua", "return 1+1", {}),
         ("lua-state", "Lua, state", "lua", "return 1+1", {"policy": "bench-state"}),
         ("python", "Python, process", "python", "1+1", {})]
COMPUTE = "local s = 0 for i = 1, 3e7 do s = s + i % 7 end return s"
PY_COMPUTE = "s = 0\nfor i in range(3_000_000):\n    s += i % 7\ns"
PY_COMPUTE_CLI = "s = 0\nfor i in range(3_000_000):\n    s += i % 7\nprint(s)"
# Attribute loads and method calls: what the attribute guard costs (docs/python.md).
PY_OBJECTS = ("class P:\n    def __init__(self, x):\n        self.x = x\n    def get(self):\n"
              "        return self.x\nps = [P(i) for i in range(1000)]\nl = []\ns = 0\n"
              "for _ in range(300):\n    for p in ps:\n        s += p.x + p.get()\n        l.append(s)\n"
              "    l.clear()\n")
RESULTS = {}  # summary key -> measured ratio (or overhead in %)
# Isolation "state" is a policy's setting: every host of the bench loads this
# one beside the presets (standard's limits and allowlist, isolation "state").
POLICY_DIR = tempfile.mkdtemp(prefix="tp-bench-pol-")
with open(os.path.join(POLICY_DIR, "bench-state.json"), "w") as _f:
    json.dump({"name": "bench-state", "extends": "standard", "isolation": "state"}, _f)
STATE = {"supported": None, "why": ""}


class Client:
    def __init__(self, args=()):
        if "--policy-dir" not in args:
            args = ("--policy-dir", POLICY_DIR, *args)
        self.p = subprocess.Popen([BINARY, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, env={})
        self.buf = b""
        self.id = 0

    def send(self, method, params):
        self.id += 1
        msg = json.dumps({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params})
        self.p.stdin.write(msg.encode() + b"\n")
        self.p.stdin.flush()
        return self.id

    def read(self):
        while b"\n" not in self.buf:
            select.select([self.p.stdout], [], [])
            self.buf += os.read(self.p.stdout.fileno(), 1 << 20)
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def rpc(self, method, params):
        i = self.send(method, params)
        r = self.read()
        assert r["id"] == i and "result" in r, r
        return r["result"]

    def call(self, params):
        return self.rpc("sandbox/exec", params)

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def spawn_latency(argv, n):
    lat = []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        lat.append((time.perf_counter() - t) * 1e6)
    return lat


def paced(c, method, params, n, gap=0.02):
    """Requests one at a time, gap seconds apart (as an agent sends them): latencies in us."""
    lat = []
    for _ in range(n):
        time.sleep(gap)
        t = time.perf_counter()
        c.rpc(method, params)
        lat.append((time.perf_counter() - t) * 1e6)
    return lat


def pss_kb(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def session_workers(host_pid):
    kids = []
    for task in os.listdir(f"/proc/{host_pid}/task"):
        try:
            with open(f"/proc/{host_pid}/task/{task}/children") as f:
                kids += [int(x) for x in f.read().split()]
        except OSError:
            pass
    out = []
    for k in kids:
        try:
            with open(f"/proc/{k}/comm") as f:
                if f.read().strip() == "tp-worker":
                    out.append(k)
        except OSError:
            pass
    return out


def sessions(n_paced=200, n_b2b=1000, n_open=100, n_pipelined=2000):
    """Issue 13's figures: a session's exec against a paced ping and against
    spawning the interpreter; ten execs in one session; PSS per idle session;
    one-shot throughput with --jobs 2."""
    import tempfile
    d = tempfile.mkdtemp(prefix="tp-bench-")
    pol = os.path.join(d, "many.json")
    with open(pol, "w") as f:
        json.dump({"name": "many", "extends": "standard", "session": {"max_sessions": 1024, "max_execs": 10000000}}, f)
    c = Client(("--policy", pol))
    ping = paced(c, "ping", {}, n_paced)
    ping_b2b = [paced(c, "ping", {}, 1, gap=0)[0] for _ in range(n_b2b)]
    print(f"Sessions ({n_paced} paced requests, 20 ms apart; {n_b2b} back to back):")
    print(f"  ping, paced                 median {statistics.median(ping):8.1f} us   p99 {pct(ping, 0.99):8.1f} us")
    print(f"  ping, back to back          median {statistics.median(ping_b2b):8.1f} us   (the client's round trip: the floor)")
    spawn = {"lua": spawn_latency(LUA_SPAWN, max(10, N_SPAWN // 2)),
             "python": spawn_latency(PY_SPAWN, max(10, N_SPAWN // 8))}
    for lang, code, goal in (("lua", "return 1+1", 50), ("python", "1+1", 100)):
        sid = c.rpc("sandbox/session/open", {"lang": lang})["session_id"]
        ex = {"session_id": sid, "code": code}
        for _ in range(20):
            c.call(ex)
        p = paced(c, "sandbox/exec", ex, n_paced)
        b = warm_latency_params(c, ex, n_b2b)
        t = time.perf_counter()
        for _ in range(10):
            c.call(ex)
        ten = (time.perf_counter() - t) * 1e6
        sp = statistics.median(spawn[lang])
        print(f"  {lang:<6} session exec, paced  median {statistics.median(p):8.1f} us   p99 {pct(p, 0.99):8.1f} us"
              f"   {statistics.median(p) / statistics.median(ping):5.2f}x ping (goal <= 1.3x)")
        print(f"  {lang:<6} back to back         median {statistics.median(b):8.1f} us   spawning {sp:9.1f} us"
              f"   {sp / statistics.median(b):6.1f}x faster (goal >= {goal}x);"
              f" {statistics.median(b) / statistics.median(ping_b2b):4.2f}x a ping")
        print(f"  {lang:<6} ten execs in one session: {ten:8.1f} us in all")
        c.rpc("sandbox/session/close", {"session_id": sid})
    for lang, goal in (("lua", 1024), ("python", 4096)):
        ids = [c.rpc("sandbox/session/open", {"lang": lang})["session_id"] for _ in range(n_open)]
        for sid in ids:
            c.call({"session_id": sid, "code": "x = 1" if lang == "python" else "x = 1"})
        time.sleep(0.2)
        pss = [pss_kb(p) for p in session_workers(c.p.pid)]
        pss = [x for x in pss if x is not None]
        print(f"  {lang:<6} {n_open} idle sessions: PSS per worker median {statistics.median(pss):7.0f} KiB,"
              f" max {max(pss)} KiB (goal <= {goal} KiB); {len(pss)} workers")
        for sid in ids:
            c.rpc("sandbox/session/close", {"session_id": sid})
    c.close()
    for jobs in (1, 2):
        c = Client(("--jobs", str(jobs)))
        for _ in range(50):
            c.call({"lang": "lua", "code": "return 1+1"})
        n = n_pipelined
        t = time.perf_counter()
        for i in range(n):
            c.send("sandbox/exec", {"lang": "lua", "code": "return 1+1"})
            if i >= 200:
                c.read()
        for _ in range(min(n, 200)):
            c.read()
        dt = time.perf_counter() - t
        print(f"  one-shot Lua, {n} pipelined, --jobs {jobs}: {n / dt:8.0f} execs/s")
        c.close()
    # Eight execs that each wait 100 ms for the client's tool: they do not hold
    # the two jobs while they wait, so together they take about one wait.
    tpol = os.path.join(d, "tooly.json")
    with open(tpol, "w") as f:
        json.dump({"name": "tooly", "extends": "standard", "tools": ["slow"]}, f)
    c = Client(("--policy", tpol, "--jobs", "2"))
    c.call({"lang": "lua", "code": "return 1"})
    t = time.perf_counter()
    ids = [c.send("sandbox/exec", {"lang": "lua", "code": "return tools.call('slow', {})"})
           for _ in range(8)]
    calls = [c.read() for _ in range(8)]
    time.sleep(0.1)
    for m in calls:
        c.p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": 1}) + "\n").encode())
    c.p.stdin.flush()
    got = [c.read() for _ in ids]
    dt = (time.perf_counter() - t) * 1e3
    assert all(r["result"]["ok"] for r in got), got
    print(f"  8 execs each waiting 100 ms on a tool, --jobs 2: {dt:6.1f} ms in all (one after another: 800 ms)")
    c.close()


def warm_latency_params(c, params, n):
    lat = []
    for _ in range(n):
        t = time.perf_counter()
        c.call(params)
        lat.append((time.perf_counter() - t) * 1e6)
    return lat



def want(section):
    return not ONLY or section in ONLY


def med(xs):
    return statistics.median(xs)


def exec_params(mode):
    _, _, lang, code, extra = mode
    return {"lang": lang, "code": code, **extra}


def modes():
    """The isolation levels this binary runs: 'state' only once it accepts it."""
    return [m for m in MODES if m[0] != "lua-state" or STATE["supported"]]


def check_value(r, mode):
    assert r["ok"] and r["value"] == 2, (mode[0], r)


def detect_state(c):
    """Whether this binary has isolation "state" (a policy of it loads, and its
    results say so); a JSON-RPC error or a result without it means not."""
    i = c.send("sandbox/exec", exec_params(MODES[1]))
    r = c.read()
    assert r["id"] == i, r
    err = r.get("error") or (r.get("result") or {}).get("error") or {}
    level = ((r.get("result") or {}).get("isolation") or {}).get("level")
    if "error" in r or err or level != "state":
        STATE.update(supported=False, why=err.get("message", "no isolation in its results"))
    else:
        check_value(r["result"], MODES[1])
        STATE.update(supported=True, why="")


def dash_rows():
    if not STATE["supported"]:
        print(f"  {'Lua, state':<16} —   (isolation 'state' not in this binary: {STATE['why']})")


# ---- machine -----------------------------------------------------------------
PROBE_ROWS = [("cow_fault_us", "copy-on-write fault after fork", "µs per 4 KiB page",
               "a child writing one byte in each page of 64 MiB its parent wrote"),
              ("zero_fault_us", "zero-fill fault", "µs per 4 KiB page",
               "one byte written in each page of a fresh 64 MiB mmap"),
              ("fork_us", "fork(), until it returns in the parent", "µs", "a small process"),
              ("exit_wait_us", "child _exit + waitpid", "µs",
               "from waking the blocked child to its reaping"),
              ("vfork_us", "vfork + _exit + waitpid", "µs", "in all"),
              ("pipe_rtt_us", "pipe round trip to a live child", "µs", "one byte each way"),
              ("pipe_xcpu_us", "the same, child on the other CPU", "µs", "both pinned")]
MACHINE = {}


def machine():
    print("Machine (tests/bench/probe.c, medians; the costs every exec is made of):")
    if not PROBE or not os.access(PROBE, os.X_OK):
        print("  — (no probe binary: run through `make bench`, which builds it)")
        return
    out = subprocess.run([PROBE, "4" if QUICK else "1"], check=True, capture_output=True,
                         text=True, timeout=600).stdout
    MACHINE.update({k: float(v) for k, v in (l.split() for l in out.splitlines())})
    for key, what, unit, how in PROBE_ROWS:
        if key in MACHINE:
            print(f"  {what:<40} {MACHINE[key]:9.2f} {unit:<18} ({how})")


# ---- paced -------------------------------------------------------------------
def paced_section(c):
    """One request every 20 ms, ping and each level taking turns (so drift and
    other engineers' load fall on all rows alike)."""
    rows = [("ping", "ping", {}, None)] + [(m[0], "sandbox/exec", exec_params(m), m) for m in modes()]
    for _, method, params, m in rows[1:]:
        for _ in range(N_WARM // 2):
            c.rpc(method, params)
    lat = {name: [] for name, *_ in rows}
    for _ in range(N_PACED):
        for name, method, params, m in rows:
            time.sleep(0.02)
            t = time.perf_counter()
            r = c.rpc(method, params)
            lat[name].append((time.perf_counter() - t) * 1e6)
            if m is not None:
                check_value(r, m)
    ping = lat["ping"]
    print(f"Paced: {N_PACED} requests of each kind, one every 20 ms, kinds in turn, one host:")
    print(f"  {'ping':<16} p50 {med(ping):8.1f} µs   p99 {pct(ping, 0.99):8.1f} µs")
    goals = {"lua-process": "≤ 2×", "lua-state": "≤ 1.5×", "python": "≤ 3×"}
    for m in MODES:
        if m not in modes():
            dash_rows()
            continue
        x = lat[m[0]]
        ratio = med(x) / med(ping)
        RESULTS["paced/" + m[0]] = ratio
        print(f"  {m[1]:<16} p50 {med(x):8.1f} µs   p99 {pct(x, 0.99):8.1f} µs   exec/ping p50 "
              f"{ratio:5.2f}×, p99 {pct(x, 0.99) / pct(ping, 0.99):5.2f}× (goal {goals[m[0]]})")


# ---- back to back --------------------------------------------------------------
def spread(total, rounds, r):
    """How many of total fall in round r of rounds, spread evenly."""
    return (r + 1) * total // rounds - r * total // rounds


def b2b_section(c):
    """Execs one after another, in rounds of 10 per level, with the interpreter
    spawns spread over the same rounds."""
    rounds = max(1, N_EXEC // 10)
    n_py = max(10, N_SPAWN // 4)
    lat = {m[0]: [] for m in modes()}
    ping, sp_lua, sp_py = [], [], []
    for m in modes():
        for _ in range(N_WARM):
            c.call(exec_params(m))
    for r in range(rounds):
        for _ in range(10):
            ping += paced(c, "ping", {}, 1, gap=0)
        for m in modes():
            p = exec_params(m)
            for _ in range(10):
                t = time.perf_counter()
                x = c.call(p)
                lat[m[0]].append((time.perf_counter() - t) * 1e6)
                check_value(x, m)
        sp_lua += spawn_latency(LUA_SPAWN, spread(N_SPAWN, rounds, r))
        sp_py += spawn_latency(PY_SPAWN, spread(n_py, rounds, r))
    print(f"Back to back: {rounds * 10} execs per level, one host, against spawning the interpreter"
          f" ({len(sp_lua)} lua5.4, {len(sp_py)} python3.11 spawns in the same rounds):")
    print(f"  {'ping':<16} p50 {med(ping):8.1f} µs   p99 {pct(ping, 0.99):8.1f} µs   (the client's round trip)")
    print(f"  {'lua5.4 -e':<16} p50 {med(sp_lua):8.1f} µs   p99 {pct(sp_lua, 0.99):8.1f} µs   (spawn, wait)")
    print(f"  {'python3.11 -I -S':<16} p50 {med(sp_py):8.1f} µs   p99 {pct(sp_py, 0.99):8.1f} µs")
    goals = {"lua-process": "≥ 2×", "lua-state": "≥ 20×", "python": "≥ 5×"}
    for m in MODES:
        if m not in modes():
            dash_rows()
            continue
        x = lat[m[0]]
        sp = sp_py if m[2] == "python" else sp_lua
        ratio = med(sp) / med(x)
        RESULTS["b2b/" + m[0]] = ratio
        print(f"  {m[1]:<16} p50 {med(x):8.1f} µs   p99 {pct(x, 0.99):8.1f} µs   spawn/exec p50 "
              f"{ratio:6.2f}× (goal {goals[m[0]]})")


# ---- CPU and faults ------------------------------------------------------------
def oncpu_s(pid):
    """Seconds a live process has run, all its threads (schedstat's first field:
    the scheduler's own nanoseconds, not ticks), or 0 when it is gone."""
    total = 0
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0.0
    return total / 1e9


def zygotes_of(host_pid):
    out = []
    for k in host_children(host_pid):
        try:
            with open(f"/proc/{k}/comm") as f:
                if f.read().strip() == "tp-zygote":
                    out.append(k)
        except OSError:
            pass
    return out


def host_run(params, n, check=None, gap=0.0):
    """(rusage, host s, zygotes s) of a whole host tree that ran n execs of params
    and exited: the host reaps its zygotes and workers, so wait4 on it has them
    all. The host's and the zygotes' own CPU are read (schedstat) after the last
    exec, before it exits; the workers' is the rest. gap: seconds between a
    reply and the next request (0: back to back)."""
    c = Client()
    for _ in range(n):
        r = c.call(params)
        assert r["ok"], r
        if check is not None:
            check(r)
        if gap:
            time.sleep(gap)
    host_s = oncpu_s(c.p.pid)
    zyg_s = sum(oncpu_s(z) for z in zygotes_of(c.p.pid))
    c.p.stdin.close()
    _, status, ru = os.wait4(c.p.pid, 0)
    c.p.returncode = os.waitstatus_to_exitcode(status)
    return ru, host_s, zyg_s


def tree_usage(mode, n, gap=0.0):
    """(user s, system s, minor faults, host s, zygotes s) of a host that ran n
    execs of mode (host_run)."""
    ru, host_s, zyg_s = host_run(exec_params(mode), n, lambda r: check_value(r, mode), gap)
    return ru.ru_utime, ru.ru_stime, ru.ru_minflt, host_s, zyg_s


def spawn_usage(argv, n):
    """Medians of (user s, system s, total s, minor faults) of n complete spawns."""
    us, ss, tot, flt = [], [], [], []
    with open(os.devnull, "w") as null:
        for _ in range(n):
            pid = os.posix_spawn(argv[0], argv, {}, file_actions=[(os.POSIX_SPAWN_DUP2, null.fileno(), 1)])
            _, status, ru = os.wait4(pid, 0)
            assert os.waitstatus_to_exitcode(status) == 0, argv
            us.append(ru.ru_utime); ss.append(ru.ru_stime)
            tot.append(ru.ru_utime + ru.ru_stime); flt.append(ru.ru_minflt)
    return med(us), med(ss), med(tot), med(flt)


def lua_state_floor():
    """Seconds of CPU per exec of lua_state_probe (its median of 7 rounds)."""
    out = subprocess.run([LUA_STATE_PROBE], capture_output=True, text=True, check=True).stdout
    name, us = out.split()
    assert name == "lua_state_us", out
    return float(us) / 1e6


def cpu_section():
    """Per exec = (tree of K + N execs − tree of K execs) / N: the host's start,
    the zygotes' start and the K warm-up execs cancel. CPU_PAIRS pairs, the
    median of each figure."""
    k, n = N_WARM, N_EXEC
    lua = spawn_usage(LUA_SPAWN, N_SPAWN)
    py = spawn_usage(PY_SPAWN, max(10, N_SPAWN // 8))
    print(f"CPU and minor faults per exec, whole process tree (host, zygotes, workers): "
          f"(host of {k}+{n} execs − host of {k}) / {n}, median of {CPU_PAIRS} pair(s):")
    print(f"  {'lua5.4 -e spawn':<21} user {lua[0] * 1e3:6.3f} ms  sys {lua[1] * 1e3:6.3f} ms  "
          f"total {lua[2] * 1e3:6.3f} ms  faults {lua[3]:6.0f}   (wait4 of the process, median)")
    print(f"  {'python3.11 spawn':<21} user {py[0] * 1e3:6.3f} ms  sys {py[1] * 1e3:6.3f} ms  "
          f"total {py[2] * 1e3:6.3f} ms  faults {py[3]:6.0f}")
    print("  (the kernel splits a process's CPU into user and sys by tick samples: for a short"
          " process only the total is exact)")
    for m in MODES:
        if m not in modes():
            dash_rows()
            continue
        per = []
        for _ in range(CPU_PAIRS):
            a = tree_usage(m, k)
            b = tree_usage(m, k + n)
            per.append([(y - x) / n for x, y in zip(a, b)])
        u, s_, f, hs, zs = (med([p[i] for p in per]) for i in range(5))
        tot = med([p[0] + p[1] for p in per])
        ws = med([p[0] + p[1] - p[3] - p[4] for p in per])
        ref = py if m[2] == "python" else lua
        ratio = tot / ref[2]
        RESULTS["cpu/" + m[0]] = ratio
        goal = {"lua-process": "   (goal ≤ 0.35×)", "python": "   (goal ≤ 0.15×)"}.get(m[0], "")
        print(f"  {m[1] + ' exec':<21} user {u * 1e3:6.3f} ms  sys {s_ * 1e3:6.3f} ms  "
              f"total {tot * 1e3:6.3f} ms  faults {f:6.1f}   CPU {ratio:5.2f}×, faults "
              f"{f / ref[3]:5.2f}× a {'python3.11' if m[2] == 'python' else 'lua5.4'} spawn{goal}")
        print(f"  {'':<21} of which host {hs * 1e3:6.3f} ms, zygote {zs * 1e3:6.3f} ms "
              f"(the fork), workers {ws * 1e3:6.3f} ms (start to exit); at saturation "
              f"{1 / tot:,.0f} execs/s per core")
        # Paced as agents send requests: every warm worker idles past
        # REHEARSAL_IDLE_MS (sandbox/worker.c) and rehearses before its request,
        # and every wakeup is from idle. Both count against the exec served.
        pk, pn = max(10, k // 5), max(50, n // 10)
        pp = []
        for _ in range(CPU_PAIRS):
            a = tree_usage(m, pk, PACED_GAP)
            b = tree_usage(m, pk + pn, PACED_GAP)
            pp.append([(y - x) / pn for x, y in zip(a, b)])
        ptot = med([p[0] + p[1] for p in pp])
        RESULTS["cpu-paced/" + m[0]] = ptot / ref[2]
        print(f"  {'':<21} paced ({PACED_GAP * 1e3:.0f} ms between a reply and the next request,"
              f" {pk}+{pn}): {ptot * 1e3:6.3f} ms, faults {med([p[2] for p in pp]):6.1f}, "
              f"{ptot / ref[2]:5.2f}× the spawn (the rehearsal of idle warm workers and wakeups"
              f" from idle included)")
        if m[0] == "lua-state" and LUA_STATE_PROBE:
            floor = med([lua_state_floor() for _ in range(3)])
            RESULTS["cpu/lua-state/probe"] = tot / floor
            print(f"  {'':<21} against its floor, tidepool's Lua state built, run and rebuilt in"
                  f" one process (lua_state_probe): {floor * 1e3:6.3f} ms, {tot / floor:5.2f}×"
                  f" (goal ≤ 2×)")


# ---- value: returning 1,000 records ---------------------------------------------
LUA_RECORDS = ("local t = {}\nfor i = 1, 1000 do\n"
               "  t[i] = {id = i, name = 'item ' .. i, price = i * 0.25, ok = i % 2 == 0}\n"
               "end\n")
PY_RECORDS = ("t = [{'id': i, 'name': 'item %d' % i, 'price': i * 0.25, 'ok': i % 2 == 0}\n"
              "     for i in range(1, 1001)]\n")
# The same job in the plain interpreters, timed inside them: build the records and
# serialize them as JSON (Python's json module; for Lua, which has none, the
# usual pure-Lua encoder: a buffer and table.concat).
LUA_INPROC = LUA_RECORDS.replace("local t = {}\n", "local function job()\nlocal t = {}\n") + r"""
local function esc(s) return (s:gsub('[%c"\\]', function(c)
  return string.format('\\u%04x', c:byte()) end)) end
local function enc(v, b)
  local k = type(v)
  if k == 'table' then
    if #v > 0 then
      b[#b + 1] = '['
      for i = 1, #v do if i > 1 then b[#b + 1] = ',' end enc(v[i], b) end
      b[#b + 1] = ']'
    else
      b[#b + 1] = '{'
      local first = true
      for key, x in pairs(v) do
        if not first then b[#b + 1] = ',' end
        first = false
        b[#b + 1] = '"' .. esc(key) .. '":'
        enc(x, b)
      end
      b[#b + 1] = '}'
    end
  elseif k == 'string' then b[#b + 1] = '"' .. esc(v) .. '"'
  elseif k == 'number' then b[#b + 1] = math.type(v) == 'integer' and tostring(v) or string.format('%.17g', v)
  else b[#b + 1] = tostring(v) end
end
local b = {}
enc(t, b)
return #table.concat(b)
end
local n, t0 = 200, os.clock()
for _ = 1, n do job() end
print((os.clock() - t0) / n)
"""
PY_INPROC = ("import json, time\n"
             "def job():\n" + "".join("    " + l + "\n" for l in PY_RECORDS.splitlines()) +
             "    return len(json.dumps(t))\n"
             "job()\nn, t0 = 200, time.process_time()\n"
             "for _ in range(n):\n    job()\n"
             "print((time.process_time() - t0) / n)\n")


def tree_cpu(params, k, n):
    """(CPU s, host's own CPU s) per exec of params: a host of k + n execs minus one of k."""
    (a, ha, _), (b, hb, _) = host_run(params, k), host_run(params, k + n)
    return ((b.ru_utime + b.ru_stime - a.ru_utime - a.ru_stime) / n, (hb - ha) / n)


def value_section():
    """What returning 1,000 records adds to an exec (whole tree, against the same
    exec returning 1+1), against building and serializing them in the plain
    interpreter; and the host's CPU per MB of value returned."""
    k, n = N_WARM, N_EXEC // 2
    print(f"Value: returning 1,000 records (whole tree's CPU per exec, host of {k}+{n} − host of"
          f" {k}, median of {CPU_PAIRS}), against building and serializing them in-process:")
    for lang, build, ret, plain, inproc in (
            ("lua", LUA_RECORDS, "return t", [LUA, "-"], LUA_INPROC),
            ("python", PY_RECORDS, "t", [PYTHON, "-I", "-S", "-"], PY_INPROC)):
        ref = med([float(subprocess.run(plain, input=inproc, capture_output=True, text=True,
                                        check=True).stdout) for _ in range(3)])
        one = {"lang": lang, "code": "return 1+1" if lang == "lua" else "1+1"}
        rec = {"lang": lang, "code": build + ret}
        c = Client()
        r = c.call(rec)
        c.close()
        assert r["ok"] and len(r["value"]) == 1000, r
        mb = len(json.dumps(r["value"], separators=(",", ":"))) / 1e6
        base = [tree_cpu(one, k, n) for _ in range(CPU_PAIRS)]
        full = [tree_cpu(rec, k, n) for _ in range(CPU_PAIRS)]
        added = med([f[0] for f in full]) - med([b[0] for b in base])
        host_added = med([f[1] for f in full]) - med([b[1] for b in base])
        ratio = added / ref
        RESULTS["value/" + lang] = ratio
        print(f"  {lang:<7} in-process build+serialize {ref * 1e3:6.3f} ms;  an exec returning them"
              f" adds {added * 1e3:6.3f} ms of CPU ({ratio:5.2f}×, goal ≤ 2×), of which the host"
              f" {host_added * 1e3:6.3f} ms: {host_added / mb * 1e3:6.1f} ms per MB of value"
              f" ({mb * 1e3:.0f} KB)")


# ---- compute -------------------------------------------------------------------
def spawn_run(argv):
    """(wall ms, CPU ms) of one complete process, from wait4."""
    with open(os.devnull, "w") as null:
        t = time.perf_counter()
        pid = os.posix_spawn(argv[0], argv, {}, file_actions=[(os.POSIX_SPAWN_DUP2, null.fileno(), 1)])
        _, status, ru = os.wait4(pid, 0)
        wall = (time.perf_counter() - t) * 1e3
    assert os.waitstatus_to_exitcode(status) == 0, argv
    return wall, (ru.ru_utime + ru.ru_stime) * 1e3


def exec_run(c, lang, code, limits):
    """(wall ms of the client's round trip, CPU ms of the exec in its worker)."""
    t = time.perf_counter()
    r = c.call({"lang": lang, "code": code, "limits": limits})
    wall = (time.perf_counter() - t) * 1e3
    assert r["ok"], r
    return wall, r["usage"]["cpu_ms"]


def overhead(c, title, lang, code, plain_argv, empty_argv, rows, key=None):
    """The loop through tidepool against the plain interpreter running it, less
    the interpreter's own start (a spawn running nothing), taking turns. Wall:
    the client's round trip against the spawn's. CPU: the worker's CPU for the
    exec (usage.cpu_ms) against the process's (wait4). The overhead is the
    median of each turn's own ratio (a turn's rows are seconds apart, so drift
    cancels), its range beside it. On a shared machine the wall mostly measures
    the others' load, so the goal is read on CPU; both are printed."""
    plain, empty, tp = [], [], {label: [] for label, _, _ in rows}
    for _ in range(COMPUTE_REPS):
        plain.append(spawn_run(plain_argv))
        empty.append(spawn_run(empty_argv))
        for label, limits, _ in rows:
            tp[label].append(exec_run(c, lang, code, limits))
    base = [[p[i] - e[i] for p, e in zip(plain, empty)] for i in (0, 1)]
    print(f"{title}: {COMPUTE_REPS} turns, medians; wall and CPU time:")
    print(f"  plain interpreter       wall {med(base[0]):7.1f} ms   CPU {med(base[1]):7.1f} ms"
          f"   (a spawn running it less one running nothing)")
    for label, _, goal in rows:
        over = [[100 * (x[i] / b - 1) for x, b in zip(tp[label], base[i])] for i in (0, 1)]
        ow, oc = med(over[0]), med(over[1])
        if key and label == "cpu_ms only":
            RESULTS[key] = oc
            RESULTS[key + "/wall"] = ow
        print(f"  tidepool, {label:<14}wall {med([x[0] for x in tp[label]]):7.1f} ms   CPU "
              f"{med([x[1] for x in tp[label]]):7.1f} ms   overhead wall {ow:+6.1f} %, CPU {oc:+6.1f} %"
              f" [{min(over[1]):+.0f}..{max(over[1]):+.0f}]{goal}")


def compute_section(c):
    overhead(c, "Lua loop of 3e7", "lua", COMPUTE, [LUA, "-e", COMPUTE], [LUA, "-e", ""], [
        ("cpu_ms only", {"cpu_ms": 5000}, " (goal ≤ 5 %, CPU)"),
        ("instructions", {"instructions": 10**12}, "")])
    py = [PYTHON, "-I", "-S", "-c"]
    overhead(c, "Python loop of 3e6", "python", PY_COMPUTE, py + [PY_COMPUTE_CLI], py + ["pass"], [
        ("cpu_ms only", {"cpu_ms": 5000}, " (goal ≤ 10 %, CPU)"),
        ("instructions", {"instructions": 10**12}, "")], key="compute/python")
    overhead(c, "Python attributes and methods, loop of 3e5", "python", PY_OBJECTS + "s",
             py + [PY_OBJECTS + "print(s)"], py + ["pass"], [("cpu_ms only", {"cpu_ms": 5000}, "")])


# ---- data -------------------------------------------------------------------
# The same numpy + pandas work through the `data` preset and through a cold
# python3.11: deterministic data, so the reply is checked.
DATA_WORK = ("import numpy as np\nimport pandas as pd\nx = np.arange(1000)\n"
             "df = pd.DataFrame({'k': x % 7, 'v': (x * 37) % 101})\n")
DATA_CODE = DATA_WORK + "df.groupby('k')['v'].sum().tolist()"
DATA_CLI = [PYTHON, "-I", "-c", "import json\n" + DATA_WORK +
            "print(json.dumps(df.groupby('k')['v'].sum().tolist()))"]
DATA_EXPECT = [sum((i * 37) % 101 for i in range(1000) if i % 7 == k) for k in range(7)]
DATA_PARAMS = {"lang": "python", "code": DATA_CODE, "policy": "data"}
N_DATA = max(20, N_EXEC // 3)            # back-to-back data execs; N of its CPU figures
N_DATA_SPAWN = max(5, N_SPAWN // 10)     # cold python3.11 spawns (~0.4 s each)
N_DATA_START = 2 if QUICK else 4         # fresh hosts per zygote start figure


def data_missing():
    """Why the data section cannot run here ('' if it can)."""
    r = subprocess.run([PYTHON, "-I", "-c", "import numpy, pandas"], capture_output=True, text=True)
    if r.returncode != 0:
        return f"{PYTHON} cannot import numpy and pandas ({(r.stderr.strip().splitlines() or ['?'])[-1]});" \
               " make deps installs python3-numpy, python3-pandas"
    return ""


def check_data(r):
    assert r["ok"] and r["value"] == DATA_EXPECT, r


def data_spawn():
    """(wall µs, user s, sys s, minor faults) of one cold python3.11 doing the
    work, from posix_spawn to its reaping (wait4); its output is checked."""
    rd, wr = os.pipe()
    t = time.perf_counter()
    pid = os.posix_spawn(PYTHON, DATA_CLI, {}, file_actions=[(os.POSIX_SPAWN_DUP2, wr, 1)])
    os.close(wr)
    out = b""
    while True:
        b = os.read(rd, 65536)
        if not b:
            break
        out += b
    os.close(rd)
    _, status, ru = os.wait4(pid, 0)
    wall = (time.perf_counter() - t) * 1e6
    assert os.waitstatus_to_exitcode(status) == 0 and json.loads(out) == DATA_EXPECT, out
    return wall, ru.ru_utime, ru.ru_stime, ru.ru_minflt


def data_tree_usage(n):
    """tree_usage for the data exec: (user s, system s, minor faults) of a host
    that ran n of them and exited (its data zygote and workers included)."""
    c = Client()
    for _ in range(n):
        check_data(c.call(DATA_PARAMS))
    c.p.stdin.close()
    _, status, ru = os.wait4(c.p.pid, 0)
    c.p.returncode = os.waitstatus_to_exitcode(status)
    return ru.ru_utime, ru.ru_stime, ru.ru_minflt


def host_children(pid):
    kids = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                kids += [int(x) for x in f.read().split()]
        except OSError:
            pass
    return kids


def proc_info(pid):
    """(comm, maps numpy?, VmRSS KiB, PSS KiB or None) of a live process, or None."""
    try:
        with open(f"/proc/{pid}/comm") as f:
            comm = f.read().strip()
        with open(f"/proc/{pid}/status") as f:
            rss = next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
        try:
            with open(f"/proc/{pid}/maps") as f:
                numpy = "_multiarray_umath" in f.read()
        except OSError:
            numpy = None
    except (OSError, StopIteration):
        return None
    return comm, numpy, rss, pss_kb(pid)


def python_family(host_pid, data):
    """The Python zygote of a host (the data one: numpy mapped; the plain one:
    not) and its warm workers, as lists of proc_info. Workers are the host's
    children too (the zygote forks them for it)."""
    infos = [i for i in (proc_info(p) for p in host_children(host_pid)) if i is not None]
    # A Lua zygote has no libpython: 'python' distinguishes them only by cmdline,
    # so rely on size for the plain one (the Lua zygote is ~2.5 MiB, Python's ~20).
    zyg = [i for i in infos if i[0] == "tp-zygote" and i[1] is data]
    wrk = [i for i in infos if i[0] == "tp-worker" and i[1] is data]
    if not data:
        zyg = sorted(zyg, key=lambda i: i[2])[-1:]
        wrk = [i for i in wrk if i[2] > 8 * 1024]
    return zyg, wrk


def zygote_start(params, data, check):
    """Fresh hosts: from starting tidepool to the first reply of one exec (the
    host's start and the zygote's, the first worker's fork and the exec); then
    the zygote's RSS and PSS and its warm workers' PSS, once the pool is full."""
    starts, mem = [], []
    for _ in range(N_DATA_START):
        t = time.perf_counter()
        c = Client()
        check(c.call(params))
        starts.append((time.perf_counter() - t) * 1e3)
        time.sleep(0.5)
        zyg, wrk = python_family(c.p.pid, data)
        if zyg:
            mem.append((zyg[0][2], zyg[0][3], [w[3] for w in wrk if w[3] is not None],
                        [w[2] for w in wrk]))
        c.close()
    return starts, mem


def data_section():
    why = data_missing()
    print(f"Data: the `data` preset's numpy + pandas group-by of 1,000 rows, against a cold"
          f" `python3.11 -I -c` doing the same:")
    if why:
        print(f"  — skipped: {why}")
        return
    # Start-up and memory of the data zygote against the plain Python one.
    d_start, d_mem = zygote_start(DATA_PARAMS, True, check_data)
    p_start, p_mem = zygote_start({"lang": "python", "code": "1+1"}, False,
                                  lambda r: check_value(r, MODES[2]))
    print(f"  Zygote start: a fresh host to its first reply ({N_DATA_START} hosts each, median):")
    print(f"  {'plain Python, 1+1':<24} {med(p_start):8.1f} ms   (range {min(p_start):.0f}..{max(p_start):.0f})")
    print(f"  {'data preset, group-by':<24} {med(d_start):8.1f} ms   (range {min(d_start):.0f}..{max(d_start):.0f})"
          f"   {med(d_start) / med(p_start):5.1f}× plain")
    RESULTS["data/start_ms"] = med(d_start)
    for label, mem in (("plain Python zygote", p_mem), ("data zygote", d_mem)):
        if not mem:
            print(f"  {label:<24} — (not found among the host's children)")
            continue
        rss = med([m[0] for m in mem])
        pss = [m[1] for m in mem if m[1] is not None]
        wp = [x for m in mem for x in m[2]]
        wr = [x for m in mem for x in m[3]]
        pss_s = f"PSS {med(pss) / 1024:6.1f} MiB" if pss else "PSS — (smaps_rollup not readable)"
        wk = (f"; a warm worker RSS {med(wr) / 1024:5.1f} MiB, PSS {med(wp) / 1024:5.1f} MiB"
              f" ({len(wr) // len(mem)} per host)") if wr and wp else "; warm workers — (not found)"
        fam = [m[1] + sum(m[2]) for m in mem if m[1] is not None and len(m[2]) == len(m[3])]
        fam_s = (f"; zygote + warm workers PSS {med(fam) / 1024:6.1f} MiB (what the family costs)"
                 if fam else "")
        print(f"  {label:<24} RSS {rss / 1024:6.1f} MiB  {pss_s}{wk}{fam_s}")
    # Latency, one host: paced, then back to back; cold spawns taken in turns with the latter.
    c = Client()
    for _ in range(N_WARM // 2):
        check_data(c.call(DATA_PARAMS))
    pl, ping = [], []
    for _ in range(N_PACED):
        for name, method, params, out in (("ping", "ping", {}, ping), ("data", "sandbox/exec", DATA_PARAMS, pl)):
            time.sleep(0.02)
            t = time.perf_counter()
            r = c.rpc(method, params)
            out.append((time.perf_counter() - t) * 1e6)
            if name == "data":
                check_data(r)
    rounds = N_DATA_SPAWN
    b2b, spawns, cpu_ms = [], [], []
    for r_ in range(rounds):
        for _ in range(spread(N_DATA, rounds, r_)):
            t = time.perf_counter()
            r = c.call(DATA_PARAMS)
            b2b.append((time.perf_counter() - t) * 1e6)
            check_data(r)
            cpu_ms.append(r["usage"]["cpu_ms"])
        spawns.append(data_spawn())
    c.close()
    sp_wall = [s[0] for s in spawns]
    sp_tot = med([s[1] + s[2] for s in spawns])
    sp_flt = med([s[3] for s in spawns])
    print(f"  Latency: {N_PACED} paced (20 ms apart, with a ping in turn), {len(b2b)} back to back"
          f" with {len(spawns)} cold spawns in the same rounds:")
    print(f"  {'ping, paced':<24} p50 {med(ping):9.1f} µs   p99 {pct(ping, 0.99):9.1f} µs")
    print(f"  {'data exec, paced':<24} p50 {med(pl):9.1f} µs   p99 {pct(pl, 0.99):9.1f} µs")
    print(f"  {'data exec, b2b':<24} p50 {med(b2b):9.1f} µs   p99 {pct(b2b, 0.99):9.1f} µs"
          f"   (the worker's usage.cpu_ms: median {med(cpu_ms):.2f} ms)")
    print(f"  {'python3.11 -I -c, cold':<24} p50 {med(sp_wall):9.1f} µs   p99 {pct(sp_wall, 0.99):9.1f} µs"
          f"   (spawn to reaping)")
    lat_ratio = med(b2b) / med(sp_wall)
    RESULTS["data/latency"] = lat_ratio
    print(f"  data exec / cold python3.11, p50: back to back {lat_ratio:.4f}× ({1 / lat_ratio:.0f}× faster),"
          f" paced {med(pl) / med(sp_wall):.4f}×")
    # CPU and faults of the whole tree per exec, as the cpu section does.
    k, n = N_WARM, N_DATA
    per = []
    for _ in range(CPU_PAIRS):
        a = data_tree_usage(k)
        b = data_tree_usage(k + n)
        per.append([(y - x) / n for x, y in zip(a, b)])
    u, s_, f = (med([p[i] for p in per]) for i in range(3))
    tot = med([p[0] + p[1] for p in per])
    print(f"  CPU and minor faults per exec, whole tree: (host of {k}+{n} data execs − host of {k}) / {n},"
          f" median of {CPU_PAIRS} pair(s); a cold spawn's from wait4 (median of {len(spawns)}):")
    print(f"  {'python3.11 -I -c, cold':<24} user {med([s[1] for s in spawns]) * 1e3:7.2f} ms  sys "
          f"{med([s[2] for s in spawns]) * 1e3:7.2f} ms  total {sp_tot * 1e3:7.2f} ms  faults {sp_flt:7.0f}")
    cpu_ratio = tot / sp_tot
    RESULTS["data/cpu"] = cpu_ratio
    tots = [(p[0] + p[1]) * 1e3 for p in per]
    print(f"  {'data exec':<24} user {u * 1e3:7.2f} ms  sys {s_ * 1e3:7.2f} ms  total {tot * 1e3:7.2f} ms"
          f"  faults {f:7.0f}   CPU {cpu_ratio:.4f}×, faults {f / sp_flt:.3f}× a cold spawn"
          + (f" (totals {min(tots):.1f}..{max(tots):.1f} ms)" if len(tots) > 1 else ""))


# ---- phases ----------------------------------------------------------------------
PHASES = ("start", "rehearsal", "request", "exec", "reply", "exit")


def scrape_metrics(port):
    """The host's /metrics as {series: value}."""
    import http.client
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", "/metrics")
    r = c.getresponse()
    text = r.read().decode()
    c.close()
    assert r.status == 200, r.status
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            k, v = line.rsplit(" ", 1)
            out[k] = float(v)
    return out


def phases_section():
    """Where a one-shot exec's CPU goes, by process and by phase of the worker's
    life, from the host's own counters (GET /metrics: tidepool_worker_cpu_seconds_total,
    tidepool_zygote_cpu_seconds_total, process_cpu_seconds_total): one host serving
    stdio and HTTP, back-to-back execs between two scrapes, after its workers are reaped."""
    n = N_EXEC // 2
    print(f"Where a one-shot exec's CPU goes (the host's /metrics, {n} back-to-back execs after"
          f" {N_WARM}, per exec; the worker's phases by its own stamps, held to wait4):")
    print(f"  {'':<8}" + "".join(f"{p:>10}" for p in ("host", "zygote") + PHASES) + f"{'total':>10}")
    for lang, code in (("lua", "return 1+1"), ("python", "1+1")):
        h = HttpHost(jobs=2)
        try:
            for _ in range(N_WARM):
                assert h.c.call({"lang": lang, "code": code})["ok"]
            key = f'tidepool_workers_measured_total{{language="{lang}"}}'
            time.sleep(0.2)
            a = scrape_metrics(h.port)
            for _ in range(n):
                assert h.c.call({"lang": lang, "code": code})["ok"]
            deadline = time.monotonic() + 10
            while True:
                b = scrape_metrics(h.port)
                if b[key] - a[key] >= n or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            got = b[key] - a[key]
            row = {"host": (b["process_cpu_seconds_total"] - a["process_cpu_seconds_total"]) / n}
            z = f'tidepool_zygote_cpu_seconds_total{{language="{lang}"}}'
            row["zygote"] = (b[z] - a[z]) / n
            for p in PHASES:
                k = f'tidepool_worker_cpu_seconds_total{{language="{lang}",phase="{p}"}}'
                row[p] = (b[k] - a[k]) / got if got else float("nan")
            total = sum(row.values())
            print(f"  {lang:<8}" + "".join(f"{row[p] * 1e3:8.3f}ms" for p in ("host", "zygote") + PHASES) +
                  f"{total * 1e3:8.3f}ms" + ("" if got == n else f"   ({got:.0f} of {n} workers measured)"))
        finally:
            h.close()
    print("  (start: fork to locked down, faults included; exit: sending the reply, exiting and"
          " being reaped; the host's CPU includes serving the two scrapes)")


# ---- summary -------------------------------------------------------------------
# ---- HTTP ------------------------------------------------------------------------
class HttpHost:
    """One host serving stdio and --listen http:// at once: the same process, so
    the two transports are compared on the same workers."""

    def __init__(self, jobs):
        self.p = subprocess.Popen([BINARY, "--policy-dir", POLICY_DIR, "--jobs", str(jobs),
                                   "--listen", "http://127.0.0.1:0", "--drain-timeout", "0", "--queue", "100000"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={})
        line = b""
        while b"listening on" not in line:
            line = self.p.stderr.readline()
            assert line, "tidepool did not start"
        self.port = int(line.decode().rsplit(":", 1)[1].split("/")[0])
        self.c = Client.__new__(Client)  # the stdio client, on this process
        self.c.p, self.c.buf, self.c.id = self.p, b"", 0

    def close(self):
        self.p.stdin.close()  # the end of stdio's client only: the listener goes on
        self.p.send_signal(signal.SIGTERM)
        self.p.wait()


class RawHttp:
    """A keep-alive HTTP/1.1 client as lean as the stdio Client (a socket,
    bytes built once, the reply parsed by hand), so the two transports are
    compared, not two client libraries."""

    def __init__(self, port):
        import socket
        self.s = socket.create_connection(("127.0.0.1", port))
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.reqs = {}

    def _req(self, params, sse):
        key = (json.dumps(params, sort_keys=True), sse)
        if key not in self.reqs:
            body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "sandbox/exec", "params": params}).encode()
            accept = b"application/json, text/event-stream" if sse else b"application/json"
            self.reqs[key] = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                              b"Accept: " + accept + b"\r\nContent-Length: " + str(len(body)).encode() +
                              b"\r\n\r\n" + body)
        return self.reqs[key]

    def _fill(self, n=1):
        while len(self.buf) < n:
            chunk = self.s.recv(1 << 16)
            assert chunk, "connection closed"
            self.buf += chunk

    def _until(self, sep):
        while sep not in self.buf:
            self._fill(len(self.buf) + 1)
        i = self.buf.index(sep)
        out, self.buf = self.buf[:i], self.buf[i + len(sep):]
        return out

    def exec(self, params, sse):
        self.s.sendall(self._req(params, sse))
        head = self._until(b"\r\n\r\n").decode().lower()
        assert head.startswith("http/1.1 200"), head
        if "transfer-encoding: chunked" in head:
            body = b""
            while True:
                size = int(self._until(b"\r\n"), 16)
                self._fill(size + 2)
                body, self.buf = body + self.buf[:size], self.buf[size + 2:]
                if size == 0:
                    break
        else:
            n = int(head.split("content-length:")[1].split("\r\n")[0])
            self._fill(n)
            body, self.buf = self.buf[:n], self.buf[n:]
        if sse:
            body = [x for x in body.split(b"\n") if x.startswith(b"data: ")][-1][6:]
        return json.loads(body)["result"]


DATALOOP_CODE = ("import pandas as pd\ndf = pd.read_csv('big.csv')\n"
                 "r = df.groupby('g')['v'].agg(['mean', 'sum', 'count']).reset_index()\nr")
DATALOOP_PLAIN = r"""
import json, sys, time, pandas as pd
def once():
    t = time.perf_counter()
    df = pd.read_csv(sys.argv[1])
    r = df.groupby('g')['v'].agg(['mean', 'sum', 'count']).reset_index()
    json.dumps(r.to_dict('records'))
    return (time.perf_counter() - t) * 1e3
for _ in range(2):
    once()
print(json.dumps([once() for _ in range(int(sys.argv[2]))]))
"""


def big_csv(path, size=10_000_000):
    """A 10 MB CSV: an id, one of 1,000 groups, a value, a name; the same every run."""
    import random
    rnd = random.Random(1)
    with open(path, "w") as f:
        f.write("id,g,v,name\n")
        i = 0
        while f.tell() < size:
            f.write("%d,g%04d,%.3f,item%d\n" % (i, rnd.randrange(1000), rnd.random() * 1000,
                                                 rnd.randrange(100000)))
            i += 1


def dataloop_section():
    """Issue 28's loop: a 10 MB CSV put in a session, read with pandas, grouped, 1,000 rows
    back as the value; against the same work in one warm python3.11 (pandas imported,
    the file read from disk, the rows dumped as JSON)."""
    why = data_missing()
    print("Data loop: read a 10 MB CSV in a session and return a 1,000-row group-by, against"
          " the same in a warm python3.11:")
    if why:
        print(f"  — skipped: {why}")
        return
    n = 3 if QUICK else 9
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "big.csv")
        big_csv(path)
        data = open(path, "rb").read()
        c = Client()
        sid = c.rpc("sandbox/session/open", {"lang": "python", "policy": "data"})["session_id"]
        t = time.perf_counter()
        import base64
        part = 4 << 20
        for at in range(0, len(data), part):
            params = {"session_id": sid, "path": "big.csv",
                      "data": base64.b64encode(data[at:at + part]).decode()}
            if at:
                params["append"] = True
            c.rpc("sandbox/session/files/put", params)
        put_ms = (time.perf_counter() - t) * 1e3
        params = {"lang": "python", "session_id": sid, "code": DATALOOP_CODE}
        for _ in range(2):
            r = c.call(params)
            assert r["ok"] and len(r["value"]) == 1000, r
        walls, cpus = [], []
        plain = json.loads(subprocess.run([PYTHON, "-I", "-c", DATALOOP_PLAIN, path, str(n)],
                                          capture_output=True, text=True, check=True).stdout)
        for _ in range(n):
            t = time.perf_counter()
            r = c.call(params)
            walls.append((time.perf_counter() - t) * 1e3)
            assert r["ok"] and len(r["value"]) == 1000, r
            cpus.append(r["usage"]["cpu_ms"])
        c.close()
    ratio = med(walls) / med(plain)
    print(f"  put in 4 MiB parts: {put_ms:7.1f} ms for {len(data) / 1e6:.1f} MB")
    print(f"  {'tidepool session exec':<28} {med(walls):7.1f} ms wall (cpu_ms {med(cpus):.1f})"
          f"   range {min(walls):.0f}..{max(walls):.0f}")
    print(f"  {'warm python3.11, in-process':<28} {med(plain):7.1f} ms"
          f"   range {min(plain):.0f}..{max(plain):.0f}")
    print(f"  ratio {ratio:.2f}× (the goal: ≤ 1.3×)")
    RESULTS["dataloop/ratio"] = ratio


def http_section():
    """The same exec over stdio, over HTTP with keep-alive answered as JSON, and
    as an SSE stream, paced and in turns; then back-to-back throughput, stdio
    pipelined against 64 concurrent HTTP clients, on the same --jobs."""
    import threading
    jobs = os.cpu_count() or 2
    h = HttpHost(jobs)
    conn = RawHttp(h.port)
    kinds = [("lua", "Lua", {"lang": "lua", "code": "return 1+1"}),
             ("python", "Python", {"lang": "python", "code": "1+1"})]
    print(f"HTTP: paced, {N_PACED} of each, one every 20 ms in turns (one host serving stdio and "
          f"--listen http://, keep-alive; both clients read and write raw bytes):")
    for key, label, params in kinds:
        for _ in range(N_WARM // 2):
            h.c.call(params)
            conn.exec(params, False)
        lat = {"stdio": [], "json": [], "sse": []}
        for _ in range(N_PACED):
            for how in lat:
                time.sleep(0.02)
                t = time.perf_counter()
                r = h.c.call(params) if how == "stdio" else conn.exec(params, how == "sse")
                lat[how].append((time.perf_counter() - t) * 1e6)
                assert r["value"] == 2, r
        base = med(lat["stdio"])
        for how, name in (("stdio", "stdio"), ("json", "HTTP, JSON"), ("sse", "HTTP, SSE")):
            x = lat[how]
            extra = "" if how == "stdio" else f"   / stdio p50 {med(x) / base:5.2f}× (goal ≤ 1.3×)"
            print(f"  {label + ', ' + name:<20} p50 {med(x):8.1f} µs   p99 {pct(x, 0.99):8.1f} µs{extra}")
        RESULTS["http/paced/" + key] = med(lat["json"]) / base
    # Back to back: N execs pipelined on stdio; then the same N over 64 clients.
    n = max(640, N_EXEC)
    params = kinds[0][2]
    t = time.perf_counter()
    for _ in range(n):
        h.c.send("sandbox/exec", params)
    for _ in range(n):
        assert h.c.read()["result"]["value"] == 2
    stdio_rate = n / (time.perf_counter() - t)
    errors = []

    def worker(k):
        c = RawHttp(h.port)
        try:
            for _ in range(k):
                assert c.exec(params, False)["value"] == 2
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))
    threads = [threading.Thread(target=worker, args=(n // 64,)) for _ in range(64)]
    cpu0, t = time.process_time(), time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    wall = time.perf_counter() - t
    gen_cpu = (time.process_time() - cpu0) / wall
    assert not errors, errors[:3]
    http_rate = (n // 64) * 64 / wall
    RESULTS["http/b2b"] = http_rate / stdio_rate
    print(f"HTTP: back to back, Lua `return 1+1`, --jobs {jobs}: stdio pipelined {stdio_rate:8.0f} execs/s;"
          f" 64 HTTP clients {http_rate:8.0f} execs/s = {http_rate / stdio_rate:4.2f}× (goal ≥ 0.9×);"
          f" the load generator used {gen_cpu:4.2f} CPUs of {jobs} meanwhile")
    h.close()


# ---- capacity ------------------------------------------------------------------------
def tree_pss_kb(host_pid):
    """PSS of the host and every process under it (zygotes, workers)."""
    total, todo, seen = 0, [host_pid], set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        total += pss_kb(pid) or 0
        try:
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as f:
                    todo += [int(x) for x in f.read().split()]
        except OSError:
            pass
    return total


def capacity_section():
    """How many idle sessions one host holds (BENCH_ONLY=capacity; not in the
    default run): sessions opened one after another in steps up to
    BENCH_CAP_LUA and BENCH_CAP_PY, each step's open latency, and the whole
    tree's PSS per session. Stops early, saying why, at the first refusal or
    when the tree passes BENCH_CAP_MAX_GB (default 12) GiB."""
    tops = {"lua": int(os.environ.get("BENCH_CAP_LUA", "10000")),
            "python": int(os.environ.get("BENCH_CAP_PY", "1000"))}
    max_kb = float(os.environ.get("BENCH_CAP_MAX_GB", "12")) * 1024 * 1024
    d = tempfile.mkdtemp(prefix="tp-bench-cap-")
    with open(os.path.join(d, "many.json"), "w") as f:
        json.dump({"name": "many", "extends": "standard",
                   "session": {"max_sessions": 100000, "idle_ms": 86400000, "lifetime_ms": 86400000,
                               "workspace_bytes": 0}}, f)
    print(f"Capacity: idle sessions on one host, opened one after another (pid_max "
          f"{open('/proc/sys/kernel/pid_max').read().strip()}, RLIMIT_NPROC "
          f"{__import__('resource').getrlimit(__import__('resource').RLIMIT_NPROC)[0]}):")
    for lang, top in tops.items():
        c = Client(("--policy-dir", d, "--policy", "many"))
        base = tree_pss_kb(c.p.pid)
        steps = [n for n in (100, 1000, 3000, 10000, 30000) if n < top] + [top]
        opened, lat, why = 0, [], "reached the top count"
        for step in steps:
            while opened < step:
                t = time.perf_counter()
                i = c.send("sandbox/session/open", {"lang": lang})
                r = c.read()
                lat.append((time.perf_counter() - t) * 1e6)
                if "result" not in r:
                    why = f"refused at {opened + 1}: {r['error']['message']}"
                    break
                opened += 1
            time.sleep(0.5)
            pss = tree_pss_kb(c.p.pid)
            per = (pss - base) / max(opened, 1)
            print(f"  {lang:<6} {opened:6d} sessions: open p50 {med(lat):8.1f} µs, p99 {pct(lat, 0.99):8.1f} µs;"
                  f" tree PSS {pss / 1024:8.1f} MiB, {per:7.1f} KiB a session")
            if opened < step or pss > max_kb:
                if pss > max_kb:
                    why = f"stopped: the tree passed {max_kb / 1024 / 1024:.0f} GiB"
                break
        print(f"  {lang:<6} {why}")
        c.close()


SUMMARY = [("paced/lua-process", "Lua paced exec / paced ping, process", "≤ 2×", lambda x: x <= 2),
           ("paced/lua-state", "Lua paced exec / paced ping, state", "≤ 1.5×", lambda x: x <= 1.5),
           ("paced/python", "Python paced exec / paced ping", "≤ 3×", lambda x: x <= 3),
           ("b2b/lua-process", "spawning lua5.4 / Lua back-to-back exec, process", "≥ 2×", lambda x: x >= 2),
           ("b2b/lua-state", "spawning lua5.4 / Lua b2b, state", "≥ 20×", lambda x: x >= 20),
           ("b2b/python", "spawning python3.11 / Python b2b", "≥ 5×", lambda x: x >= 5),
           ("cpu/lua-process", "CPU per Lua exec, process, against a lua5.4 spawn", "≤ 0.35×",
            lambda x: x <= 0.35),
           ("cpu/lua-state/probe", "CPU per Lua exec, state, against its in-process floor", "≤ 2×",
            lambda x: x <= 2),
           ("cpu/python", "CPU per Python exec against a python3.11 spawn", "≤ 0.15×",
            lambda x: x <= 0.15),
           ("compute/python", "Python loop overhead, cpu_ms only, CPU", "≤ 10 %", lambda x: x <= 10),
           ("value/lua", "Lua: returning 1,000 records / in-process build+JSON", "≤ 2×",
            lambda x: x <= 2),
           ("value/python", "Python: returning 1,000 records / in-process build+JSON", "≤ 2×",
            lambda x: x <= 2),
           ("data/latency", "data exec b2b / cold python3.11 -c, numpy+pandas", "≤ 0.05×",
            lambda x: x <= 0.05),
           ("data/cpu", "CPU per data exec / cold python3.11 -c", "≤ 0.1×", lambda x: x <= 0.1),
           ("dataloop/ratio", "10 MB CSV group-by in a session / warm python3.11", "≤ 1.3×",
            lambda x: x <= 1.3),
           ("http/paced/lua", "Lua paced exec over HTTP (keep-alive) / over stdio", "≤ 1.3×",
            lambda x: x <= 1.3),
           ("http/paced/python", "Python paced exec over HTTP / over stdio", "≤ 1.3×", lambda x: x <= 1.3),
           ("http/b2b", "64 HTTP clients' throughput / stdio pipelined", "≥ 0.9×", lambda x: x >= 0.9)]


def summary():
    print("Goals (docs/performance.md says why each), measured in this run (— : not measured: section skipped, or"
          " isolation 'state' not in this binary):")
    rows = []
    for key, label, goal, ok in SUMMARY:
        x = RESULTS.get(key)
        shown = "—" if x is None else (f"{x:+.1f} %" if key.startswith("compute") else
                                       f"{x:.3f}×" if key.startswith("data/") else f"{x:.2f}×")
        if key.startswith("compute") and x is not None:
            label += f" (wall: {RESULTS[key + '/wall']:+.1f} %)"
        rows.append((label, shown, goal, "—" if x is None else ("yes" if ok(x) else "no")))
    w = max(len(r[0]) for r in rows)
    print(f"| {'goal row':<{w}} | {'measured':>9} | {'goal':<7} | met |")
    print(f"|{'-' * (w + 2)}|{'-' * 11}|{'-' * 9}|-----|")
    for label, shown, goal, met in rows:
        print(f"| {label:<{w}} | {shown:>9} | {goal:<7} | {met:<3} |")
    if MACHINE:
        print(f"Machine: fork {MACHINE['fork_us']:.0f} µs, exit+wait {MACHINE['exit_wait_us']:.0f} µs,"
              f" CoW fault {MACHINE['cow_fault_us']:.2f} µs/page, zero-fill fault"
              f" {MACHINE['zero_fault_us']:.2f} µs/page, pipe round trip {MACHINE['pipe_rtt_us']:.1f} µs"
              f" ({MACHINE.get('pipe_xcpu_us', float('nan')):.1f} µs across CPUs);"
              f" load average {os.getloadavg()[0]:.2f}.")


def main():
    sys.stdout.reconfigure(encoding="utf-8", line_buffering=True)
    print(f"tidepool bench: {BINARY}; {'quick' if QUICK else 'full'} run: {N_EXEC} back-to-back execs,"
          f" {N_PACED} paced requests, {N_SPAWN} spawns{'; sections ' + ','.join(sorted(ONLY)) if ONLY else ''}")
    if want("machine"):
        machine()
    if want("paced") or want("b2b") or want("cpu") or want("compute"):
        c = Client()
        detect_state(c)
        if want("paced"):
            paced_section(c)
        if want("b2b"):
            b2b_section(c)
        if want("compute"):
            compute_section(c)
        c.close()
        if want("cpu"):
            cpu_section()
    if want("phases"):
        phases_section()
    if want("value"):
        value_section()
    if want("sessions"):
        sessions(n_paced=N_PACED if QUICK else 200, n_b2b=N_EXEC, n_open=20 if QUICK else 100,
                 n_pipelined=500 if QUICK else 2000)
    if want("data"):
        data_section()
    if want("dataloop"):
        dataloop_section()
    if want("http"):
        http_section()
    if "capacity" in ONLY:  # only when asked for: it holds thousands of processes
        capacity_section()
    if any(want(x) for x in ("paced", "b2b", "cpu", "compute", "value", "data", "dataloop",
                                "http")):
        summary()


if __name__ == "__main__":
    sys.exit(main())
