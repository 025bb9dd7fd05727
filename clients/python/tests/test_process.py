"""The process: finding the binary, starting, closing, dying, and many threads at once."""
import os
import signal
import threading
import time

import pytest

import tidepool

BINARY = os.environ["TIDEPOOL"]
CHECKOUT_BINARY = os.path.join(os.path.dirname(__file__), "..", "..", "..", "build", "tidepool")


def test_binary_from_path_argument_env_PATH_and_the_checkout(monkeypatch, tmp_path):
    with tidepool.Client(BINARY) as c:
        assert c.run("return 1", "lua").value == 1
    with tidepool.Client() as c:  # $TIDEPOOL
        assert c.run("2").value == 2
    monkeypatch.delenv("TIDEPOOL")
    monkeypatch.setenv("PATH", os.path.dirname(BINARY))
    with tidepool.Client() as c:  # `tidepool` on PATH
        assert c.run("3").value == 3
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    with tidepool.Client() as c:  # the checkout's build/tidepool (`make pyclient` built it)
        assert c.run("4").value == 4
        assert os.readlink(f"/proc/{c.pid}/exe") == os.path.realpath(CHECKOUT_BINARY)
    # None of them: test_discovery.py (the error lists every place looked at).


def test_a_bad_start_raises_with_tidepools_message():
    with pytest.raises(tidepool.ProcessExited) as ei:
        tidepool.Client(args=["--policy", "nope"])
    e = ei.value
    assert e.returncode == 2 and e.code is None
    assert e.message.startswith("tidepool exited with status 2 before answering; its last log "
                                "lines:\ntidepool: ")
    assert "'nope'" in e.stderr


def test_close_answers_the_runs_in_flight_then_refuses(agent_args):
    c = tidepool.Client(args=agent_args)
    h = c.run_async("sum(range(100000))")
    assert c.close() == 0
    assert h.result(0).value == 4999950000
    with pytest.raises(tidepool.ProcessExited) as ei:
        c.run("1")
    assert ei.value.message == "the tidepool client is closed"
    assert "default policy: agent" in c.log[0]


def test_the_process_dying_mid_call_raises_in_every_pending_call(agent_args):
    entered = threading.Event()

    def slow():
        entered.set()
        time.sleep(60)

    c = tidepool.Client(args=agent_args)
    try:
        loop = c.run_async("while True: pass")
        tool = c.run_async("tools.slow()", tools={"slow": slow})
        assert entered.wait(30)
        t = time.monotonic()
        os.kill(c.pid, signal.SIGKILL)
        for h in (loop, tool):
            with pytest.raises(tidepool.ProcessExited) as ei:
                h.result(30)
            assert ei.value.message.startswith(
                "tidepool was killed by signal 9 (SIGKILL) before answering; its last log lines:\n")
            assert ei.value.returncode == -signal.SIGKILL
        assert time.monotonic() - t < 10
        # Later calls fail at once, with the same error.
        with pytest.raises(tidepool.ProcessExited) as ei:
            c.run("1", timeout=5)
        assert ei.value.returncode == -9
        with pytest.raises(tidepool.ProcessExited):
            c.session()
    finally:
        assert c.close() == -signal.SIGKILL


def test_run_with_timeout_when_the_process_dies(agent_args):
    c = tidepool.Client(args=agent_args)
    threading.Timer(0.3, os.kill, (c.pid, signal.SIGKILL)).start()
    with pytest.raises(tidepool.ProcessExited):
        c.run("while True: pass", timeout=30)
    c.close()


def test_many_threads_at_once(tp):
    errors, results = [], {}

    def worker(t):
        try:
            for i in range(6):
                lang = "lua" if (t + i) % 2 else "python"
                code = "print(t, i) return t * 100 + i" if lang == "lua" else "print(t, i)\nt * 100 + i"
                r = tp.run(code, lang, inputs={"t": t, "i": i})
                results[(t, i)] = (r.value, r.stdout)
            with tp.session() as s:
                s.run(f"mine = {t}")
                results[(t, "s")] = s.run("mine").value
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    assert errors == []
    for t in range(8):
        for i in range(6):
            assert results[(t, i)] == (t * 100 + i, f"{t}\t{i}\n" if (t + i) % 2 else f"{t} {i}\n")
        assert results[(t, "s")] == t


def test_busy_is_an_error(policy_dir):
    started = threading.Event()
    with tidepool.Client(args=["--jobs", "1", "--queue", "1"]) as c:
        first = c.run_async("print('running', flush=True)\nwhile True: pass",
                            on_stdout=lambda _: started.set())
        assert started.wait(30)
        second = c.run_async("2")  # waits in the queue
        with pytest.raises(tidepool.TidepoolError) as ei:
            c.run("3")
        assert (ei.value.code, ei.value.message) == (
            -32001, "busy: 1 execs are waiting, the most this tidepool queues (--queue); retry later")
        first.cancel()
        assert first.result(30).error.kind == "cancelled"
        assert second.result(30).value == 2
