#!/usr/bin/env python3
"""Soak: N mixed execs through one host, pipelined in batches.

The mix: successes, output, runtime and syntax errors, instruction, memory,
CPU, wall-clock and output limits (small budgets, so it stays fast), tools/call,
protocol faults, and one crash per batch (the test sends SIGSEGV to the worker
running `while true do end`). Every reply is checked against its expected
verdict, exactly one per id. After each batch, when nothing is in flight, the
host's RSS, open fds and children are sampled; the run fails when they grow
beyond the tolerances below. Usage: soak.py [-n N] [--batch B] [--every E].
"""
import argparse
import json
import os
import random
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BINARY = os.environ.get("TIDEPOOL", os.path.join(HERE, "..", "..", "build", "tidepool"))

# Growth allowed between the first sample (after one warm-up batch) and any later one.
RSS_TOLERANCE_KB = 8 * 1024
FD_TOLERANCE = 2
CHILD_TOLERANCE = 2
POOL_SIZE = 2  # the host's warm workers per language
PAGES_KEPT = 8  # TP_PAGES_KEPT in host/pages.h
# A worker with this much CPU is the crash target (others stop at 20 or 30 ms).
# /proc/<pid>/stat counts CPU in clock ticks (SC_CLK_TCK per second).
CRASH_CPU_MS = 60
CLK_TCK = os.sysconf("SC_CLK_TCK")
CRASH_CPU_TICKS = -(-CRASH_CPU_MS * CLK_TCK // 1000)
PF_EXITING = 0x4  # /proc/<pid>/stat flags: the task is in do_exit
SIGKILL_BIT = 1 << (signal.SIGKILL - 1)
HAVE_PROC_CHILDREN = os.path.exists(f"/proc/self/task/{os.getpid()}/children")


def proc_read(pid, name):
    """/proc/<pid>/<name>, or None when the process has gone meanwhile (workers
    live for one exec)."""
    try:
        with open(f"/proc/{pid}/{name}") as f:
            return f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None


def stat_fields(pid):
    """/proc/<pid>/stat from field 3 (state) on, or None when gone."""
    s = proc_read(pid, "stat")
    return s[s.rindex(")") + 2:].split() if s else None


def dying(pid, fields):
    """Gone, a zombie, exiting, or with SIGKILL pending (the host kills a worker
    once it has its reply, at background priority: its exit can take a while)."""
    if fields is None or fields[0] in "ZXx" or int(fields[6]) & PF_EXITING:
        return True
    status = proc_read(pid, "status")
    if status is None:
        return True
    return any(int(l.split()[1], 16) & SIGKILL_BIT
               for l in status.splitlines() if l.startswith(("SigPnd:", "ShdPnd:")))


def sealed(pid):
    """False for a worker that has not finished its lockdown (one seccomp filter,
    the zygote's); True after; None when gone or the kernel does not say."""
    status = proc_read(pid, "status")
    for l in (status or "").splitlines():
        if l.startswith("Seccomp_filters:"):
            return int(l.split()[1]) >= 2
    return None


def kind_is(kind):
    return lambda r: r["ok"] is False and r["error"]["kind"] == kind


def value_is(v):
    return lambda r: r["ok"] is True and r["value"] == v


# (weight, name, params-builder(i), check(i) -> predicate on the exec result)
MIX = [
    (40, "ok", lambda i: {"code": f"return {i}"}, lambda i: value_is(i)),
    (10, "print", lambda i: {"code": f"print('line {i}') return true"},
     lambda i: lambda r: r["ok"] and r["stdout"] == f"line {i}\n"),
    (8, "inputs", lambda i: {"code": "return x + 1", "inputs": {"x": i}}, lambda i: value_is(i + 1)),
    (8, "runtime_error", lambda i: {"code": f"error('e{i}')"}, lambda i: kind_is("runtime_error")),
    (5, "syntax_error", lambda i: {"code": "return +"}, lambda i: kind_is("syntax_error")),
    (6, "instruction_limit", lambda i: {"code": "while true do end", "limits": {"instructions": 5000}},
     lambda i: kind_is("instruction_limit")),
    (5, "memory_limit", lambda i: {"code": "local t = {} for j = 1, 1e7 do t[j] = j end",
                                   "limits": {"memory_bytes": 1 << 20}},
     lambda i: kind_is("memory_limit")),
    (2, "cpu_limit", lambda i: {"code": "while true do end", "limits": {"cpu_ms": 20}},
     lambda i: kind_is("cpu_limit")),
    (1, "timeout", lambda i: {"code": "local s = 0 while true do s = s + 1 end", "limits": {"wall_ms": 30, "cpu_ms": 1000}},
     # it runs past its 30 ms (timeout), or, queued behind the load for 1 s (the floor), never
     # starts and says so (queue_timeout, nothing run)
     lambda i: lambda r: r["ok"] is False and (
         r["error"]["kind"] in ("timeout", "cpu_limit") or
         (r["error"]["kind"] == "queue_timeout" and r["usage"]["wall_ms"] == 0 and
          r["error"]["limit"]["used"] >= 1000))),
    (4, "output_limit", lambda i: {"code": "for j = 1, 1e6 do io.write('xxxxxxxx') end",
                                   "limits": {"output_bytes": 1000}},
     lambda i: kind_is("output_limit")),
    (5, "tool", None, None),
    (3, "bad_line", None, None),
    (3, "bad_params", None, None),
]
WEIGHTS = [m[0] for m in MIX]


class Soak:
    def __init__(self, n, batch, every, seed):
        self.n, self.batch, self.every = n, batch, every
        self.rng = random.Random(seed)
        self.proc = subprocess.Popen([BINARY], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     env={"PATH": "/usr/bin:/bin"})
        self.buf = b""
        self.counts = {}
        self.samples = []  # (execs done, rss KB, fds, children)
        self.failures = []
        self.next_id = 0

    # -- wire --------------------------------------------------------------------
    def read_until(self, want, null_want, timeout=120):
        got, nulls = {}, []
        deadline = time.monotonic() + timeout
        while len(got) < len(want) or len(nulls) < null_want:
            if time.monotonic() > deadline:
                raise TimeoutError(f"missing replies: {sorted(set(want) - set(got))[:10]}")
            chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
            if not chunk:
                raise EOFError("the host closed stdout")
            self.buf += chunk
            *lines, self.buf = self.buf.split(b"\n")
            for line in lines:
                m = json.loads(line)
                assert m.get("jsonrpc") == "2.0" and ("result" in m) != ("error" in m), line[:200]
                assert "id" not in m or m["id"] is not None, line[:200]  # an unknown id is left out
                if "id" not in m:
                    nulls.append(m)
                elif m["id"] in got or m["id"] not in want:
                    raise AssertionError(f"unexpected or second reply: {line[:200]!r}")
                else:
                    got[m["id"]] = m
        return got, nulls

    # -- one batch ---------------------------------------------------------------
    def make(self, i):
        w, name, params, check = MIX[self.rng.choices(range(len(MIX)), WEIGHTS)[0]]
        id = f"x{i}"
        if name == "tool":
            msg = {"jsonrpc": "2.0", "id": id, "method": "tools/call",
                   "params": {"name": "run_lua", "arguments": {"code": f"return {i} * 2"}}}
            return name, id, json.dumps(msg).encode(), \
                lambda m: m["result"]["isError"] is False and m["result"]["structuredContent"]["value"] == 2 * i
        if name == "bad_line":
            return name, None, b'{"jsonrpc":"2.0","id":' + str(i).encode() + b',"method":', None
        if name == "bad_params":
            msg = {"jsonrpc": "2.0", "id": id, "method": "sandbox/exec",
                   "params": {"lang": "lua", "code": "return 1", "limits": {"cpu_ms": 10 ** 9}}}
            return name, id, json.dumps(msg).encode(), lambda m: m["error"]["code"] == -32602
        msg = {"jsonrpc": "2.0", "id": id, "method": "sandbox/exec", "params": {"lang": "lua", **params(i)}}
        pred = check(i)
        return name, id, json.dumps(msg).encode(), lambda m: "result" in m and pred(m["result"])

    def crash_target(self):
        """The worker running `while true do end`: the one that has burnt the most
        CPU, if that is at least CRASH_CPU_MS. A worker the host has killed (at
        its wall-clock limit, say) is not a candidate, however much it burnt."""
        best, target = CRASH_CPU_TICKS - 1, None
        for pid in self.children():
            if (proc_read(pid, "comm") or "").strip() != "tp-worker":
                continue
            fields = stat_fields(pid)
            if dying(pid, fields):
                continue
            ticks = int(fields[11]) + int(fields[12])
            if ticks > best:
                best, target = ticks, pid
        return target

    def run_batch(self, start, count):
        lines, checks, names, nulls = [], {}, {}, 0
        crash_id = f"crash{start}"
        lines.append(json.dumps({"jsonrpc": "2.0", "id": crash_id, "method": "sandbox/exec",
                                 "params": {"lang": "lua", "code": "while true do end"}}).encode())
        for i in range(start, start + count - 1):
            name, id, line, check = self.make(i)
            lines.append(line)
            names[id] = name
            if id is None:
                nulls += 1
            else:
                checks[id] = check
        self.proc.stdin.write(b"\n".join(lines) + b"\n")
        self.proc.stdin.flush()
        deadline = time.monotonic() + 30
        pid = None
        while pid is None and time.monotonic() < deadline:
            pid = self.crash_target()
            if pid is None:
                time.sleep(0.005)
        if pid is None:
            self.failures.append(f"batch {start}: no crash target found")
        else:
            os.kill(pid, signal.SIGSEGV)
        got, null_msgs = self.read_until(set(checks) | {crash_id}, nulls)
        crash = got.pop(crash_id)["result"]
        self.tally("crash", crash["ok"] is False and crash["error"]["kind"] == "crashed"
                   and crash["error"].get("signal") == "SIGSEGV", crash)
        for id, m in got.items():
            self.tally(names[id], checks[id](m), m)
        for m in null_msgs:
            self.tally("bad_line", m["error"]["code"] == -32700, m)

    def tally(self, name, good, msg):
        c = self.counts.setdefault(name, [0, 0])
        c[0 if good else 1] += 1
        if not good and len(self.failures) < 20:
            self.failures.append(f"{name}: {json.dumps(msg)[:300]}")

    # -- figures -------------------------------------------------------------------
    def children(self):
        pid = self.proc.pid
        out = []
        if not HAVE_PROC_CHILDREN:  # a kernel without CONFIG_PROC_CHILDREN
            for p in os.listdir("/proc"):
                if p.isdigit() and (f := stat_fields(p)) is not None and int(f[1]) == pid:
                    out.append(int(p))
            return out
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                out += [int(p) for p in f.read().split()]
        return out

    def settle(self, timeout=30.0):
        """Waits until the host's children are its zygote and a warm pool, none
        starting or on its way out: the host kills each worker it used (at
        background priority) and refills its pool, and on a slow or busy machine
        that outlasts any fixed pause. A leaked child stays, and is counted."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            kids = self.children()
            comms = [(p, (proc_read(p, "comm") or "").strip()) for p in kids]
            workers = [p for p, c in comms if c == "tp-worker"]
            if (sum(c == "tp-zygote" for _, c in comms) == 1 and len(workers) >= POOL_SIZE
                    and not any(dying(p, stat_fields(p)) for p in kids)
                    and all(sealed(p) is not False for p in workers)):
                return
            time.sleep(0.01)

    def sample(self, done):
        pid = self.proc.pid
        self.settle()
        with open(f"/proc/{pid}/status") as f:
            rss = next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
        # The workers' pages (host/pages.c) are counted apart: one a live
        # worker, and at most PAGES_KEPT of reaped workers' kept for the next,
        # a bounded cache whose fill depends on the mix, not a leak.
        fds = pages = 0
        for f in os.listdir(f"/proc/{pid}/fd"):
            try:
                page = os.readlink(f"/proc/{pid}/fd/{f}").startswith("/memfd:tidepool-page")
            except OSError:
                continue
            pages += page
            fds += not page
        children = self.children()
        if pages > len(children) + PAGES_KEPT:
            self.failures.append(f"after {done} execs: {pages} pages held for "
                                 f"{len(children)} children (at most {PAGES_KEPT} kept)")
        self.samples.append((done, rss, fds, len(children)))

    def run(self, t0, done):
        next_sample = done + self.every
        while done < self.n:
            count = min(self.batch, self.n - done)
            self.run_batch(done, count)
            done += count
            if done >= next_sample or done >= self.n:
                self.sample(done)
                next_sample = done + self.every
        elapsed = time.monotonic() - t0
        self.proc.stdin.close()
        rc = self.proc.wait(timeout=30)
        return elapsed, rc

    def report(self, elapsed, rc):
        print(f"soak: {self.n} execs in {elapsed:.1f} s ({self.n / elapsed:.0f}/s), host exit {rc}")
        for name, (good, bad) in sorted(self.counts.items()):
            print(f"  {name:18} {good:7} ok {bad:5} wrong")
        ok = rc == 0 and not self.failures
        base = self.samples[0]
        for col, label, tol in ((1, "rss KB", RSS_TOLERANCE_KB), (2, "fds", FD_TOLERANCE),
                                (3, "children", CHILD_TOLERANCE)):
            vals = [s[col] for s in self.samples]
            grew = max(vals) - base[col]
            flag = "ok" if grew <= tol else f"GREW by {grew} > {tol}"
            print(f"  {label:9} first {vals[0]:7} max {max(vals):7} last {vals[-1]:7}  "
                  f"(tolerance +{tol}; {len(vals)} samples) {flag}")
            ok &= grew <= tol
        for f in self.failures:
            print("  FAIL", f)
        return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=100000)
    ap.add_argument("--batch", type=int, default=200)
    ap.add_argument("--every", type=int, default=1000, help="sample every this many execs")
    ap.add_argument("--seed", type=int, default=5)
    a = ap.parse_args()
    s = Soak(a.n, a.batch, a.every, a.seed)
    try:
        t0 = time.monotonic()
        warm = min(a.batch, a.n)
        s.run_batch(0, warm)  # warm-up: buffers reach their working size, then the first sample
        s.sample(warm)
        elapsed, rc = s.run(t0, warm)
    finally:
        if s.proc.poll() is None:
            s.proc.kill()
    sys.exit(0 if s.report(elapsed, rc) else 1)


if __name__ == "__main__":
    main()
