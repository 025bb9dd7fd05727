"""The Lua json module (lua-sandbox/ljsonlib.c): json.encode, json.decode and
json.null under the exec's result caps; refusals a snippet catches with pcall;
the policy gate; inputs that try to get past the caps or run metamethods."""
import json
import os
import shutil
import tempfile

import pytest

from conftest import Host, needs_landlock


def ok(r):
    assert r["ok"] is True and r["error"] is None, r
    return r["value"]


def caught(h, call, **params):
    """The message of an error the snippet caught with pcall."""
    v = ok(h.exec(f"return pcall({call})", **params))
    assert v[0] is False, v
    return v[1]


ROUND_TRIPS = [  # Lua value, its JSON text
    ("{1, 2, 3}", "[1,2,3]"),
    ("{a = 1, b = {true, false}, c = 'x'}", '{"a":1,"b":[true,false],"c":"x"}'),
    ("{[2] = 'b', [1] = 'a', [10] = 'j', z = 0}", '{"1":"a","2":"b","10":"j","z":0}'),
    ("{1, nil, 3}", '{"1":1,"3":3}'),
    ("{0.1, 1.5, -0.0, 2^53, math.maxinteger}", "[0.1,1.5,-0.0,9007199254740992.0,9223372036854775807]"),
    ("'caf\\u{e9} \"q\" \\\\ \\n \\0'", '"caf\u00e9 \\"q\\" \\\\ \\n \\u0000"'),
    ("{}", "{}"),
    ("{{}, {{}}}", "[{},[{}]]"),
    ("json.null", "null"),
    ("nil", "null"),
    ("{1, json.null, 3}", "[1,null,3]"),
    ("{a = json.null}", '{"a":null}'),
    ("print", '"<function>"'),
]


@pytest.mark.parametrize("lua,text", ROUND_TRIPS)
def test_encode_exact_text(shared_host, lua, text):
    assert ok(shared_host.exec(f"return json.encode({lua})")) == text


@pytest.mark.parametrize("text", [
    "[1,2,3]", '{"a":1,"b":[true,false],"c":"x"}', "[1,null,3]", '{"a":null,"b":[null]}',
    '"caf\u00e9 \\u0000"', "0.1", "-7", "true", '[[[[]]]]', '{"k":{"k":{"k":[1.5]}}}',
])
def test_decode_then_encode_gives_the_text_back(shared_host, text):
    # Objects come back sorted; these texts are, and an empty array is the one
    # exception: a Lua table cannot tell [] from {} (documented).
    want = text.replace("[[[[]]]]", "[[[{}]]]")
    r = shared_host.exec("return json.encode(json.decode(s))", inputs={"s": text})
    assert ok(r) == want


def test_decode_values(shared_host):
    r = shared_host.exec("local t = json.decode(s) return t.a, t.b[2], #t.b, t.c, math.type(t.d), t.e",
                         inputs={"s": '{"a":"x","b":[1,null,3],"c":true,"d":2.0,"e":-5}'})
    assert ok(r) == ["x", None, 3, True, "float", -5]
    # The top-level null is nil; inside tables it is json.null, so lengths hold.
    r = shared_host.exec("local t = json.decode('[null,null]') return json.decode('null') == nil, #t, "
                         "t[1] == json.null, rawequal(t[2], json.null), type(json.null), "
                         "json.decode('{\"a\":null}').a == json.null")
    assert ok(r) == [True, 2, True, True, "userdata", True]


def test_json_null_is_null_in_the_result(shared_host):
    assert ok(shared_host.exec("return json.decode('[1,null,{\"a\":null}]')")) == [1, None, {"a": None}]
    assert ok(shared_host.exec("return {x = json.null}")) == {"x": None}


def test_nesting_up_to_the_depth_cap(shared_host):
    deep = "local t = 1 for i = 1, N do t = {t} end return pcall(json.encode, t)"
    assert ok(shared_host.exec(deep.replace("N", "4"), limits={"result_depth": 4})) == [True, "[[[[1]]]]"]
    assert ok(shared_host.exec(deep.replace("N", "5"), limits={"result_depth": 4})) == \
        [False, "json.encode: value nested deeper than result_depth (4)"]
    r = shared_host.exec("local t = json.decode('[[[[1]]]]') return t[1][1][1][1]", limits={"result_depth": 4})
    assert ok(r) == 1
    assert caught(shared_host, "json.decode, '[[[[[1]]]]]'", limits={"result_depth": 4}) == \
        "json.decode: value nested deeper than result_depth (4)"
    assert caught(shared_host, "json.decode, '{\"a\":{\"b\":{\"c\":{\"d\":{}}}}}'", limits={"result_depth": 4}) == \
        "json.decode: value nested deeper than result_depth (4)"
    # Brackets inside strings are not nesting.
    r = shared_host.exec("return json.decode(s)", inputs={"s": '["[[[[[[", "{{{{{{"]'}, limits={"result_depth": 1})
    assert ok(r) == ["[[[[[[", "{{{{{{"]


