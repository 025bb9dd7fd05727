"""Drives the real build/tidepool binary: JSON lines in, JSON lines out."""
import contextlib
import importlib.util
import json
import re
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

BINARY = os.environ.get("TIDEPOOL", os.path.join(os.path.dirname(__file__), "..", "..", "build", "tidepool"))

CLK_TCK = os.sysconf("SC_CLK_TCK")  # the unit of utime/stime in /proc/<pid>/stat
PF_EXITING = 0x4                     # /proc/<pid>/stat flags: the task is in do_exit
SIGKILL_BIT = 1 << (signal.SIGKILL - 1)
# Linux 3.5+ lists a task's children in /proc (CONFIG_PROC_CHILDREN); without it,
# children are found by scanning every process's parent.
HAVE_PROC_CHILDREN = os.path.exists(f"/proc/self/task/{os.getpid()}/children")


def _landlock_abi():
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    r = libc.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1))  # landlock_create_ruleset(VERSION)
    return r if r > 0 else 0


# kernel-only and file grants need Landlock; without it tidepool refuses them
# (test_policies.py::test_kernel_check_refuses_rather_than_runs_with_less tests that everywhere).
LANDLOCK_ABI = _landlock_abi()
needs_landlock = pytest.mark.skipif(
    LANDLOCK_ABI < 1, reason="this kernel has no Landlock: tidepool refuses kernel-only and file grants here")
PV = "policy_violation"


@contextlib.contextmanager
def policy_dir(prefix, policies):
    """A directory under /tmp (readable by the workers' uid) holding one
    NAME.json per entry of policies ({name: body}, the name added), removed after."""
    d = tempfile.mkdtemp(prefix=prefix, dir="/tmp")
    try:
        os.chmod(d, 0o755)
        for name, body in policies.items():
            with open(os.path.join(d, name + ".json"), "w") as f:
                json.dump({"name": name, **body}, f)
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def ok(res, value):
    """An exec result that succeeded with exactly this value."""
    assert res["ok"] is True, res
    assert res["value"] == value, res
    return res


# standard's Python modules in policies/standard.json's order (an import refusal lists
# them so), and its sessions' file facades after them: every exec under standard has them.
STANDARD_MODULES = ("math, json, re, random, datetime, collections, collections.abc, itertools, "
                    "functools, statistics, decimal, fractions, string, textwrap, heapq, bisect, "
                    "dataclasses, typing, enum, operator, copy, pprint, sys, io, csv, time, abc, "
                    "contextlib, traceback, logging, warnings, hashlib, base64, uuid, struct, "
                    "calendar, cmath, numbers, difflib, html, urllib.parse, unicodedata, zoneinfo, "
                    "queue, stat, errno, keyword, reprlib, ipaddress, tomllib, graphlib, colorsys, "
                    "fnmatch, shlex, hmac, binascii, zlib, secrets, sched, html.parser, "
                    "html.entities")
STANDARD_ALLOWED = STANDARD_MODULES + ", os, os.path, pathlib"


def import_refusal(module, policy, why, modules=STANDARD_ALLOWED):
    """An import refusal's exact text: the allowed names that fit in the 511 bytes a
    message may have, cut at a name, then how many more (pyguard.c, set_policy_msg)."""
    head = (f"import of module '{module}' is not allowed in the sandbox "
            f"(policy {policy}{why}); allowed: ")
    names = modules.split(", ")
    k, text = len(names), modules
    while len((head + text).encode()) > 511:
        k -= 1
        text = f"{', '.join(names[:k])} and {len(names) - k} more (sandbox/policy/get lists them)"
    return head + text


def said(err):
    """A refusal's message as its layer wrote it: without the " (policy P, rule R)" the host
    adds to one that does not name its policy (docs/protocol.md, error.rule); only that exact
    tail, with this error's own policy and rule, is taken off."""
    m = err["message"]
    tail = " (policy %s, rule %s)" % (err.get("policy"), err.get("rule"))
    if err.get("kind") in (PV, "sandbox_violation") and m.endswith(tail):
        return m[:-len(tail)]
    return m


