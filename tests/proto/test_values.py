"""Value rules through the real binary, both languages: nothing is lost silently.
NUL bytes in keys and strings come back exactly, at any depth and as inputs;
keys whose JSON texts are one are refused as the user's result_error, naming
both; NaN and the infinities are refused alike; Lua's sparse arrays and key
order do not depend on the host start."""
import json

import pytest

from conftest import Host, said


def run(h, lang, code, **params):
    r = h.call("sandbox/exec", {"lang": lang, "code": code, **params})
    assert "result" in r, r
    return r["result"]


def refused(r, message):
    assert r["ok"] is False and r["value"] is None, r
    assert r["error"]["kind"] == "result_error", r
    assert r["error"]["layer"] == "language", r
    assert r["error"]["type"] is None, r
    assert r["error"]["message"] == message, r


# -- NUL bytes ------------------------------------------------------------------

NUL_VALUES = [
    ("lua", 'return {["a\\0b"] = 1}', {"a\0b": 1}),
    ("lua", 'return {x = {y = {["\\0k"] = "v\\0"}}}', {"x": {"y": {"\0k": "v\0"}}}),
    ("lua", 'return {["\\0"] = 1, ["\\1"] = 2, ["\\1\\1"] = 3, ["\\0\\1"] = "\\1\\0"}',
     {"\0": 1, "\1": 2, "\1\1": 3, "\0\1": "\1\0"}),
    ("python", '{"a\\0b": 1}', {"a\0b": 1}),
    ("python", '{"x": {"y": {"\\0k": "v\\0"}}}', {"x": {"y": {"\0k": "v\0"}}}),
    ("python", '{"\\0": 1, "\\1": 2, "\\1\\1": 3, "\\0\\1": "\\1\\0"}',
     {"\0": 1, "\1": 2, "\1\1": 3, "\0\1": "\1\0"}),
]


@pytest.mark.parametrize("lang,code,want", NUL_VALUES, ids=[f"{c[0]}-{i}" for i, c in enumerate(NUL_VALUES)])
def test_nul_in_keys_comes_back(shared_host, lang, code, want):
    r = run(shared_host, lang, code)
    assert r["ok"] is True, r
    assert r["value"] == want


@pytest.mark.parametrize("lang,code", [("lua", "return x"), ("python", "x")])
def test_nul_in_input_keys_round_trips(shared_host, lang, code):
    x = {"a\0b": {"c": {"\0": "d\0", "\1": [{"e\0": True}]}}}
    r = run(shared_host, lang, code, inputs={"x": x})
    assert r["ok"] is True, r
    assert r["value"] == x


def test_nul_keys_through_tools_call(shared_host):
    r = shared_host.call("tools/call", {"name": "run_python", "arguments": {
        "code": "{k + '!': v for k, v in x.items()}", "inputs": {"x": {"\0": 1}}}})["result"]
    assert r["isError"] is False, r
    assert r["structuredContent"]["value"] == {"\0!": 1}
    assert json.loads(r["content"][0]["text"])["value"] == {"\0!": 1}


def test_bad_line_with_nul_key_is_still_a_parse_error(shared_host):
    shared_host.send_raw(b'{"jsonrpc":"2.0","id":5,"method":"ping","params":{"\\u0000":1},}\n')
    r = shared_host.read_line()
    assert r["error"]["code"] == -32700, r
    assert run(shared_host, "lua", "return 1")["value"] == 1


# -- keys that collide -------------------------------------------------------------

COLLISIONS = [
    ("lua", "return {[1] = 'a', ['1'] = 'b'}", 'keys 1 and "1" both become "1" in JSON'),
    ("lua", "return {[true] = 'a', ['true'] = 'b'}", 'keys true and "true" both become "true" in JSON'),
    ("lua", "return {[1.5] = 'a', ['1.5'] = 'b'}", 'keys 1.5 and "1.5" both become "1.5" in JSON'),
    ("lua", "return {x = {{y = {[-2] = 0, ['-2'] = 0}}}}", 'keys -2 and "-2" both become "-2" in JSON'),
    ("lua", "return {[math.huge] = 1, inf = 2}", 'keys inf and "inf" both become "inf" in JSON'),
    ("lua", "return {[{}] = 1, [{}] = 2}", 'keys <table> and <table> both become "<table>" in JSON'),
    ("lua", "return {['\\xff'] = 1, ['\\xfe'] = 2}",
     'keys "\\xFE" and "\\xFF" both become "\ufffd" in JSON'),
    ("python", "{1: 'a', '1': 'b'}", "keys 1 and '1' both become \"1\" in JSON"),
    ("python", "{'1': 'b', 1: 'a'}", "keys 1 and '1' both become \"1\" in JSON"),
    ("python", "{True: 'a', 'true': 'b'}", "keys True and 'true' both become \"true\" in JSON"),
    ("python", "{None: 'a', 'null': 'b'}", "keys None and 'null' both become \"null\" in JSON"),
    ("python", "{1.5: 'a', '1.5': 'b'}", "keys 1.5 and '1.5' both become \"1.5\" in JSON"),
    ("python", "[{'x': {'y': {False: 0, 'false': 0}}}]",
     "keys False and 'false' both become \"false\" in JSON"),
    ("python", "{'\\ud800': 1, '\\udc00': 2}", "keys '\\ud800' and '\\udc00' both become \"\ufffd\" in JSON"),
]


