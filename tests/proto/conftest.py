"""Drives the real build/tidepool binary: JSON lines in, JSON lines out."""
import json
import os
import select
import signal
import subprocess
import time

import pytest

BINARY = os.environ.get("TIDEPOOL", os.path.join(os.path.dirname(__file__), "..", "..", "build", "tidepool"))


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
        out = []
        for task in os.listdir(f"/proc/{self.proc.pid}/task"):
            with open(f"/proc/{self.proc.pid}/task/{task}/children") as f:
                out += [int(p) for p in f.read().split()]
        return out

    def zygote_pid(self):
        for pid in self.children():
            try:
                with open(f"/proc/{pid}/comm") as f:
                    if f.read().strip() == "tp-zygote":
                        return pid
            except FileNotFoundError:
                pass
        return None

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
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(name + ":"):
                return line.split(":", 1)[1].strip()
    return None


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
