"""How tidepool ends, one rule for every client (README "Ending a session",
docs/protocol.md, tidepool(1), --help):

- EOF on stdin means "no more requests": what is in flight is finished and
  answered, then tidepool exits 0. A tool call can no longer be answered, so
  the code waiting on one gets an error at once.
- A client that is gone (its end of stdout closed) gets everything cancelled
  and a prompt exit, status 0.
- SIGTERM or SIGINT cancels everything: a native exec is answered cancelled,
  a tools/call is not answered (as under notifications/cancelled); exit status
  128 + the signal, within 0.5 s.
- SIGHUP reopens the --audit file and changes nothing else.
"""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from conftest import BINARY, Host, alive_since, identities, wait_for

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "smoke", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
SPIN_LUA = "while true do end"
SPIN_PY = "while True: pass"


def lines(*msgs):
    return b"".join(json.dumps(m).encode() + b"\n" for m in msgs)


def replies(raw):
    return [json.loads(l) for l in raw.splitlines() if l]


def tool_call(id, name, code, **args):
    return {"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": {"code": code, **args}}}


def exec_req(id, code, lang="lua", **params):
    return {"jsonrpc": "2.0", "id": id, "method": "sandbox/exec",
            "params": {"lang": lang, "code": code, **params}}


# -- EOF: finish what is in flight, answer it, exit 0 ----------------------------------

