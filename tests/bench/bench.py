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
    def __init__(self):
        self.p = subprocess.Popen([BINARY], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env={})
        self.buf = b""
        self.id = 0

    def call(self, params):
        self.id += 1
        msg = json.dumps({"jsonrpc": "2.0", "id": self.id, "method": "sandbox/exec", "params": params})
        self.p.stdin.write(msg.encode() + b"\n")
        self.p.stdin.flush()
        while b"\n" not in self.buf:
            select.select([self.p.stdout], [], [])
            self.buf += os.read(self.p.stdout.fileno(), 1 << 20)
        line, self.buf = self.buf.split(b"\n", 1)
        r = json.loads(line)
        assert r["id"] == self.id and "result" in r, r
        return r["result"]

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


def main():
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


if __name__ == "__main__":
    sys.exit(main())
