"""Allocation failure in the host while it serves a socket client (--listen):
for every N, the host fails its Nth allocation while a client connects, runs
execs, opens a session, lists it and half-closes; a second client then
connects and pings. Each run must end by SIGTERM with 128 + 15 (never a
crash), write only valid JSON-RPC lines to each client, answer no id twice,
answer every request correctly or with the documented out-of-memory answers,
and leave the socket file removed. A connection the host could not afford is
closed without a byte."""
import json
import os
import signal
import socket
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from faultlib import ENV, FAILALLOC_BIN, ProtocolViolation, check_response, usable_cpus
from test_failalloc import out_of_memory

pytestmark = pytest.mark.skipif(not os.path.exists(FAILALLOC_BIN), reason="build with `make FAILALLOC=1` first")


def rq(id, method, params=None):
    m = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        m["params"] = params
    return json.dumps(m).encode() + b"\n"


FIRST = [
    (rq(1, "ping"), lambda m: m["result"] == {}),
    (rq(2, "sandbox/exec", {"lang": "lua", "code": "return 6*7"}),
     lambda m: m["result"]["ok"] is True and m["result"]["value"] == 42),
    (rq(3, "sandbox/session/open", {"lang": "lua"}),
     lambda m: m["result"]["session_id"].startswith("s-")),
    (rq(4, "sandbox/session/list"), lambda m: len(m["result"]["sessions"]) <= 1),
    (rq(5, "sandbox/exec", {"lang": "lua", "code": "error('x')"}),
     lambda m: m["result"]["error"]["kind"] == "runtime_error"),
]
SECOND = [(rq(1, "ping"), lambda m: m["result"] == {})]


def talk(path, lines, timeout=20):
    """Connects, sends, half-closes, reads to EOF; None when the connection
    could not be made or was closed at once (the host had no memory for it)."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(timeout)
    deadline = time.monotonic() + 5
    while True:  # the file appears at bind(), a moment before listen()
        try:
            s.connect(path)
            break
        except (ConnectionRefusedError, FileNotFoundError):
            if time.monotonic() > deadline:
                s.close()
                return None
            time.sleep(0.002)
    try:
        s.sendall(b"".join(line for line, _ in lines))
        s.shutdown(socket.SHUT_WR)
        out = b""
        while True:
            chunk = s.recv(1 << 16)
            if not chunk:
                return out
            out += chunk
    except (ConnectionResetError, BrokenPipeError):
        return None
    finally:
        s.close()


def judge_lines(where, out, lines):
    problems = []
    checks = {json.loads(line)["id"]: check for line, check in lines}
    seen = set()
    if out is None or out == b"":
        return problems  # closed without a byte: the host could not afford it
    if not out.endswith(b"\n"):
        problems.append(f"{where}: unterminated last line {out[-200:]!r}")
    for line in out.split(b"\n")[:-1]:
        try:
            m = check_response(line)
        except ProtocolViolation as e:
            problems.append(f"{where}: {e}")
            continue
        i = m.get("id")
        if i in seen:
            problems.append(f"{where}: two replies for id {i}")
        seen.add(i)
        if out_of_memory(m):
            continue
        if i not in checks:
            problems.append(f"{where}: reply for an id never sent: {line[:200]!r}")
            continue
        try:
            good = checks[i](m)
        except (KeyError, TypeError, IndexError, ValueError):
            good = False
        if not good:
            problems.append(f"{where}: wrong answer: {line[:300]!r}")
    return problems


def judge(fail_at):
    """(problems, allocation count)."""
    where = f"socket N={fail_at}"
    d = tempfile.mkdtemp(prefix="tp-fa-sock-", dir="/tmp")
    path = os.path.join(d, "s")
    env = dict(ENV, TIDEPOOL_FAILALLOC=str(fail_at))
    p = subprocess.Popen([FAILALLOC_BIN, "--listen", "unix:" + path], stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    problems = []
    try:
        deadline = time.monotonic() + 10
        while not os.path.exists(path) and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        if os.path.exists(path):
            problems += judge_lines(where + " first", talk(path, FIRST), FIRST)
            problems += judge_lines(where + " second", talk(path, SECOND), SECOND)
            p.send_signal(signal.SIGTERM)
        try:
            out, err = p.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            return problems + [f"{where}: hung (killed)"], None
    finally:
        if p.poll() is None:
            p.kill()
    err = err.decode(errors="replace")
    # Out of memory before the socket existed: exit 2 with its message.
    started = "Cannot allocate memory" not in err or p.returncode != 2
    if started and p.returncode != 128 + signal.SIGTERM and p.returncode != 2:
        problems.append(f"{where}: exit status {p.returncode}")
    if out != b"":
        problems.append(f"{where}: bytes on stdout, whose client sent nothing: {out[:200]!r}")
    if os.path.exists(path):
        problems.append(f"{where}: the socket file was left behind")
    try:
        os.rmdir(d)
    except OSError:
        pass
    count = None
    for line in err.splitlines():
        if line.startswith("tidepool: failalloc: "):
            count = int(line.split()[2])
    if count is None:
        problems.append(f"{where}: no allocation count on stderr (exit {p.returncode})")
    return problems, count


def test_unarmed_run_is_correct():
    problems, count = judge(0)
    assert problems == []
    assert count and count > 10


def test_every_allocation_failure_is_survived_on_a_socket():
    _, total = judge(0)
    last = total + total // 4
    jobs = int(os.environ.get("FAILALLOC_JOBS", usable_cpus()))
    problems = []
    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for probs, _ in pool.map(judge, range(1, last + 1)):
            problems += probs
    print(f"\nfailalloc socket: {last} runs in {time.monotonic() - t0:.1f} s")
    assert problems == [], "\n".join(problems[:40]) + f"\n({len(problems)} problems)"