def test_the_mcp_smoke_test_gets_both_replies():
    # printf '<initialize>\n<tools/call>\n' | tidepool: the usual first try
    p = subprocess.run([BINARY], input=lines(INIT, tool_call(2, "run_python", "6*7")),
                       capture_output=True, timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert p.returncode == 0, p.stderr
    rs = replies(p.stdout)
    assert [r["id"] for r in rs] == [1, 2], rs
    res = rs[1]["result"]
    assert res["isError"] is False, res
    assert res["structuredContent"]["value"] == 42, res


def test_eof_finishes_every_exec_in_flight_mcp_or_not():
    slow_lua = "local t = os.clock() while os.clock() - t < 0.3 do end return 'lua done'"
    slow_py = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\n'py done'"
    p = subprocess.run([BINARY], input=lines(
        INIT, INITIALIZED,
        tool_call(2, "run_lua", slow_lua),
        tool_call(3, "run_python", slow_py),
        exec_req(4, slow_lua)), capture_output=True, timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert p.returncode == 0, p.stderr
    by_id = {r["id"]: r for r in replies(p.stdout)}
    assert sorted(by_id) == [1, 2, 3, 4], by_id
    assert by_id[2]["result"]["structuredContent"]["value"] == "lua done"
    assert by_id[3]["result"]["structuredContent"]["value"] == "py done"
    assert by_id[4]["result"]["value"] == "lua done"


def test_eof_in_a_session_finishes_its_exec():
    h = Host()
    try:
        h.call("initialize", INIT["params"])
        h.send(INITIALIZED)
        r = h.call("tools/call", {"name": "run_lua", "arguments": {"code": "x = 41", "session": "new"}})
        sid = r["result"]["structuredContent"]["session_id"]
        h.send(tool_call("last", "run_lua",
                         "local t = os.clock() while os.clock() - t < 0.3 do end return x + 1",
                         session=sid))
        h.proc.stdin.close()
        assert h.proc.wait(timeout=30) == 0
        last = replies(h.buf + h.proc.stdout.read())
        assert [m["id"] for m in last] == ["last"], last
        assert last[0]["result"]["structuredContent"]["value"] == 42, last
    finally:
        h.close()


def test_eof_answers_a_waiting_tool_call_with_an_error(tmp_path):
    # The client closed stdin: nobody can answer the code's tool call. The code
    # gets an error at once (it does not wait out its wall clock) and its exec
    # is answered.
    (tmp_path / "tooly.json").write_text(json.dumps(
        {"name": "tooly", "extends": "standard", "tools": ["search"]}))
    os.chmod(tmp_path, 0o755)
    code = ("local ok, e = pcall(tools.call, 'search', {q = 'x'}) "
            "local ok2, e2 = pcall(tools.call, 'search', {q = 'y'}) return {ok, e, ok2, e2}")
    h = Host(args=("--policy-dir", str(tmp_path), "--policy", "tooly"))
    try:
        h.send(exec_req(1, code))
        call = h.read_line()
        assert call["method"] == "sandbox/tool_call", call
        t = time.monotonic()
        h.proc.stdin.close()
        assert h.proc.wait(timeout=30) == 0
        assert time.monotonic() - t < 5  # not standard's 10 s wall clock
        out = replies(h.buf + h.proc.stdout.read())
        assert [m["id"] for m in out] == [1], out
        want = "the client closed stdin: its tools cannot answer"
        assert out[0]["result"]["value"] == [False, want, False, want], out[0]
        assert out[0]["result"]["ok"] is True, out[0]
    finally:
        h.close()


# -- a client that is gone: cancel everything, exit at once ------------------------------

def test_a_client_gone_with_stdin_open_ends_its_execs_and_tidepool():
    h = Host()
    try:
        h.send(exec_req(1, SPIN_LUA))
        h.send(exec_req(2, SPIN_PY, lang="python"))
        wait_for(lambda: len(h.workers()) >= 2 and h.workers(), 30, "no workers")
        time.sleep(0.3)
        kids = identities(h.children())
        t = time.monotonic()
        h.proc.stdout.close()  # the client stops listening; stdin stays open
        assert h.proc.wait(timeout=10) == 0
        took = time.monotonic() - t
        assert took < 1.0, took
        err = h.proc.stderr.read().decode()
        assert "tidepool: the client is gone: 2 execs in flight cancelled" in err, err
        wait_for(lambda: alive_since(kids) == [], 30, f"left alive: {alive_since(kids)}")
    finally:
        h.close()


# -- SIGTERM and SIGINT: cancel, answer, exit fast ---------------------------------------

def start_spinning(h, mcp):
    if mcp:
        h.call("initialize", INIT["params"])
        h.send(INITIALIZED)
        h.send(tool_call("tool", "run_python", SPIN_PY))
    h.send(exec_req("lua", SPIN_LUA))
    h.send(exec_req("py", SPIN_PY, lang="python"))
    h.send(exec_req("queued", "return 1", policy="strict"))  # a zygote not started yet
    wait_for(lambda: len(h.workers()) >= 2 + mcp, 30, "the execs never started")
    time.sleep(0.3)


@pytest.mark.parametrize("mcp", [0, 1])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_cancels_everything_and_exits_fast(sig, mcp):
    h = Host()
    try:
        start_spinning(h, mcp)
        kids = identities(h.children())
        t = time.monotonic()
        h.proc.send_signal(sig)
        out = h.buf + h.proc.stdout.read()  # until tidepool closes stdout by exiting
        rc = h.proc.wait(timeout=10)
        took = time.monotonic() - t
        assert rc == 128 + sig
        assert took < 0.5, took
        by_id = {m["id"]: m for m in replies(out)}
        # the tools/call is not answered (as a cancel); every native exec is
        assert sorted(by_id) == ["lua", "py", "queued"], by_id
        name = signal.Signals(sig).name
        for m in by_id.values():
            err = m["result"]["error"]
            assert (err["kind"], err["layer"], err["message"]) == (
                "cancelled", "host", f"cancelled: tidepool received {name}"), m
        wait_for(lambda: alive_since(kids) == [], 30, f"left alive: {alive_since(kids)}")
    finally:
        h.close()


def test_a_signal_with_nothing_running_exits_at_once():
    h = Host()
    try:
        assert h.call("ping")["result"] == {}
        h.proc.send_signal(signal.SIGTERM)
        assert h.proc.wait(timeout=10) == 128 + signal.SIGTERM
        assert h.proc.stdout.read() == b""
    finally:
        h.close()


# -- SIGHUP: the audit log is reopened, nothing else changes -----------------------------

def audit_ids(path):
    with open(path) as f:
        return [json.loads(l)["id"] for l in f]


def test_sighup_reopens_the_audit_log_and_keeps_serving():
    d = tempfile.mkdtemp(prefix="tp-hup-")
    log = os.path.join(d, "audit.jsonl")
    h = Host(args=("--audit", log))
    try:
        r = h.call("sandbox/exec", {"lang": "lua", "code": "return 'before'"})
        assert r["result"]["value"] == "before"
        os.rename(log, log + ".1")  # what logrotate does
        h.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: os.path.exists(log), 10, "SIGHUP did not reopen the audit log")
        r2 = h.call("sandbox/exec", {"lang": "lua", "code": "return 'after'"})
        assert r2["result"]["value"] == "after"
        assert h.proc.poll() is None  # still serving
        assert audit_ids(log + ".1") == [r["id"]]
        assert audit_ids(log) == [r2["id"]]
        assert os.stat(log).st_mode & 0o777 == 0o600
        h.proc.stdin.close()
        assert h.proc.wait(timeout=10) == 0
        assert f"tidepool: SIGHUP: reopened the audit log {log}" in h.proc.stderr.read().decode()
    finally:
        h.close()
        shutil.rmtree(d, ignore_errors=True)


def test_sighup_keeps_the_old_log_when_the_name_cannot_be_opened():
    d = tempfile.mkdtemp(prefix="tp-hup-")
    sub = os.path.join(d, "logs")
    os.mkdir(sub)
    log = os.path.join(sub, "audit.jsonl")
    h = Host(args=("--audit", log))
    try:
        assert h.call("ping")["result"] == {}  # started: its signals are handled
        os.rename(sub, sub + ".old")  # the directory is gone: open() fails
        h.proc.send_signal(signal.SIGHUP)
        r = h.call("sandbox/exec", {"lang": "lua", "code": "return 2"})
        assert r["result"]["value"] == 2
        h.proc.stdin.close()
        assert h.proc.wait(timeout=10) == 0
        assert audit_ids(os.path.join(sub + ".old", "audit.jsonl")) == [r["id"]]
        err = h.proc.stderr.read().decode()
        assert (f"tidepool: SIGHUP: the audit log stays open as it was: --audit {log}: "
                "No such file or directory") in err, err
    finally:
        h.close()
        shutil.rmtree(d, ignore_errors=True)


def test_sighup_without_audit_changes_nothing():
    h = Host()
    try:
        assert h.exec("return 1")["value"] == 1
        h.proc.send_signal(signal.SIGHUP)
        time.sleep(0.2)
        assert h.proc.poll() is None
        assert h.exec("return 2")["value"] == 2
    finally:
        h.close()


# -- descriptors 0, 1 and 2: a closed one is /dev/null, never a file opened later -----------

def test_a_closed_stdout_never_receives_the_audit_log_or_a_reply(tmp_path):
    log = tmp_path / "audit.jsonl"
    p = subprocess.run(["bash", "-c", f"exec {BINARY} --audit {log} 1>&-"],
                       input=lines(exec_req(1, "return 1")), capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr
    rows = [json.loads(l) for l in log.read_text().splitlines()]
    assert [(r["id"], r["ok"]) for r in rows] == [(1, True)], rows
    assert all("jsonrpc" not in r for r in rows), rows


def test_a_closed_stdin_is_end_of_file():
    p = subprocess.run(["bash", "-c", f"exec {BINARY} 0<&-"], capture_output=True, timeout=60)
    assert (p.returncode, p.stdout) == (0, b""), p
