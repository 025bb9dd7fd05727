"""run(): the result object, values and their text, errors, JSON-RPC errors."""
import pytest

import tidepool


def test_python_value_text_and_output(tp):
    r = tp.run("print('hi')\nsum(range(10))")
    assert isinstance(r, tidepool.Execution)
    assert (r.ok, r.value, r.text, r.stdout, r.stderr, r.error) == (True, 45, "45", "hi\n", "", None)
    assert r.raw["ok"] is True and r.raw["value"] == 45
    assert set(r.usage) == {"instructions", "memory_peak_bytes", "cpu_ms", "wall_ms", "queue_ms",
                            "tool_calls"}
    assert r.truncated == {"stdout": False, "stderr": False}


@pytest.mark.parametrize("code, value, text, value_repr", [
    ("{1, 2}", "{1, 2}", "{1, 2}", True),           # a repr tidepool made: taken as it is
    ("object", "<class 'object'>", "<class 'object'>", True),
    ("'hi'", "hi", "'hi'", False),                  # the value's repr, as tidepool sent it
    ("[1, 'a', None, True, 2.5]", [1, "a", None, True, 2.5], "[1, 'a', None, True, 2.5]", False),
    ("{'k': [0.1 + 0.2]}", {"k": [0.30000000000000004]}, "{'k': [0.30000000000000004]}", False),
    ("x = 1", None, None, False),                   # no expression: no value, no text (as a REPL)
    ("None", None, None, False),
])
def test_python_text(tp, code, value, text, value_repr):
    r = tp.run(code)
    assert (r.ok, r.value, r.text, r.value_repr) == (True, value, text, value_repr)


@pytest.mark.parametrize("code, value, text", [
    ("return 1 + 1", 2, "2"),                       # as lua5.4 prints the values
    ("return 'x'", "x", "x"),
    ("return 1.5, true, nil", [1.5, True, None], "1.5\ttrue\tnil"),
    ("return {1, 2, x = 3}", {"1": 1, "2": 2, "x": 3}, '{"1":1,"2":2,"x":3}'),
    ("return 3.0", 3.0, "3.0"),
    ("return 0.1 + 0.2", 0.30000000000000004, "0.3"),
    ("return print", "<function>", "<function>"),
    ("local x = 1", None, None),
])
def test_lua_text(tp, code, value, text):
    r = tp.run(code, "lua")
    assert (r.ok, r.value, r.text) == (True, value, text)


def test_inputs_and_seed(tp):
    assert tp.run("x + len(name)", inputs={"x": 40, "name": "ab"}).value == 42
    assert tp.run("return x * 2", "lua", inputs={"x": 21}).value == 42
    a = tp.run("import random\n[random.random() for _ in range(3)]", seed=7).value
    b = tp.run("import random\n[random.random() for _ in range(3)]", seed=7).value
    c = tp.run("import random\n[random.random() for _ in range(3)]", seed=8).value
    assert a == b != c and len(a) == 3


def test_python_exception(tp):
    r = tp.run("x = 1\n1/0")
    e = r.error
    assert r.ok is False and r.value is None
    assert isinstance(e, tidepool.ExecutionError)
    assert (e.name, e.value, e.kind, e.layer, e.line, e.type) == (
        "ZeroDivisionError", "division by zero", "runtime_error", "language", 2, "ZeroDivisionError")
    assert (e.ename, e.evalue) == ("ZeroDivisionError", "division by zero")  # Jupyter's names
    assert e.traceback.startswith("Traceback (most recent call last):\n")
    assert e.traceback.endswith("ZeroDivisionError: division by zero")
    assert str(e) == "ZeroDivisionError: division by zero"
    assert e.raw == r.raw["error"]


def test_python_syntax_error(tp):
    e = tp.run("x = (").error
    assert (e.name, e.value, e.kind, e.line, e.column, e.traceback) == (
        "SyntaxError", "'(' was never closed", "syntax_error", 1, 5,
        '  File "<snippet>", line 1\n    x = (\n        ^\nSyntaxError: \'(\' was never closed')


def test_lua_error_is_named_by_its_kind(tp):
    e = tp.run("error('boom')", "lua").error
    # Lua's error type is the value's type ("string"), not a class: the name is the kind.
    assert (e.name, e.value, e.kind, e.layer, e.line, e.type) == (
        "runtime_error", "boom", "runtime_error", "language", 1, "string")


