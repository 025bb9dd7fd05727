"""The compatibility table (tests/cases/compat_python.json): 165 snippets of the
kind LLMs write, each with what plain CPython 3.11 does with it (the REPL rule:
the last expression is the value; or the exception's type) and what tidepool
should do under its preset. "expect" is absent where tidepool behaves as CPython
(the same ok, value, value_repr, text (the repr a REPL prints), stdout and
exception type), else says why not:
  {"refused": MESSAGE, "why": ...}   policy_violation with exactly this message
  {"same_shape": WHY}                 nondeterministic in both: same ok, same JSON type
  {"today": WHY}                      the value is the date the test runs (UTC), as CPython's was
                                      the date it was recorded; stdout and text as CPython's
  {"rich": WHY, "value": V}           a pandas value: tidepool's records V, CPython's repr as text
  {"differs": WHY, "value": V, ...}   tidepool's own exact result, and why
Regenerate the CPython side with tests/cases/gen_compat_python.py."""
import json
import os

import pytest

from conftest import Host, needs_landlock, said

CASES = json.load(open(os.path.join(os.path.dirname(__file__), "..", "cases",
                                    "compat_python.json")))["cases"]


@pytest.fixture(scope="module")
def host():
    h = Host()
    yield h
    h.close()


def run(host, case):
    r = host.call("sandbox/exec", {"lang": "python", "code": case["code"],
                                   "policy": case["preset"]}, timeout=60)
    assert "result" in r, r
    return r["result"]


def same_as_cpython(res, cp):
    if res["ok"] != cp["ok"]:
        return False
    if cp["ok"]:
        return (res["value"] == cp["value"] and bool(res.get("value_repr")) ==
                bool(cp.get("value_repr")) and res["stdout"] == cp["stdout"] and
                res["text"] == cp.get("text") and res.get("nonfinite") == cp.get("nonfinite"))
    if "kind" in cp:
        return res["error"]["kind"] == cp["kind"]
    return res["error"]["kind"] == "runtime_error" and res["error"]["type"] == cp["type"]


def today_as_cpython(res, cp, before, after):
    """The date the exec ran (UTC: the sandbox's zone), around midnight either day."""
    return (res["ok"] is cp["ok"] is True and res["value"] in (before, after) and
            res["text"] == repr(res["value"]) and res["stdout"] == cp["stdout"])


def utc_today():
    import datetime
    return datetime.datetime.now(datetime.timezone.utc).date().isoformat()


def kind_of(v):
    return type(v).__name__


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_compat(host, case):
    before = utc_today()
    res = run(host, case)
    cp, expect = case["cpython"], case.get("expect")
    if expect is not None and "today" in expect:
        assert today_as_cpython(res, cp, before, utc_today()), (res, cp)
    elif expect is None:
        assert same_as_cpython(res, cp), (res, cp)
    elif "refused" in expect:
        e = res["error"]
        assert res["ok"] is False and (e["kind"], e["layer"], said(e)) == (
            "policy_violation", "language", expect["refused"]), res
    elif "rich" in expect:
        # A pandas or numpy value (rich results): its JSON form as tidepool gives it,
        # its text exactly CPython's repr.
        assert res["ok"] is cp["ok"] is True and "value_repr" not in res, (res, cp)
        assert res["value"] == expect["value"], res
        assert res["text"] == cp["text"] and res["stdout"] == cp["stdout"], (res, cp)
    elif "same_shape" in expect:
        assert res["ok"] is cp["ok"] is True, (res, cp)
        assert kind_of(res["value"]) == kind_of(cp["value"]), (res, cp)
        assert bool(res.get("value_repr")) == bool(cp.get("value_repr")), (res, cp)
    else:
        assert "differs" in expect, expect
        for k in ("ok", "value", "stdout", "stderr"):
            if k in expect:
                assert res[k] == expect[k], (k, res)
        if "error" in expect:
            assert {k: res["error"][k] for k in expect["error"]} == expect["error"], res


@needs_landlock
def test_write_file_in_a_session_is_cpythons(host):
    # The case is refused in a one-shot exec (no workspace); in a session of its preset
    # the file is in the workspace and the snippet behaves as in CPython.
    case = next(c for c in CASES if c["name"] == "write_file")
    r = host.call("sandbox/session/open", {"lang": "python", "policy": case["preset"]})["result"]
    try:
        res = host.call("sandbox/exec", {"session_id": r["session_id"], "code": case["code"]},
                        timeout=60)["result"]
        assert same_as_cpython(res, case["cpython"]), (res, case["cpython"])
    finally:
        host.call("sandbox/session/close", {"session_id": r["session_id"]})


def test_compat_summary(host):
    # Runs every case again (so it stands alone): the count that behave as CPython.
    n = 0
    for case in CASES:
        before = utc_today()
        res, cp = run(host, case), case["cpython"]
        expect = case.get("expect", {})
        if "today" in expect:
            n += today_as_cpython(res, cp, before, utc_today())
        elif "same_shape" in expect:
            n += res["ok"] is cp["ok"] is True and kind_of(res["value"]) == kind_of(cp["value"])
        elif "rich" in expect:  # CPython's repr as text, the value as records
            n += res["ok"] is True and res["text"] == cp["text"] and res["value"] == expect["value"]
        else:
            n += same_as_cpython(res, cp)
    print("\n%d of %d behave as in CPython 3.11" % (n, len(CASES)))
    expected = sum(1 for c in CASES if c.get("expect") is None or "same_shape" in c["expect"]
                   or "rich" in c["expect"] or "today" in c["expect"])
    assert n == expected, (n, expected)