def test_result_bytes_caps_both_ways(shared_host):
    lim = {"result_bytes": 100}
    assert ok(shared_host.exec("return #json.encode(('x'):rep(98))", limits=lim)) == 100
    assert caught(shared_host, "json.encode, ('x'):rep(99)", limits=lim) == \
        "json.encode: text longer than result_bytes (100)"
    assert ok(shared_host.exec("return #json.decode('\"' .. ('x'):rep(98) .. '\"')", limits=lim)) == 98
    assert caught(shared_host, "json.decode, '\"' .. ('x'):rep(99) .. '\"'", limits=lim) == \
        "json.decode: text of 101 bytes is longer than result_bytes (100)"


REFUSALS = [  # the call, the message pcall catches
    ("json.encode, setmetatable({}, {}) and (function() local t = {} t.me = t return t end)()",
     "json.encode: cycle in value"),
    ("json.encode, {0/0}", "json.encode: NaN is not a JSON number"),
    ("json.encode, {x = math.huge}", "json.encode: inf is not a JSON number"),
    ("json.encode, -math.huge", "json.encode: -inf is not a JSON number"),
    ("json.encode, {[1] = 'a', ['1'] = 'b'}", 'json.encode: keys 1 and "1" both become "1" in JSON'),
    ("json.encode, {[true] = 1, ['true'] = 2}", 'json.encode: keys true and "true" both become "true" in JSON'),
    ("json.encode", "bad argument #1 to 'json.encode' (value expected)"),
    ("json.decode, {}", "bad argument #1 to 'json.decode' (string expected, got table)"),
    ("json.decode, 5", "bad argument #1 to 'json.decode' (string expected, got number)"),
    ("json.decode, '[1,'", "json.decode: ']' expected near end of file at column 3"),
    ("json.decode, ''", "json.decode: unexpected token near end of file at column 0"),
    ("json.decode, '{\"a\":1,\"a\":2}'", "json.decode: duplicate object key near '\"a\"' at column 10"),
    ("json.decode, '\"\\xff\"'", "json.decode: unable to decode byte 0xff near '\"' at column 1"),
    ("json.decode, '\"\\xed\\xa0\\x80\"'", "json.decode: unable to decode byte 0xed near '\"' at column 1"),
    ("json.decode, '1e400'", "json.decode: real number overflow near '1e400' at column 5"),
    ("json.decode, 'NaN'", "json.decode: invalid token near 'NaN' at column 3"),
]


@pytest.mark.parametrize("call,message", REFUSALS)
def test_refusals_are_errors_pcall_catches(shared_host, call, message):
    assert caught(shared_host, call) == message


def test_an_uncaught_refusal_is_a_runtime_error(shared_host):
    r = shared_host.exec("local t = {}\nt[1] = t\nreturn json.encode(t)")
    e = r["error"]
    assert (r["ok"], e["kind"], e["layer"], e["type"], e["message"], e["line"]) == \
        (False, "runtime_error", "language", "string", "json.encode: cycle in value", 3)


def test_encode_runs_no_metamethod(shared_host):
    code = """
    ran = {}
    local mt = {}
    for _, k in ipairs({'__index', '__newindex', '__pairs', '__len', '__tostring', '__name',
                        '__call', '__eq', '__lt', '__le', '__concat', '__close', '__mode'}) do
      mt[k] = function() ran[#ran + 1] = k error('metamethod ' .. k .. ' ran') end
    end
    mt.__name = nil mt.__mode = nil mt.__close = nil
    local t = setmetatable({1, 2, {x = setmetatable({}, mt)}}, mt)
    local proxy = setmetatable({}, {__index = function() ran[#ran + 1] = 'proxy' return 1 end,
                                    __pairs = function() ran[#ran + 1] = 'pairs' return next, {9}, nil end})
    return json.encode(t), json.encode(proxy), #ran
    """
    assert ok(shared_host.exec(code)) == ['[1,2,{"x":{}}]', "{}", 0]


def test_decode_of_hostile_sizes_is_bounded(shared_host):
    # A million opening brackets: refused by the depth cap before any parse.
    r = shared_host.exec("return pcall(json.decode, ('['):rep(1000000))")
    assert ok(r) == [False, "json.decode: value nested deeper than result_depth (64)"]
    # The whole result_bytes of tiny values: parsed and built, within the memory limit.
    r = shared_host.exec("local s = ' [' .. ('0,'):rep(524286) .. '0]' "
                         "return #s, #json.decode(s)")
    assert ok(r) == [1048576, 524287]
    # One byte more than result_bytes is refused before parsing.
    r = shared_host.exec("return pcall(json.decode, (' '):rep(1048577))")
    assert ok(r) == [False, "json.decode: text of 1048577 bytes is longer than result_bytes (1048576)"]
    # The Lua heap holds the decoded tables: the memory limit applies to them.
    r = shared_host.exec("local s = '[' .. ('[],'):rep(200000) .. '[]]' return #json.decode(s)",
                         limits={"memory_bytes": 4 << 20})
    assert r["error"]["kind"] == "memory_limit" and r["error"]["limit"]["name"] == "memory_bytes", r
    # and the host is still fine
    assert ok(shared_host.exec("return json.encode(json.decode('[1]'))")) == "[1]"