@pytest.mark.parametrize("lang,code,message", COLLISIONS, ids=[f"{c[0]}-{i}" for i, c in enumerate(COLLISIONS)])
def test_colliding_keys_are_refused(shared_host, lang, code, message):
    refused(run(shared_host, lang, code), message)


def test_collision_is_found_before_the_values(shared_host):
    refused(run(shared_host, "lua", "return {[1] = 0/0, ['1'] = {}}"), 'keys 1 and "1" both become "1" in JSON')


# -- NaN and infinities ------------------------------------------------------------

NUMBERS = [
    # (lang, code, value, text, nonfinite): null where JSON has no number, named by its
    # JSON pointer (RFC 6901); text is what the REPL prints.
    ("lua", "return 0/0", None, "nan", {"": "nan"}),
    ("lua", "return math.huge", None, "inf", {"": "inf"}),
    ("lua", "return {1, {x = 1/0}}", [1, {"x": None}], '[1,{"x":null}]', {"/1/x": "inf"}),
    ("lua", "return 1, -math.huge", [1, None], "1\t-inf", {"/1": "-inf"}),
    ("lua", "return {['a/b~c'] = 0/0, n = 2}", {"a/b~c": None, "n": 2}, '{"a/b~c":null,"n":2}',
     {"/a~1b~0c": "nan"}),
    ("python", "float('nan')", None, "nan", {"": "nan"}),
    ("python", "import math\nmath.inf", None, "inf", {"": "inf"}),
    ("python", "0/1 - float('inf')", None, "-inf", {"": "-inf"}),
    ("python", "import math\n[1, math.inf]", [1, None], "[1, inf]", {"/1": "inf"}),
    ("python", "{'x': float('nan')}", {"x": None}, "{'x': nan}", {"/x": "nan"}),
    ("python", "[1, {'x': float('inf')}, (2, -float('inf'))]", [1, {"x": None}, [2, None]],
     "[1, {'x': inf}, (2, -inf)]", {"/1/x": "inf", "/2/1": "-inf"}),
    ("python", "{'a/b': {'~': float('nan')}, 'n': None}", {"a/b": {"~": None}, "n": None},
     "{'a/b': {'~': nan}, 'n': None}", {"/a~1b/~0": "nan"}),
]


@pytest.mark.parametrize("lang,code,value,text,nonfinite", NUMBERS,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(NUMBERS)])
def test_nan_and_infinity_are_null_named_by_their_pointer(shared_host, lang, code, value, text,
                                                          nonfinite):
    r = run(shared_host, lang, code)
    assert (r["ok"], r["value"], r["text"], r["nonfinite"]) == (True, value, text, nonfinite), r
    assert "value_repr" not in r


def test_a_finite_value_has_no_nonfinite(shared_host):
    for lang, code in (("lua", "return {1, 2.5, json.null}"), ("python", "[1, 2.5, None]")):
        r = run(shared_host, lang, code)
        assert r["ok"] is True and "nonfinite" not in r, r


def test_nonfinite_counts_against_result_bytes(shared_host):
    """The map is part of the result: a value of many NaNs past result_bytes is an
    output_limit, not a map that grows without bound."""
    r = run(shared_host, "python", "[float('nan')] * 1000", limits={"result_bytes": 4000})
    assert r["ok"] is False and r["error"]["kind"] == "output_limit", r
    assert r["error"]["limit"]["name"] == "result_bytes" and r["error"]["limit"]["limit"] == 4000
    r = run(shared_host, "lua", "local t = {} for i = 1, 1000 do t[i] = 0/0 end return t",
            limits={"result_bytes": 4000})
    assert r["ok"] is False and r["error"]["kind"] == "output_limit", r
    assert r["error"]["limit"]["name"] == "result_bytes" and r["error"]["limit"]["limit"] == 4000
    # Under the cap, every entry is there.
    r = run(shared_host, "python", "[float('nan')] * 100")
    assert r["value"] == [None] * 100 and len(r["nonfinite"]) == 100, r