def test_nan_and_infinity_come_back_as_floats(tp):
    """tidepool sends null named in nonfinite (JSON has no NaN); the client gives the
    float back, in both languages, and keeps what was sent in .raw."""
    import math
    r = tp.run("import math\n[1, math.inf, {'x': float('nan'), 'a/b': -math.inf}]")
    assert r.ok and r.value[0] == 1 and r.value[1] == math.inf and r.value[2]["a/b"] == -math.inf
    assert math.isnan(r.value[2]["x"]) and r.text == "[1, inf, {'x': nan, 'a/b': -inf}]"
    assert r.raw["value"] == [1, None, {"x": None, "a/b": None}]
    assert r.raw["nonfinite"] == {"/1": "inf", "/2/x": "nan", "/2/a~1b": "-inf"}
    r = tp.run("return 0/0", "lua")
    assert r.ok and math.isnan(r.value) and r.text == "nan"
    r = tp.run("return {math.huge, json.null}", "lua")
    assert r.ok and r.value == [math.inf, None]  # a null that was null stays None


def test_limit_error(tp):
    r = tp.run("while true do end", "lua", limits={"instructions": 1000})
    e = r.error
    assert (e.name, e.kind, e.layer, e.value) == (
        "instruction_limit", "instruction_limit", "language", "instruction limit exceeded")
    assert e.limit == {"name": "instructions", "limit": 1000, "used": 1000}
    assert r.usage["instructions"] == 1000
    assert (e.rule, e.policy) == ("limits.instructions", "agent")  # the tests' default policy


def test_policy_violation(tp):
    e = tp.run("open('/etc/passwd')", policy="strict").error
    assert (e.name, e.kind, e.layer, e.value) == (
        "PolicyViolation", "policy_violation", "language",
        "open is not available in the sandbox (policy strict: no files)")
    assert (e.rule, e.policy) == ("python.builtins:open", "strict")
    # standard gives sessions a workspace: a one-shot run has open, which refuses the path
    e = tp.run("open('/etc/passwd')", policy="standard").error
    assert (e.name, e.kind, e.layer, e.value) == (
        "PolicyViolation", "policy_violation", "language",
        "open('/etc/passwd') is refused: files are in a session's workspace, and this exec "
        "has none (policy standard: open a session)")
    assert (e.rule, e.policy, e.raw["path"]) == ("filesystem.read", "standard", "/etc/passwd")


@pytest.mark.parametrize("kw, message", [
    ({"limits": {"cpu_ms": 999999}},
     "limit 'cpu_ms' may only be tightened: 999999 > ceiling 5000 (policy 'agent')"),
    ({"policy": "nope"}, "unknown policy 'nope' (sandbox/policy/list names them)"),
    ({"lang": "cobol"}, "'lang' must be \"lua\" or \"python\""),
])
def test_invalid_params_raise(tp, kw, message):
    with pytest.raises(tidepool.TidepoolError) as ei:
        tp.run("1", **kw)
    assert (ei.value.code, ei.value.message) == (-32602, message)
    assert str(ei.value) == f"{message} (JSON-RPC error -32602)"


def test_request_any_method(tp):
    assert tp.request("ping") == {}
    names = [p["name"] for p in tp.request("sandbox/policy/list")["policies"]]
    assert "agent" in names and "standard" in names
    with pytest.raises(tidepool.TidepoolError) as ei:
        tp.request("no/such/method")
    assert ei.value.code == -32601


def test_a_json_value_python_cannot_send_is_refused_before_sending(tp):
    with pytest.raises(ValueError):
        tp.run("x", inputs={"x": float("nan")})
    assert tp.run("1").value == 1  # nothing was left pending


def test_figures_are_images(tp):
    pytest.importorskip("matplotlib", reason="the data preset needs python3-matplotlib")
    r = tp.run("import matplotlib.pyplot as plt\nplt.plot([1, 2])\n1", policy="data")
    assert (r.ok, r.value, r.text) == (True, 1, "1"), r
    assert [(i.mime, i.data[:8]) for i in r.images] == [("image/png", b"\x89PNG\r\n\x1a\n")]
    assert tp.run("1").images == []