def refused(res, message):
    """An exec the language layer refused, with exactly this message."""
    assert res["ok"] is False, res
    e = res["error"]
    assert (e["kind"], e["layer"], e["type"], said(e)) == (
        PV, "language", "PolicyViolation", message), res
    return e


# The data preset's packages (Debian's python3-numpy, -pandas, -matplotlib).
DATA_MISSING = [m for m in ("numpy", "pandas", "matplotlib")
                if importlib.util.find_spec(m) is None]
needs_data = pytest.mark.skipif(
    bool(DATA_MISSING), reason="not installed: %s (make deps installs python3-numpy, "
    "python3-pandas, python3-matplotlib)" % ", ".join(DATA_MISSING))


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    # Print why a test was skipped (a kernel without a feature), also under -q.
    tr = config.pluginmanager.get_plugin("terminalreporter")
    if tr is not None and "s" not in tr.reportchars:
        tr.reportchars += "s"


# -- /proc of processes that may exit while they are read ------------------------
# Workers are short-lived (one per exec) and a zygote can be killed: every read
# below returns None for a process that is gone, instead of raising.

def proc_read(pid, name, mode="rb"):
    """/proc/<pid>/<name>, or None when the process is gone."""
    try:
        with open(f"/proc/{pid}/{name}", mode) as f:
            return f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None


def proc_stat(pid):
    """state, flags, CPU time in clock ticks (utime+stime) and start time, or None."""
    s = proc_read(pid, "stat", "r")
    if not s:
        return None
    f = s[s.rindex(")") + 2:].split()  # f[0] is field 3 (state) of proc(5)
    return {"state": f[0], "flags": int(f[6]), "ticks": int(f[11]) + int(f[12]), "start": int(f[19])}


def proc_status(pid):
    """/proc/<pid>/status as a dict, or None when the process is gone."""
    s = proc_read(pid, "status", "r")
    if s is None:
        return None
    return {k: v.strip() for k, _, v in (line.partition(":") for line in s.splitlines())}


def dying(pid):
    """True when pid is gone, a zombie, exiting, or has SIGKILL pending: the host
    kills a worker it has used (at background priority, so its exit can take a
    while on a busy machine) and it is still listed meanwhile."""
    st, status = proc_stat(pid), proc_status(pid)
    if st is None or status is None or st["state"] in "ZXx" or st["flags"] & PF_EXITING:
        return True
    return any(int(status.get(k, "0"), 16) & SIGKILL_BIT for k in ("SigPnd", "ShdPnd"))


def children_of(pid):
    out = []
    if HAVE_PROC_CHILDREN:
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except FileNotFoundError:
            return []
        for task in tasks:
            try:
                with open(f"/proc/{pid}/task/{task}/children") as f:
                    out += [int(p) for p in f.read().split()]
            except (FileNotFoundError, ProcessLookupError):
                pass
        return out
    for p in os.listdir("/proc"):
        if p.isdigit():
            s = proc_read(p, "stat", "r")
            if s and int(s[s.rindex(")") + 2:].split()[1]) == pid:
                out.append(int(p))
    return out


def wait_for(cond, timeout, what):
    """Polls cond() until it returns something true; fails after timeout seconds
    (a bound for "it did not hang": generous, a slow or loaded machine or an ASan
    build must never reach it)."""
    deadline = time.monotonic() + timeout
    while True:
        r = cond()
        if r:
            return r
        if time.monotonic() > deadline:
            raise AssertionError(f"after {timeout} s: {what}")
        time.sleep(0.01)


RULE = re.compile(r"[A-Za-z0-9_.:/-]{1,96}\Z")
LANDLOCK_RIGHTS = {"read_file", "read_dir", "write_file", "make_reg", "make_dir", "remove_file",
                   "remove_dir"}


