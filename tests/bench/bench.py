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
N_EXEC = int(os.environ.get("BENCH_N", "1000"))
N_SPAWN = int(os.environ.get("BENCH_SPAWN", "200"))
COMPUTE = "local s = 0 for i = 1, 3e7 do s = s + i % 7 end return s"


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


def warm_latency(c):
    for _ in range(50):
        c.call({"lang": "lua", "code": "return 1+1"})
    lat = []
    for _ in range(N_EXEC):
        t = time.perf_counter()
        r = c.call({"lang": "lua", "code": "return 1+1"})
        lat.append((time.perf_counter() - t) * 1e6)
        assert r["value"] == 2
    return lat


def spawn_latency(argv, n):
    lat = []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        lat.append((time.perf_counter() - t) * 1e6)
    return lat


def compute(c, limits, reps=5):
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        r = c.call({"lang": "lua", "code": COMPUTE, "limits": limits})
        times.append((time.perf_counter() - t) * 1e3)
        assert r["ok"], r
    return statistics.median(times)


def main():
    c = Client()
    lat = warm_latency(c)
    spawn = spawn_latency([LUA, "-e", "return 1+1"], N_SPAWN)
    med, p99, sp = statistics.median(lat), pct(lat, 0.99), statistics.median(spawn)
    print(f"warm exec 'return 1+1' through one host, {N_EXEC} sequential requests:")
    print(f"  tidepool   median {med:8.1f} us   p99 {p99:8.1f} us")
    print(f"  lua5.4 -e  median {sp:8.1f} us   (spawn of a fresh interpreter, {N_SPAWN} runs)")
    print(f"  ratio      {sp / med:8.1f}x faster than spawning lua5.4 (goal: >= 10x)")

    plain = statistics.median(spawn_latency([LUA, "-e", COMPUTE], 5)) / 1e3
    cpu_only = compute(c, {"cpu_ms": 5000})
    instr = compute(c, {"instructions": 10**12})
    print(f"compute-heavy snippet ({COMPUTE!r}), median of 5:")
    print(f"  plain lua5.4            {plain:8.1f} ms")
    print(f"  tidepool, cpu_ms only   {cpu_only:8.1f} ms   overhead {100 * (cpu_only / plain - 1):+6.1f}% (goal: <= 5%)")
    print(f"  tidepool, instructions  {instr:8.1f} ms   overhead {100 * (instr / plain - 1):+6.1f}%")
    c.close()


if __name__ == "__main__":
    sys.exit(main())
