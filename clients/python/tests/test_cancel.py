"""timeout= cancels and raises RunTimeout; run_async(...).cancel() returns the cancelled result."""
import threading
import time

import pytest

import tidepool

LOOP_PY = "print('so far')\nwhile True: pass"


def test_timeout_cancels_and_raises(tp):
    t = time.monotonic()
    with pytest.raises(tidepool.RunTimeout) as ei:
        tp.run(LOOP_PY, timeout=0.5)
    assert time.monotonic() - t < 5
    e = ei.value
    assert isinstance(e, TimeoutError)
    assert str(e).endswith("did not finish within 0.5 s: cancelled")
    r = e.result
    assert (r.ok, r.stdout, r.error.kind, r.error.layer, r.error.value) == (
        False, "so far\n", "cancelled", "host", "cancelled by the client (notifications/cancelled)")
    assert tp.run("1").value == 1


def test_timeout_not_reached_returns_the_result(tp):
    assert tp.run("sum(range(1000))", timeout=30).value == 499500


def test_timeout_lua(tp):
    with pytest.raises(tidepool.RunTimeout) as ei:
        tp.run("while true do end", "lua", timeout=0.3)
    assert ei.value.result.error.kind == "cancelled"


def test_run_async_cancel(tp):
    h = tp.run_async(LOOP_PY)
    assert isinstance(h.id, int) and not h.done()
    with pytest.raises(TimeoutError) as ei:
        h.result(timeout=0.2)  # waiting does not cancel
    assert not isinstance(ei.value, tidepool.RunTimeout)
    assert not h.done()
    assert h.cancel() is True
    r = h.result(30)
    assert (r.ok, r.error.kind) == (False, "cancelled")
    assert h.done() and h.cancel() is False  # finished: nothing to cancel


def test_cancel_after_the_result_does_nothing(tp):
    h = tp.run_async("6 * 7")
    assert h.result(30).value == 42
    assert h.cancel() is False
    assert h.result().value == 42


def test_cancel_a_session_exec_keeps_the_session(tp):
    with tp.session() as s:
        s.run("x = 41")
        with pytest.raises(tidepool.RunTimeout) as ei:
            s.run("while True: pass", timeout=0.5)
        r = ei.value.result
        assert (r.error.kind, r.session_lost) == ("cancelled", False)
        assert s.run("x + 1").value == 42


def test_cancel_a_run_waiting_on_a_tool(tp):
    entered, release = threading.Event(), threading.Event()

    def slow(x):
        entered.set()
        release.wait(30)
        return x

    h = tp.run_async("tools.slow(x=1)", tools={"slow": slow})
    assert entered.wait(30)
    h.cancel()
    assert h.result(30).error.kind == "cancelled"
    release.set()  # the late answer to a finished exec's tool call is ignored
    assert tp.run("2").value == 2