def check_refusal(err):
    """Every refusal any test of the suite sees names its layer, rule and policy, in fields
    and in the message; a kernel refusal its system call or its Landlock right (docs/protocol.md,
    error.rule). Called on every message the suite reads from tidepool: the corpus is the
    whole suite's refusals, not a list."""
    if not isinstance(err, dict) or err.get("kind") not in ("policy_violation", "sandbox_violation"):
        return
    rule, policy = err.get("rule"), err.get("policy")
    assert isinstance(rule, str) and RULE.match(rule), err
    assert isinstance(policy, str) and policy, err
    assert rule not in ("language", "kernel"), ("a refusal without its rule", err)
    assert ("policy %s" % policy) in err["message"] or ("policy '%s'" % policy) in err["message"], err
    if err["kind"] == "policy_violation":
        # The language layer's, or the host's refusal of a tool the policy does not list.
        assert (err["layer"] == "language" and not rule.startswith(("seccomp", "landlock", "tools:"))
                or err["layer"] == "host" and rule.startswith("tools:")), err
        return
    assert err["layer"] == "kernel", err
    wall, _, what = rule.partition(":")
    if wall == "seccomp":
        if err.get("syscall") not in (None, "unknown"):
            assert what == err["syscall"] and isinstance(err.get("syscall_nr"), int), err
        else:
            # A kill by SIGSYS names no call: only a blocked SIGSYS or another ABI does that.
            assert err.get("syscall") == "unknown" and what == "", err
    elif wall == "landlock":
        assert what in LANDLOCK_RIGHTS and isinstance(err.get("path"), str), err
    else:
        raise AssertionError(("a kernel refusal names neither its system call nor its right", err))


def check_refusals(msg):
    res = msg.get("result")
    if isinstance(res, dict):
        check_refusal(res.get("error"))
        sc = res.get("structuredContent")
        if isinstance(sc, dict):
            check_refusal(sc.get("error"))