def test_tool_arguments_still_refuse_nan(shared_host):
    """A tool's arguments go to the client as JSON with no map beside them: a NaN there is
    still the snippet's error."""
    r = run(shared_host, "python", "tools.call('x', {'v': float('nan')})")
    assert r["ok"] is False and "NaN is not a JSON number" in said(r["error"]), r


def test_non_finite_keys_are_text(shared_host):
    assert run(shared_host, "lua", "return {[math.huge] = 1, [-math.huge] = 2}")["value"] == {"-inf": 2, "inf": 1}
    assert run(shared_host, "python", "{float('inf'): 1, float('nan'): 2}")["value"] == {"inf": 1, "nan": 2}


# -- Lua: sparse arrays, key order, determinism ------------------------------------

SPARSE = [
    ("return {[1] = 1, [3] = 3}", [("1", 1), ("3", 3)]),
    ("return {1, nil, 3}", [("1", 1), ("3", 3)]),
    ("return {nil, 'b'}", [("2", "b")]),
    ("return {[10] = 'j', [2] = 'b', [1] = 'a'}", [("1", "a"), ("2", "b"), ("10", "j")]),
    ("return {[0] = 'z', 'a'}", [("0", "z"), ("1", "a")]),
    ("return {'a', 'b', n = 2}", [("1", "a"), ("2", "b"), ("n", 2)]),
    ("return {[-1] = 0, [0.5] = 1, [true] = 2, b = 3, a = 4}",
     [("-1", 0), ("0.5", 1), ("a", 4), ("b", 3), ("true", 2)]),
]


@pytest.mark.parametrize("code,items", SPARSE, ids=[c[0] for c in SPARSE])
def test_lua_sparse_arrays_are_objects_in_order(shared_host, code, items):
    r = run(shared_host, "lua", code)
    assert r["ok"] is True, r
    assert list(r["value"].items()) == items  # the wire order, not just the content


DETERMINISM = [
    "local t = {} for i = 1, 200 do t['k' .. i] = i t[i * 3] = -i end return t",
    "local t = {} for i = 1, 50 do t['s' .. i] = {['x' .. i] = i, [i] = 'v'} end return t",
    # Which problem is reported must not follow the hash seed either.
    "local t = {} for i = 1, 100 do t['n' .. i] = i end t.m = 0/0 t.q = {[1] = 0, ['1'] = 0} return t",
    "local t = {} for i = 1, 100 do t['n' .. i] = {} end t.m = 1/0 t.z = 0/0 return t",
]


def test_lua_values_do_not_change_between_host_starts():
    seen = []
    for _ in range(2):
        h = Host()
        try:
            lines = []
            for code in DETERMINISM:
                r = run(h, "lua", code)
                lines.append(json.dumps([r["ok"], r["value"], r["error"] and r["error"]["message"],
                                         r.get("nonfinite")]))
            seen.append(lines)
        finally:
            h.close()
    assert seen[0] == seen[1]
    first = json.loads(seen[0][0])[1]
    assert list(first)[:3] == ["3", "6", "9"] and list(first)[200:203] == ["k1", "k10", "k100"]
    # The collision is reported whatever came before it; a NaN is no longer a refusal.
    assert json.loads(seen[0][2])[2] == 'keys 1 and "1" both become "1" in JSON'
    assert json.loads(seen[0][3])[3] == {"/m": "inf", "/z": "nan"}


@pytest.mark.parametrize("depth,ok", [(2, True), (3, False)])
def test_several_lua_values_make_a_level_of_depth(shared_host, depth, ok):
    """`return 1, t` sends [1, t]: the array is a level, as the host's decoder
    counts it. At the cap the snippet gets output_limit (it was the worker's
    internal_error: the two sides counted differently)."""
    code = "local t = {} local c = t for i = 2, %d do c[1] = {} c = c[1] end return 1, t" % depth
    r = shared_host.exec(code, limits={"result_depth": 3})
    if ok:
        assert r["ok"] is True and r["value"] == [1, [{}]], r  # an empty table is {}
    else:
        assert r["error"]["kind"] == "output_limit" and r["error"]["layer"] == "language", r
        assert r["error"]["limit"] == {"name": "result_depth", "limit": 3, "used": 4}, r
