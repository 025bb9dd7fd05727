"""Helpers for the fault suite: a strict client for the real binary.

Every line the host writes is checked as it arrives: JSON, a JSON-RPC 2.0
response (id, exactly one of result/error, error with an integer code and a
string message), and at most one reply per request id.
"""
import json
import os
import select
import signal
import subprocess
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
BINARY = os.environ.get("TIDEPOOL", os.path.join(ROOT, "build", "tidepool"))
FAKE = os.environ.get("TIDEPOOL_FAKE", os.path.join(ROOT, "build", "tests", "fake_tidepool"))
FAILALLOC_BIN = os.environ.get("TIDEPOOL_FAILALLOC_BIN", os.path.join(ROOT, "build-failalloc", "tidepool"))
ENV = {"PATH": "/usr/bin:/bin"}
PF_EXITING = 0x4  # /proc/<pid>/stat flags: the task is in do_exit
SIGKILL_BIT = 1 << (signal.SIGKILL - 1)
# Linux lists a task's children in /proc with CONFIG_PROC_CHILDREN; without it,
# children are found by scanning every process's parent.
HAVE_PROC_CHILDREN = os.path.exists(f"/proc/self/task/{os.getpid()}/children")


class ProtocolViolation(AssertionError):
    pass


def check_response(line: bytes):
    """Returns the parsed message, or raises ProtocolViolation."""
    try:
        msg = json.loads(line)
    except ValueError as e:
        raise ProtocolViolation(f"not JSON on stdout: {line[:200]!r}: {e}")
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0" or ("id" not in msg and "error" not in msg):
        raise ProtocolViolation(f"not a JSON-RPC response: {line[:200]!r}")
    if "id" in msg and msg["id"] is None:
        raise ProtocolViolation(f"id null (an unknown id is left out): {line[:200]!r}")
    if ("result" in msg) == ("error" in msg):
        raise ProtocolViolation(f"needs exactly one of result/error: {line[:200]!r}")
    if "error" in msg:
        err = msg["error"]
        if not isinstance(err, dict) or not isinstance(err.get("code"), int) or not isinstance(err.get("message"), str):
            raise ProtocolViolation(f"bad error object: {line[:200]!r}")
    if set(msg) - {"jsonrpc", "id", "result", "error"}:
        raise ProtocolViolation(f"extra members: {line[:200]!r}")
    return msg


