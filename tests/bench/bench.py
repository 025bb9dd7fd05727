#!/usr/bin/env python3
"""make bench: tidepool's latency and limit overhead beside plain lua5.4, measured
in the same run on the same machine. Prints figures and ratios; asserts nothing."""
import json
import os
import select
import statistics
import subprocess
import sys
import time

BINARY = os.environ.get("TIDEPOOL", "build/tidepool")
LUA = "/usr/bin/lua5.4"
PYTHON = "/usr/bin/python3.11"  # named explicitly: the python3 on PATH may be a pyenv shim
N_EXEC = int(os.environ.get("BENCH_N", "1000"))
N_SPAWN = int(os.environ.get("BENCH_SPAWN", "200"))
COMPUTE = "local s = 0 for i = 1, 3e7 do s = s + i % 7 end return s"
PY_COMPUTE = "s = 0\nfor i in range(3_000_000):\n    s += i % 7\ns"
PY_COMPUTE_CLI = "s = 0\nfor i in range(3_000_000):\n    s += i % 7\nprint(s)"
# Attribute loads and method calls: what the attribute guard costs (docs/python.md).
PY_OBJECTS = ("class P:\n    def __init__(self, x):\n        self.x = x\n    def get(self):\n"
              "        return self.x\nps = [P(i) for i in range(1000)]\nl = []\ns = 0\n"
              "for _ in range(300):\n    for p in ps:\n        s += p.x + p.get()\n        l.append(s)\n"
              "    l.clear()\n")


class Client:
    def __init__(self, args=()):
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


def warm_latency(c, lang, code):
    for _ in range(50):
        c.call({"lang": lang, "code": code})
    lat = []
    for _ in range(N_EXEC):
        t = time.perf_counter()
        r = c.call({"lang": lang, "code": code})
        lat.append((time.perf_counter() - t) * 1e6)
        assert r["value"] == 2, r
    return lat


def spawn_latency(argv, n):
    lat = []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        lat.append((time.perf_counter() - t) * 1e6)
    return lat


def compute(c, limits, reps=5, lang="lua", code=COMPUTE):
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        r = c.call({"lang": lang, "code": code, "limits": limits})
        times.append((time.perf_counter() - t) * 1e3)
        assert r["ok"], r
    return statistics.median(times)


def report_latency(name, lat, spawn, spawn_name, goal):
    med, p99, sp = statistics.median(lat), pct(lat, 0.99), statistics.median(spawn)
    print(f"{name}: warm exec through one host, {N_EXEC} sequential requests:")
    print(f"  tidepool   median {med:8.1f} us   p99 {p99:8.1f} us")
    print(f"  {spawn_name:<10} median {sp:8.1f} us   (spawn of a fresh interpreter, {len(spawn)} runs)")
    print(f"  ratio      {sp / med:8.1f}x faster than spawning (goal: >= {goal}x)")


def report_overhead(name, plain, rows):
    print(f"{name}: compute-heavy snippet, median of 5:")
    print(f"  plain interpreter       {plain:8.1f} ms")
    for label, ms, goal in rows:
        print(f"  tidepool, {label:<14}{ms:8.1f} ms   overhead {100 * (ms / plain - 1):+6.1f}%{goal}")


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


def sessions(n_paced=200, n_b2b=1000, n_open=100):
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
    spawn = {"lua": spawn_latency([LUA, "-e", "return 1+1"], N_SPAWN // 2),
             "python": spawn_latency([PYTHON, "-I", "-S", "-c", "print(1+1)"], max(20, N_SPAWN // 8))}
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
        print(f"  {lang:<6} ten execs in one session: {ten:8.1f} us in all (Monty's anchor: 400 us)")
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
        n = 2000
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


def main():
    if os.environ.get("BENCH_ONLY") == "sessions":
        return sessions()
    c = Client()
    report_latency("Lua 'return 1+1'", warm_latency(c, "lua", "return 1+1"),
                   spawn_latency([LUA, "-e", "return 1+1"], N_SPAWN), "lua5.4 -e", 10)
    plain = statistics.median(spawn_latency([LUA, "-e", COMPUTE], 5)) / 1e3
    report_overhead("Lua " + repr(COMPUTE), plain, [
        ("cpu_ms only", compute(c, {"cpu_ms": 5000}), " (goal: <= 5%)"),
        ("instructions", compute(c, {"instructions": 10**12}), "")])

    report_latency("Python '1+1'", warm_latency(c, "python", "1+1"),
                   spawn_latency([PYTHON, "-I", "-S", "-c", "print(1+1)"], max(20, N_SPAWN // 4)),
                   "python3.11", 20)
    plain = statistics.median(spawn_latency([PYTHON, "-I", "-S", "-c", PY_COMPUTE_CLI], 5)) / 1e3
    report_overhead("Python loop of 3e6", plain, [
        ("cpu_ms only", compute(c, {"cpu_ms": 5000}, lang="python", code=PY_COMPUTE), " (goal: <= 10%)"),
        ("instructions", compute(c, {"instructions": 10**12}, lang="python", code=PY_COMPUTE), "")])
    plain = statistics.median(spawn_latency([PYTHON, "-I", "-S", "-c", PY_OBJECTS + "print(s)"], 5)) / 1e3
    report_overhead("Python attributes and methods, loop of 3e5", plain, [
        ("cpu_ms only", compute(c, {"cpu_ms": 5000}, lang="python", code=PY_OBJECTS + "s"), "")])
    c.close()
    sessions()


if __name__ == "__main__":
    sys.exit(main())
