"""Client(socket=...): the client of a tidepool daemon (`tidepool --listen
unix:PATH`) instead of a process of its own. Each Client is a client of its
own there: its runs, sessions, tool callbacks and streamed output."""
import os
import signal
import subprocess
import threading
import time

import pytest

import tidepool
from conftest import BINARY


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, agent_args):
    d = tmp_path_factory.mktemp("sock")
    path = str(d / "tp.sock")
    p = subprocess.Popen([BINARY, "--listen", "unix:" + path, *agent_args], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={"PATH": "/usr/bin:/bin"})
    deadline = time.monotonic() + 10
    while True:
        try:
            with tidepool.Client(socket=path):
                break
        except (FileNotFoundError, ConnectionRefusedError):
            assert p.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
    yield p, path
    p.send_signal(signal.SIGTERM)
    assert p.wait(10) == 128 + signal.SIGTERM


def test_runs_both_languages_and_knows_the_daemons_pid(daemon):
    p, path = daemon
    with tidepool.Client(socket=path) as c:
        assert c.run("6 * 7").value == 42
        assert c.run("return 'lua'", lang="lua").value == "lua"
        assert c.pid == p.pid
        assert c.log == []


def test_sessions_are_each_clients_own(daemon):
    _, path = daemon
    with tidepool.Client(socket=path) as a, tidepool.Client(socket=path) as b:
        with a.session() as s:
            s.run("x = 41")
            assert s.run("x + 1").value == 42
            assert [x["session_id"] for x in a.request("sandbox/session/list")["sessions"]] == [s.id]
            assert b.request("sandbox/session/list") == {"sessions": []}
            with pytest.raises(tidepool.TidepoolError) as e:
                b.request("sandbox/exec", {"lang": "python", "code": "x", "session_id": s.id})
            assert e.value.code == -32002


def test_tools_and_streamed_output_reach_the_calling_client(daemon):
    _, path = daemon
    out = []
    with tidepool.Client(socket=path, tools={"add": lambda a, b: a + b}) as a, \
            tidepool.Client(socket=path, tools={"add": lambda a, b: -1}) as b:
        results = {}

        def go(name, c):
            results[name] = c.run("print('hi', flush=True)\ntools.add(a=2, b=3)",
                                  on_stdout=out.append if name == "a" else None)
        ts = [threading.Thread(target=go, args=(n, c)) for n, c in (("a", a), ("b", b))]
        for t in ts:
            t.start()
        for t in ts:
            t.join(30)
        assert results["a"].value == 5 and results["b"].value == -1
        assert "".join(out) == "hi\n"


def test_close_answers_what_is_in_flight_then_disconnects(daemon):
    _, path = daemon
    c = tidepool.Client(socket=path)
    r = c.run_async("sum(range(10**5))")
    assert c.close() is None
    assert r.result(timeout=5).value == sum(range(10**5))
    with pytest.raises(tidepool.ProcessExited):
        c.run("1")


def test_socket_with_process_options_is_refused():
    with pytest.raises(ValueError) as e:
        tidepool.Client(socket="/tmp/x.sock", args=["--policy", "strict"])
    assert str(e.value) == ("Client(socket=...) connects to a running tidepool: "
                            "path, args and env are for one it starts")


def test_no_daemon_is_a_connection_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        tidepool.Client(socket=str(tmp_path / "none.sock"))
