"""error({...}) in Lua: a table error value comes back as a structured error:
error.message is its "message" field (a string) or its JSON text, and error.data
the whole table as JSON, under the exec's result caps (lua-sandbox/lsandbox.c,
carried by the worker reply's data field, common/msg.h)."""
import pytest

TB = "stack traceback:\n\t[C]: in function 'error'\n\tsnippet:{}: in main chunk"


def error_of(r):
    assert r["ok"] is False and r["value"] is None, r
    return r["error"]


CASES = [  # code, message, data (None: no data field)
    ("error({code = 42})", '{"code":42}', {"code": 42}),
    ("error({code = 42, message = 'bad input', detail = {1, 2}})", "bad input",
     {"code": 42, "detail": [1, 2], "message": "bad input"}),
    ("error({message = 5})", '{"message":5}', {"message": 5}),
    ("error({})", "{}", {}),
    ("error({1, 'two', {x = json.null}})", '[1,"two",{"x":null}]', [1, "two", {"x": None}]),
    ("error({[2] = 'b', z = true, [1] = 'a'})", '{"1":"a","2":"b","z":true}', {"1": "a", "2": "b", "z": True}),
    ("error({f = print, r = 0.1})", '{"f":"<function>","r":0.1}', {"f": "<function>", "r": 0.1}),
    # Raw access: neither __index nor __tostring runs; the message is the raw field's.
    ("error(setmetatable({}, {__index = function() return 'ran' end, __tostring = function() return 'ran' end}))",
     "{}", {}),
    ("error(setmetatable({message = 'raw'}, {__index = {message = 'meta'}}))", "raw", {"message": "raw"}),
    # What cannot become JSON: no data, and the message says why.
    ("local t = {} t.me = t error(t)", "(error object is a table value: cycle in value)", None),
    ("error({x = 0/0})", "(error object is a table value: NaN is not a JSON number)", None),
    ("error({[1] = 'a', ['1'] = 'b'})",
     '(error object is a table value: keys 1 and "1" both become "1" in JSON)', None),
    ("local t = {} t.me = t error({message = 'still named', t = t})", "still named", None),
]


@pytest.mark.parametrize("code,message,data", CASES)
def test_table_errors_are_structured(shared_host, code, message, data):
    e = error_of(shared_host.exec(code))
    assert (e["kind"], e["layer"], e["type"], e["message"], e["line"], e["traceback"]) == \
        ("runtime_error", "language", "table", message, 1, TB.format(1))
    if data is None:
        assert "data" not in e, e
    else:
        assert e["data"] == data


def test_other_errors_have_no_data(shared_host):
    for code, typ, msg in [("error('plain')", "string", "plain"), ("error(42)", "number", "42"),
                           ("error(true)", "boolean", "(error object is a boolean value)"),
                           ("error()", "nil", "(error object is a nil value)")]:
        e = error_of(shared_host.exec(code))
        assert (e["type"], e["message"]) == (typ, msg) and "data" not in e, e


def test_data_is_under_the_result_caps(shared_host):
    e = error_of(shared_host.exec("error({s = ('x'):rep(200)})", limits={"result_bytes": 100}))
    assert (e["message"], "data" in e) == ("(error object is a table value: longer than result_bytes (100))", False)
    e = error_of(shared_host.exec("error({s = ('x'):rep(80)})", limits={"result_bytes": 100}))
    assert e["data"] == {"s": "x" * 80}
    e = error_of(shared_host.exec("error({{{{1}}}})", limits={"result_depth": 3}))
    assert (e["message"], "data" in e) == ("(error object is a table value: nested deeper than result_depth (3))", False)
    e = error_of(shared_host.exec("error({message = 'deep', {{{1}}}})", limits={"result_depth": 3}))
    assert (e["message"], "data" in e) == ("deep", False)
    e = error_of(shared_host.exec("error({{{1}}})", limits={"result_depth": 3}))
    assert e["data"] == [[[1]]]


def test_a_long_message_is_cut_but_data_is_whole(shared_host):
    e = error_of(shared_host.exec("error({s = ('y'):rep(10000)})"))
    assert e["data"] == {"s": "y" * 10000}
    assert e["message"] == ('{"s":"' + "y" * 10000 + '"}')[:8192] + "... (1816 bytes cut)"


def test_a_caught_table_error_is_the_table(shared_host):
    r = shared_host.exec("local ok, e = pcall(error, {code = 7}) return ok, e.code")
    assert r["value"] == [False, 7]


def test_in_a_session_too(shared_host):
    s = shared_host.call("sandbox/session/open", {"lang": "lua"})["result"]["session_id"]
    e = error_of(shared_host.exec("n = (n or 0) + 1 error({n = n})", session_id=s))
    assert e["data"] == {"n": 1}
    e = error_of(shared_host.exec("n = n + 1 error({n = n, message = 'again'})", session_id=s))
    assert (e["message"], e["data"]) == ("again", {"n": 2, "message": "again"})
    shared_host.call("sandbox/session/close", {"session_id": s})


def test_mcp_tool_result_carries_data(shared_host):
    r = shared_host.call("tools/call", {"name": "run_lua", "arguments": {"code": "error({code = 3})"}})
    sc = r["result"]["structuredContent"]
    assert r["result"]["isError"] is True
    assert (sc["error"]["message"], sc["error"]["data"]) == ('{"code":3}', {"code": 3})