class Host:
    def __init__(self, env=None, args=()):
        self.proc = subprocess.Popen(
            [BINARY, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env if env is not None else {"PATH": "/usr/bin:/bin"},
        )
        self.buf = b""
        self.pending = {}
        self.lines = []  # every line the host wrote, raw
        self.next_id = 1000

    # -- wire -------------------------------------------------------------
    def send_raw(self, data: bytes):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, obj):
        self.send_raw(json.dumps(obj).encode() + b"\n")

    def read_line(self, timeout=20.0):
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no reply from tidepool")
            r, _, _ = select.select([self.proc.stdout], [], [], left)
            if r:
                chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
                if not chunk:
                    raise EOFError("tidepool closed stdout")
                self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        self.lines.append(line)
        msg = json.loads(line)  # anything on stdout must be JSON
        assert msg.get("jsonrpc") == "2.0", line
        assert msg.get("id", 0) is not None, line  # an unknown id is left out, never null
        check_refusals(msg)
        return msg

    def reply(self, id, timeout=20.0):
        while id not in self.pending:
            msg = self.read_line(timeout)
            self.pending[msg.get("id")] = msg
        return self.pending.pop(id)

    def call(self, method, params=None, timeout=20.0):
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return self.reply(self.next_id, timeout)

    def exec(self, code, timeout=30.0, **params):
        r = self.call("sandbox/exec", {"lang": "lua", "code": code, **params}, timeout)
        assert "result" in r, r
        return r["result"]

    # -- processes ----------------------------------------------------------
    def children(self):
        return children_of(self.proc.pid)

    def zygotes(self, timeout=30.0):
        """The live zygotes, oldest first (Lua's, then Python's once it is used).
        A worker just cloned by a zygote is named tp-zygote too, until its first
        instructions rename it: while two share a command line, wait for the
        transient one to go (after timeout, all are returned)."""
        deadline = time.monotonic() + timeout
        while True:
            groups = {}
            for p in self.by_comm("tp-zygote"):
                cmd = proc_read(p, "cmdline")
                if cmd and not dying(p):
                    groups.setdefault(cmd, []).append(p)
            if all(len(g) == 1 for g in groups.values()) or time.monotonic() > deadline:
                return sorted((p for g in groups.values() for p in g),
                              key=lambda p: ((proc_stat(p) or {}).get("start", 0), p))
            time.sleep(0.01)

    def zygote_pid(self):
        zs = self.zygotes()
        return zs[0] if zs else None

    def by_comm(self, name):
        """Children whose comm is name; one that exits meanwhile is skipped."""
        out = []
        for p in self.children():
            try:
                with open(f"/proc/{p}/comm") as f:
                    if f.read().strip() == name:
                        out.append(p)
            except (FileNotFoundError, ProcessLookupError):
                pass
        return out

    def workers(self):
        """Children that are not a zygote (one per language; both run the zygote filter)."""
        return self.by_comm("tp-worker")

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def status_field(pid, name):
    """A field of /proc/<pid>/status (None when the kernel has no such field);
    raises FileNotFoundError for a process that is gone."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(name + ":"):
                return line.split(":", 1)[1].strip()
    return None


def warm_workers(h, pred=None):
    """Workers that finished their lockdown (seccomp is its last step) and are not
    on their way out."""
    ws = []
    for p in h.workers():
        status = proc_status(p)
        if status is None or status.get("Seccomp") != "2" or dying(p):
            continue
        if pred is None or pred(p):
            ws.append(p)
    return ws


def wait_warm_workers(h, n=1, timeout=30.0, pred=None, what="locked-down worker"):
    """At least n warm workers (matching pred). The pool refills after each exec:
    on a slow machine (or an ASan build) that takes a while."""
    time.sleep(0.1)  # the host kills a worker it just used: let the kill land

    def enough():
        ws = warm_workers(h, pred)
        return ws if len(ws) >= n else None
    return wait_for(enough, timeout, f"fewer than {n} warm {what}(s) among {h.workers()}")


def cpu_ticks(pid):
    st = proc_stat(pid)
    return st["ticks"] if st else None


def wait_spinning(pids_ticks, timeout=30.0, ms=50):
    """Of the warm workers pids_ticks (pid -> CPU ticks while they were idle), the
    one that was handed an exec that spins: a warm worker waits blocked and burns
    no CPU; the spinner's CPU time grows. CPU time is sampled per tick (10 ms or
    4 ms): wait for a growth of several ticks, not a fixed wall-clock sleep."""
    need = max(2, -(-ms * CLK_TCK // 1000))

    def grown():
        now = {p: cpu_ticks(p) for p in pids_ticks}
        best = max(((now[p] - t0, p) for p, t0 in pids_ticks.items() if now[p] is not None),
                   default=(0, None))
        return best[1] if best[0] >= need else None
    return wait_for(grown, timeout, f"no worker among {sorted(pids_ticks)} burnt {ms} ms of CPU")


def alive_since(ident):
    """Of ident (pid -> start time), those still alive and not zombies: the start
    time tells a pid reused by another process (pid_max can be 32768)."""
    out = []
    for p, start in ident.items():
        st = proc_stat(p)
        if st is not None and st["state"] not in "ZXx" and st["start"] == start:
            out.append(p)
    return out


def identities(pids):
    return {p: st["start"] for p in pids if (st := proc_stat(p)) is not None}


@pytest.fixture
def host():
    h = Host()
    yield h
    h.close()


@pytest.fixture(scope="module")
def shared_host():
    """One host for a whole module: later tests prove earlier ones left no trace."""
    h = Host()
    yield h
    h.close()


def assert_healthy(h):
    r = h.exec("return 1+1")
    assert r["ok"] is True, r
    assert r["value"] == 2


def state_run(h, code, **params):
    """An exec under a policy of isolation "state". After its reply a state worker
    builds its fresh state, then says READY; an exec that comes before takes another
    warm worker. A short pause lets each exec find the worker the last one used."""
    time.sleep(0.05)
    r = h.call("sandbox/exec", {"lang": "lua", "code": code, **params})
    assert "result" in r, r
    return r["result"]


def state_fresh(h):
    """Ends the reused worker (a runtime limit does), so the next exec starts at 1."""
    r = state_run(h, "while true do end", limits={"cpu_ms": 50})
    assert r["error"]["kind"] == "cpu_limit", r
    r = state_run(h, "return 1")
    assert r["isolation"] == {"level": "state", "worker_exec": 1}, r