class Host:
    def __init__(self, binary=BINARY, env=None, args=()):
        self.proc = subprocess.Popen(
            [binary, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env if env is not None else dict(ENV),
        )
        self.buf = b""
        self.replies = {}      # id -> message, not yet taken
        self.seen = {}         # id -> number of replies (ids that are hashable)
        self.null_id = []      # replies with no id (to a request whose id was unknown)
        self.lines = 0
        self.next_id = 0
        self.stderr_chunks = []
        self._err_thread = threading.Thread(target=self._drain_stderr, daemon=True)
        self._err_thread.start()

    def _drain_stderr(self):
        for chunk in iter(lambda: self.proc.stderr.read1(65536), b""):
            self.stderr_chunks.append(chunk)

    def stderr(self):
        return b"".join(self.stderr_chunks).decode(errors="replace")

    # -- wire ---------------------------------------------------------------
    def send_raw(self, data: bytes):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, obj):
        self.send_raw(json.dumps(obj).encode() + b"\n")

    def request(self, method, params=None, id=None):
        if id is None:
            self.next_id += 1
            id = self.next_id
        msg = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return id

    def exec_req(self, code, id=None, lang="lua", **params):
        return self.request("sandbox/exec", {"lang": lang, "code": code, **params}, id)

    def _take_line(self, line):
        self.lines += 1
        msg = check_response(line)
        key = json.dumps(msg.get("id"))
        if msg.get("id") is None:
            self.null_id.append(msg)
        else:
            self.seen[key] = self.seen.get(key, 0) + 1
            if self.seen[key] > 1:
                raise ProtocolViolation(f"second reply for id {key}: {line[:200]!r}")
        self.replies[key] = msg
        self._last = msg
        return msg

    def pump(self, timeout):
        """Reads what arrives within timeout; returns False at EOF."""
        r, _, _ = select.select([self.proc.stdout], [], [], max(0.0, timeout))
        if not r:
            return True
        chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
        if not chunk:
            return False
        self.buf += chunk
        *lines, self.buf = self.buf.split(b"\n")
        for line in lines:
            self._take_line(line)
        return True

    def read_msg(self, timeout=20.0):
        """The next reply in arrival order (any id)."""
        n = self.lines
        deadline = time.monotonic() + timeout
        while self.lines == n:
            if not self.pump(deadline - time.monotonic()):
                raise EOFError("tidepool closed stdout")
            if time.monotonic() > deadline:
                raise TimeoutError("no reply from tidepool")
        return self._last

    def reply(self, id, timeout=30.0):
        key = json.dumps(id)
        deadline = time.monotonic() + timeout
        while key not in self.replies:
            if not self.pump(deadline - time.monotonic()):
                raise EOFError(f"tidepool closed stdout before replying to {key}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"no reply for {key}")
        return self.replies.pop(key)

    def wait_replies(self, ids, timeout=60.0):
        return {i: self.reply(i, max(0.1, timeout)) for i in ids}

    def read_to_eof(self, timeout=60.0):
        deadline = time.monotonic() + timeout
        while self.pump(deadline - time.monotonic()):
            if time.monotonic() > deadline:
                raise TimeoutError("tidepool did not close stdout")
        if self.buf:
            self._take_line(self.buf)
            self.buf = b""

    def call(self, method, params=None, timeout=30.0):
        return self.reply(self.request(method, params), timeout)

    def exec(self, code, timeout=30.0, **params):
        r = self.reply(self.exec_req(code, **params), timeout)
        assert "result" in r, r
        return r["result"]

    # -- processes --------------------------------------------------------------
    def children(self):
        return children_of(self.proc.pid)

    def by_comm(self, comm):
        return [p for p in self.children() if proc_comm(p) == comm]

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def children_of(pid):
    out = []
    if not HAVE_PROC_CHILDREN:
        for p in os.listdir("/proc"):
            if p.isdigit():
                st = _stat_fields(p)
                if st is not None and int(st[1]) == pid:
                    out.append(int(p))
        return out
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                out += [int(p) for p in f.read().split()]
    except (FileNotFoundError, ProcessLookupError):
        pass
    return out


def proc_comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except (FileNotFoundError, ProcessLookupError):
        return None


def _stat_fields(pid):
    """/proc/<pid>/stat from field 3 (state) on, or None when gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            s = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return s[s.rindex(")") + 2:].split() if s else None


def proc_stat(pid):
    """(state, utime+stime in clock ticks), or None when gone."""
    fields = _stat_fields(pid)
    if fields is None:
        return None
    return fields[0], int(fields[11]) + int(fields[12])


def proc_start(pid):
    """Start time (clock ticks after boot), or None when gone: with the pid it
    names one process (pids are reused, pid_max can be 32768), and it orders
    processes by age where pids do not."""
    fields = _stat_fields(pid)
    return None if fields is None else int(fields[19])


def dying(pid):
    """True when pid is gone, a zombie, exiting, or has SIGKILL pending: a worker
    the host killed (at background priority) can take a while to go."""
    fields = _stat_fields(pid)
    if fields is None or fields[0] in "ZXx" or int(fields[6]) & PF_EXITING:
        return True
    try:
        with open(f"/proc/{pid}/status") as f:
            pend = [int(l.split()[1], 16) for l in f if l.startswith(("SigPnd:", "ShdPnd:"))]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return any(p & SIGKILL_BIT for p in pend)


def proc_sealed(pid):
    """A worker that finished its lockdown (its own seccomp filter on the
    zygote's), or None when gone / the kernel does not count filters."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("Seccomp_filters:"):
                    return int(line.split()[1]) >= 2
    except (FileNotFoundError, ProcessLookupError):
        return None
    return None


def wait_reaped(h, timeout=30.0):
    """Waits until no child of the host is on its way out: a worker killed from
    outside is still handed an exec until the host has reaped it (and one killed
    exits at background priority, which on a busy machine takes a while).
    Returns the children still dying after timeout."""
    deadline = time.monotonic() + timeout
    while True:
        left = [p for p in h.children() if dying(p)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.005)


def wait_quiescent(h, pool=2, timeout=30.0):
    """Waits until the host's children are its zygote(s) and at least `pool` warm
    workers, none starting (not yet renamed or sealed) or on its way out: after
    an exec the host kills the worker and refills its pool, and on a slow or
    busy machine that takes a while. Returns the children; after timeout,
    whatever they are (the caller's assertion judges)."""
    deadline = time.monotonic() + timeout
    while True:
        kids = h.children()
        comms = {p: proc_comm(p) for p in kids}
        workers = [p for p, c in comms.items() if c == "tp-worker"]
        zygotes = [p for p, c in comms.items() if c == "tp-zygote"]
        settled = (len(zygotes) == 1 and len(workers) >= pool
                   and not any(dying(p) for p in kids)
                   and all(proc_sealed(p) is not False for p in workers))
        if settled or time.monotonic() > deadline:
            return kids
        time.sleep(0.02)


def usable_cpus():
    """CPUs this process may use: its affinity, within a cgroup v2 CPU quota
    (os.cpu_count() is the machine's, which a container can be far below)."""
    n = len(os.sched_getaffinity(0))
    try:
        with open("/sys/fs/cgroup/cpu.max") as f:
            quota, period = f.read().split()
        if quota != "max":
            n = min(n, max(1, -(-int(quota) // int(period))))
    except (OSError, ValueError):
        pass
    return max(1, n)


def alive(pid):
    st = proc_stat(pid)
    return st is not None and st[0] != "Z"


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def kill_quietly(pid, sig=signal.SIGKILL):
    try:
        os.kill(pid, sig)
        return True
    except ProcessLookupError:
        return False


def assert_healthy(h):
    r = h.exec("return 1+1")
    assert r["ok"] is True, r
    assert r["value"] == 2