@pytest.mark.parametrize("preset", ["standard", "strict", "permissive"])
def test_presets_give_json(shared_host, preset):
    r = shared_host.exec("return json.encode({n = json.decode('[1,null]')[1]})", policy=preset)
    assert ok(r) == '{"n":1}'


@needs_landlock
def test_kernel_only_gives_json_and_require(shared_host):
    r = shared_host.exec("return json.encode({1, json.null}), require('json') == json", policy="kernel-only")
    assert ok(r) == ["[1,null]", True]


@pytest.fixture(scope="module")
def gated_host():
    d = tempfile.mkdtemp(prefix="tp-json-", dir="/tmp")
    os.makedirs(os.path.join(d, "pol"))
    # nojson: no workspace either (standard's sessions have one, and with it io.open and
    # io.lines are in every exec), so io is a table of refused names only
    for name, lua, extra in [("nojson", {"libraries": ["base", "string"], "functions": []},
                              {"session": {"workspace_bytes": 0}}),
                             ("encodeonly", {"libraries": ["base"], "functions": ["json.encode"]}, {})]:
        with open(os.path.join(d, "pol", name + ".json"), "w") as f:
            json.dump({"name": name, "extends": "standard", "lua": lua, **extra}, f)
    h = Host(args=("--policy-dir", os.path.join(d, "pol")))
    yield h
    h.close()
    shutil.rmtree(d)


@pytest.mark.parametrize("code", ["return json.encode({})", "return json", "return pcall(function() return json end)"])
def test_a_policy_without_json_refuses_it(gated_host, code):
    r = gated_host.exec(code, policy="nojson")
    e = r["error"]
    assert (r["ok"], e["kind"], e["layer"], e["message"]) == \
        (False, "policy_violation", "language", "json is not available in the sandbox (policy nojson)")


def test_a_policy_may_give_one_function(gated_host):
    assert ok(gated_host.exec("return json.encode({1})", policy="encodeonly")) == "[1]"
    r = gated_host.exec("return json.decode('[1]')", policy="encodeonly")
    assert (r["error"]["kind"], r["error"]["message"]) == \
        ("policy_violation", "json.decode is not available in the sandbox (policy encodeonly)")
    r = gated_host.exec("return json.null", policy="encodeonly")
    assert (r["error"]["kind"], r["error"]["message"]) == \
        ("policy_violation", "json.null is not available in the sandbox (policy encodeonly)")


def test_require_json_is_the_global(shared_host):
    # LLM-written Lua starts with `local json = require("json")`: require gives the
    # libraries the snippet already has, the same tables as the globals.
    r = shared_host.exec("local j = require('json') json = nil return j.encode({1}), require('json') ~= nil")
    assert ok(r) == ["[1]", True]


def test_require_json_without_json(gated_host):
    r = gated_host.exec("return require('json')", policy="nojson")
    assert (r["error"]["kind"], r["error"]["message"]) == \
        ("policy_violation", "require('json') is not available in the sandbox (policy nojson: no modules; "
                             "its libraries are globals: string, table, math, utf8, coroutine, os, io)")


def test_a_policy_without_io_still_names_io_refusals(gated_host):
    # Only json is left out of _G when a policy gives none of it; io stays a
    # table whose stock names are refused with their reason.
    r = gated_host.exec("return io.open('/etc/passwd')", policy="nojson")
    assert (r["error"]["kind"], r["error"]["message"]) == \
        ("policy_violation", "io.open is not available in the sandbox (policy nojson: no files)")
    # standard gives sessions a workspace: a one-shot exec has io.open, which refuses the path
    r = gated_host.exec("return io.open('/etc/passwd')", policy="standard")
    assert (r["error"]["kind"], r["error"]["message"]) == \
        ("policy_violation", "io.open('/etc/passwd') is refused: files are in a session's workspace, "
                             "and this exec has none (policy standard: open a session)")


def test_the_json_libraries_llm_code_names_find_json(shared_host):
    """`local ok, json = pcall(require, "cjson")` and the like: cjson and dkjson
    give json (their encode/decode/null are its); other names stay refused."""
    r = shared_host.exec("local a, b = require('cjson'), require('dkjson') "
                         "return {a == json, b == json, a.encode({1, 2}), a.decode('[3]')[1]}")
    assert r["ok"] is True and r["value"] == [True, True, "[1,2]", 3], r
    r = shared_host.exec("local ok, j = pcall(require, 'lunajson') return ok")
    assert r["error"]["kind"] == "policy_violation", r
    assert r["error"]["message"].startswith("require('lunajson') is not available in the sandbox"), r
