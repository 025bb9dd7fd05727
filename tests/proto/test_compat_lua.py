"""The Lua half of the compatibility table (tests/cases/compat_lua.json): snippets
of the kind LLMs write, each run through tidepool and compared with what plain
lua5.4 does with it (the table's `reference`, written by
tests/cases/gen_compat_lua.py; this test never runs lua5.4).

- status "same": ok, the value (types too: 1 is not 1.0) or the error's kind and
  type (and message, for a string error) are lua5.4's;
- "refused" (tidepool refuses on purpose: files, processes) and "differs" (on
  purpose: hidden addresses, no NaN in JSON, a json module lua5.4 lacks): the
  result is NOT lua5.4's, and is the table's `expect`, for the `reason` it gives.
`expect` may also pin what the reference cannot say (stdout, stderr, error.data).
"""
import json
import os
import re

import pytest

from conftest import Host

TABLE = os.path.join(os.path.dirname(__file__), "..", "cases", "compat_lua.json")
with open(TABLE) as f:
    CASES = json.load(f)["cases"]


def pointer(path, key):
    return path + "/" + str(key).replace("~", "~0").replace("/", "~1")


def same_json(a, b, nonfinite=None, path=""):
    """Equal as JSON values, and of the same types (an integer is not a real). The
    reference's {"nonjson": "nan"} (what lua5.4 had: NaN, inf, -inf) is tidepool's null
    that the result's nonfinite names at that JSON pointer."""
    if isinstance(b, dict) and set(b) == {"nonjson"} and b["nonjson"] in ("nan", "inf", "-inf"):
        return a is None and (nonfinite or {}).get(path) == b["nonjson"]
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(same_json(x, y, nonfinite, pointer(path, i))
                                        for i, (x, y) in enumerate(zip(a, b)))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k], nonfinite, pointer(path, k))
                                             for k in a)
    return a == b


def as_lua54(r, ref):
    """Does tidepool's result r behave as lua5.4's reference did?"""
    if r["ok"] != ref["ok"]:
        return False
    if r["ok"]:
        return same_json(r["value"], ref["value"], r.get("nonfinite"))
    e, re_ = r["error"], ref["error"]
    if (e["kind"], e["type"]) != (re_["kind"], re_["type"]):
        return False
    return e["message"] == re_["message"] if re_["type"] == "string" else True


@pytest.fixture(scope="module")
def results():
    h = Host()
    out = {}
    try:
        for c in CASES:
            params = {"policy": c["preset"]}
            if "inputs" in c:
                params["inputs"] = c["inputs"]
            if "seed" in c:
                params["seed"] = c["seed"]
            out[c["name"]] = h.exec(c["code"], **params)
    finally:
        h.close()
    return out


def test_the_table_is_whole():
    assert len(CASES) == 42 and len({c["name"] for c in CASES}) == 42
    for c in CASES:
        assert c["status"] in ("same", "refused", "differs"), c
        assert c["preset"] in ("strict", "standard", "permissive", "kernel-only"), c
        if c["status"] != "same":
            assert c.get("reason") and c.get("expect"), c
        if c["status"] == "refused":
            assert c["expect"]["error"]["kind"] == "policy_violation", c


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_case(results, case):
    r = results[case["name"]]
    if case["status"] == "same":
        assert as_lua54(r, case["reference"]), (r, case["reference"])
    else:
        assert not as_lua54(r, case["reference"]), \
            f"{case['name']} now behaves as in lua5.4: make it 'same' in compat_lua.json"
    want = case.get("expect", {})
    if "ok" in want:
        assert r["ok"] is want["ok"], r
    if "value" in want:
        assert same_json(r["value"], want["value"]), r
    if "value_pattern" in want:
        assert isinstance(r["value"], str) and re.fullmatch(want["value_pattern"], r["value"]), r
    for k in ("stdout", "stderr"):
        if k in want:
            assert r[k] == want[k], r
    for k, v in want.get("error", {}).items():
        assert k in r["error"] and same_json(r["error"][k], v), (k, r["error"])


def test_summary(results, capsys):
    n = sum(as_lua54(results[c["name"]], c["reference"]) for c in CASES)
    with capsys.disabled():
        print(f"\n{n} of {len(CASES)} behave as in lua5.4")
    assert n == sum(c["status"] == "same" for c in CASES)
