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


class ProtocolViolation(AssertionError):
    pass


def check_response(line: bytes):
    """Returns the parsed message, or raises ProtocolViolation."""
    try:
        msg = json.loads(line)
    except ValueError as e:
        raise ProtocolViolation(f"not JSON on stdout: {line[:200]!r}: {e}")
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0" or "id" not in msg:
        raise ProtocolViolation(f"not a JSON-RPC response: {line[:200]!r}")
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
        self.null_id = []      # replies with id null
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
        key = json.dumps(msg["id"])
        if msg["id"] is None:
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
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                out += [int(p) for p in f.read().split()]
    except FileNotFoundError:
        pass
    return out


def proc_comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except (FileNotFoundError, ProcessLookupError):
        return None


def proc_stat(pid):
    """(state, utime+stime in clock ticks), or None when gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            s = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = s[s.rindex(")") + 2:].split()
    return fields[0], int(fields[11]) + int(fields[12])


def start_time(pid):
    """When the process started (clock ticks since boot), or None when it is gone
    (reaped: a zombie still has its entry)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            s = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return int(s[s.rindex(")") + 2:].split()[19])


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
