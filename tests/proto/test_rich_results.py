"""Rich results (issue 16 part 3): every value also comes as `text`, as a REPL
prints it (Python's repr, lua5.4's print); a pandas DataFrame or Series comes as
JSON records plus its text table; a numpy array as its list; a matplotlib figure
shown or left open comes back as a PNG in `images`, within output_bytes, and
through MCP as image content. Each test checks the exact value, text or error."""
import base64
import json
import os
import struct
import subprocess

import pytest

from conftest import Host, needs_data

PY311 = "/usr/bin/python3.11"


@pytest.fixture(scope="module")
def host():
    h = Host()
    yield h
    h.close()


def run(host, code, lang="python", **params):
    r = host.call("sandbox/exec", {"lang": lang, "code": code, **params}, timeout=90)
    assert "result" in r, r
    return r["result"]


def png_size(data):
    """(width, height) of a PNG file's IHDR; asserts the signature."""
    raw = base64.b64decode(data, validate=True)
    assert raw[:8] == b"\x89PNG\r\n\x1a\n" and raw[12:16] == b"IHDR", raw[:16]
    return struct.unpack(">II", raw[16:24])


def cpython_repr(setup, expr):
    """repr(expr) in plain python3.11 (pandas' text tables come from pandas)."""
    out = subprocess.run([PY311, "-c", setup + "\nimport sys\nsys.stdout.write(repr(" + expr +
                          "))"], capture_output=True, text=True, timeout=60, check=True)
    return out.stdout


# -- Python: text is the REPL's repr -----------------------------------------------

@pytest.mark.parametrize("code,value,text", [
    ("1 + 1", 2, "2"),
    ("'hi'", "hi", "'hi'"),
    ("[1, None, True, 'a\"b']", [1, None, True, 'a"b'], "[1, None, True, 'a\"b']"),
    ("{'k': (1, 2.5)}", {"k": [1, 2.5]}, "{'k': (1, 2.5)}"),
    ("0.1 + 0.2", 0.30000000000000004, "0.30000000000000004"),
    ("'\\x01é'", "\x01é", "'\\x01é'"),
])
def test_python_text_is_the_repr(host, code, value, text):
    res = run(host, code)
    assert (res["ok"], res["value"], res["text"]) == (True, value, text), res
    assert "value_repr" not in res and res["truncated"] == {"stdout": False, "stderr": False}


def test_python_large_container_text_is_its_json(host):
    """Above 4096 bytes of JSON a list's, tuple's or dict's text is the value's
    own JSON text, not a second rendering (its repr); at 4096 and below, and
    for any other value however long, it stays the repr."""
    at = run(host, "['x' * 4092]")  # ["x…"]: 4096 bytes of JSON
    assert (at["value"], at["text"]) == (["x" * 4092], "['" + "x" * 4092 + "']")
    over = run(host, "['x' * 4093]")
    assert (over["value"], over["text"]) == (["x" * 4093], '["' + "x" * 4093 + '"]')
    rec = run(host, "[{'id': i, 'p': i * 0.1, 'ok': i % 2 == 0, 'n': None, 's': 'é\"'}"
                    " for i in range(100)]")
    assert rec["text"] == json.dumps(rec["value"], separators=(",", ":"), ensure_ascii=False)
    assert rec["value"][3] == {"id": 3, "p": 0.30000000000000004, "ok": False, "n": None,
                               "s": 'é"'}
    tup = run(host, "tuple(range(1500))")
    assert (tup["value"], tup["text"]) == (list(range(1500)),
                                           "[" + ",".join(map(str, range(1500))) + "]")
    d = run(host, "{str(i): [i] for i in range(500)}")
    assert d["text"] == json.dumps(d["value"], separators=(",", ":"))
    s = run(host, "'y' * 5000")
    assert s["text"] == "'" + "y" * 5000 + "'"
    # a NaN is a null in the JSON: the repr, which shows it, stays the text
    nan = run(host, "[float('nan')] + list(range(1500))")
    assert (nan["value"][:2], nan["nonfinite"]) == ([None, 0], {"/0": "nan"})
    assert nan["text"] == "[nan, " + ", ".join(map(str, range(1500))) + "]"


def test_python_no_value_has_no_text(host):
    for code in ("x = 1", "None", "print('a')"):
        res = run(host, code)
        assert (res["ok"], res["value"], res["text"]) == (True, None, None), res


def test_python_repr_value_is_its_own_text(host):
    res = run(host, "{3}")
    assert (res["value"], res["value_repr"], res["text"]) == ("{3}", True, "{3}"), res


def test_python_text_cut_to_result_bytes_is_marked(host):
    # JSON "[1,2,3,4,5,6,7,8,9,10]" is 22 bytes; the repr, with its spaces, 31.
    res = run(host, "list(range(1, 11))", limits={"result_bytes": 24})
    assert res["ok"] is True and res["value"] == list(range(1, 11)), res
    assert res["text"] == "[1, 2, 3, 4, 5, 6, 7, 8, 9"[:24], res
    assert res["truncated"] == {"stdout": False, "stderr": False, "text": True}, res


def test_python_text_cut_never_splits_a_character(host):
    # JSON [1,2,3,4,5,"é…"] is 34 bytes; the repr's spaces put byte 34 inside the
    # ninth é (17 bytes after "[1, 2, 3, 4, 5, '"): the text ends after the eighth.
    res = run(host, "[1, 2, 3, 4, 5, 'é' * 10]", limits={"result_bytes": 34})
    assert res["ok"] is True, res
    assert res["text"] == "[1, 2, 3, 4, 5, '" + "é" * 8 and res["truncated"]["text"] is True, res


def test_python_a_raising_repr_is_the_snippet_runtime_error(host):
    code = ("class L(list):\n    def __repr__(self):\n        raise ValueError('no repr')\n"
            "L([1])")
    res = run(host, code)
    assert res["ok"] is False, res
    e = res["error"]
    assert (e["kind"], e["type"], e["message"], e["line"]) == (
        "runtime_error", "ValueError", "no repr", 3), res


def test_python_repr_runs_under_the_limits(host):
    code = ("class L(list):\n    def __repr__(self):\n        while True:\n            x = 1\n"
            "L([1])")
    res = run(host, code, limits={"instructions": 100000})
    assert res["ok"] is False and res["error"]["kind"] == "instruction_limit", res
    assert res["error"]["limit"]["name"] == "instructions", res


# -- Lua: text is what lua5.4's interpreter prints ------------------------------------

@pytest.mark.parametrize("code,value,text", [
    ("return 1 + 1", 2, "2"),
    ("return 0.1 + 0.2", 0.30000000000000004, "0.3"),
    ("return 3.0, 'x', nil, true", [3.0, "x", None, True], "3.0\tx\tnil\ttrue"),
    ("return 1e100, -0.0, 2^63", [1e100, -0.0, 9.223372036854776e18],
     "1e+100\t-0.0\t9.2233720368548e+18"),
    ("return {1, 2, {a = 1}}", [1, 2, {"a": 1}], '[1,2,{"a":1}]'),
    ("return nil", None, "nil"),
    ("return print", "<function>", "<function>"),
    ("return math.maxinteger", 9223372036854775807, "9223372036854775807"),
])
def test_lua_text_is_what_the_interpreter_prints(host, code, value, text):
    res = run(host, code, lang="lua")
    assert (res["ok"], res["value"], res["text"]) == (True, value, text), res


def test_lua_text_matches_lua54(host):
    if not os.path.exists("/usr/bin/lua5.4"):
        pytest.skip("lua5.4 is not installed (make deps installs it)")
    for expr in ("1/3, 2^53, -7 // 2, 7 / 2, 'a b'", "100000000000000, 1e15, 0.1"):
        want = subprocess.run(["/usr/bin/lua5.4", "-e", "print(%s)" % expr],
                              capture_output=True, text=True, check=True).stdout[:-1]
        res = run(host, "return " + expr, lang="lua")
        assert res["text"] == want, (res, want)


def test_lua_nothing_returned_has_no_text(host):
    res = run(host, "local x = 1", lang="lua")
    assert (res["ok"], res["value"], res["text"]) == (True, None, None), res


def test_lua_no_metamethod_runs_for_the_text(host):
    code = ("local t = setmetatable({1}, {__tostring = function() error('ran') end,"
            " __name = 'X'})\nreturn t")
    res = run(host, code, lang="lua")
    assert (res["ok"], res["value"], res["text"]) == (True, [1], "[1]"), res


def test_lua_text_is_never_longer_than_the_counted_json(host):
    # Lua's text is its values' JSON or shorter (no quotes, tabs for commas and
    # brackets, at most 14 digits): a value within result_bytes has all its text.
    res = run(host, "return 'ab', 1e100, true", lang="lua", limits={"result_bytes": 24})
    assert (res["ok"], res["text"]) == (True, "ab\t1e+100\ttrue"), res
    assert res["truncated"] == {"stdout": False, "stderr": False}, res


def test_errors_have_a_null_text(host):
    for lang, code in (("lua", "error('x')"), ("python", "1/0")):
        res = run(host, code, lang=lang)
        assert res["ok"] is False and res["text"] is None, res


# -- the data preset: frames, arrays, scalars ---------------------------------------

GROUPBY = ("import pandas as pd\n"
           "df = pd.DataFrame({'k': ['a', 'b', 'a', 'c'], 'v': [1, 2, 3, 5]})\n")


@needs_data
def test_series_comes_as_records_and_its_text_table(host):
    res = run(host, GROUPBY + "df.groupby('k')['v'].sum()", policy="data")
    assert res["ok"] is True, res
    assert res["value"] == [{"k": "a", "v": 4}, {"k": "b", "v": 2}, {"k": "c", "v": 5}], res
    assert res["text"] == cpython_repr(GROUPBY, "df.groupby('k')['v'].sum()"), res
    assert "value_repr" not in res


@needs_data
def test_dataframe_records_keep_a_default_index_out_and_a_real_one_in(host):
    res = run(host, GROUPBY + "df", policy="data")
    assert res["value"] == [{"k": "a", "v": 1}, {"k": "b", "v": 2}, {"k": "a", "v": 3},
                            {"k": "c", "v": 5}], res
    assert res["text"] == cpython_repr(GROUPBY, "df"), res
    res = run(host, GROUPBY + "df.groupby('k').agg(total=('v', 'sum'), n=('v', 'size'))",
              policy="data")
    assert res["value"] == [{"k": "a", "total": 4, "n": 2}, {"k": "b", "total": 2, "n": 1},
                            {"k": "c", "total": 5, "n": 1}], res


@needs_data
def test_missing_values_are_null_and_times_iso(host):
    code = ("import pandas as pd\nimport numpy as np\n"
            "pd.DataFrame({'x': [1.5, np.nan], 't': [pd.Timestamp('2024-06-01 12:30'), pd.NaT],"
            " 'd': [pd.Timedelta('1h'), None]})")
    res = run(host, code, policy="data")
    assert res["ok"] is True, res
    assert res["value"] == [{"x": 1.5, "t": "2024-06-01T12:30:00", "d": "0 days 01:00:00"},
                            {"x": None, "t": None, "d": None}], res


@needs_data
def test_a_frame_too_big_for_result_bytes_comes_as_its_text(host):
    code = "import pandas as pd\npd.DataFrame({'v': range(100000)})"
    res = run(host, code, policy="data", limits={"result_bytes": 65536})
    assert res["ok"] is True and res["value_repr"] is True, res
    assert res["value"] == res["text"] == cpython_repr(
        "import pandas as pd", "pd.DataFrame({'v': range(100000)})"), res
    assert res["text"].endswith("[100000 rows x 1 columns]"), res


@needs_data
def test_multiindex_columns_come_as_records_with_dotted_names(host):
    """A column per tuple of levels, named by its levels joined with '.' (as
    pandas.json_normalize names nested keys), empty levels left out."""
    expr = "df.groupby('k').agg({'v': ['sum', 'mean']})"
    res = run(host, GROUPBY + expr, policy="data")
    assert res["ok"] is True and "value_repr" not in res, res
    assert res["value"] == [{"k": "a", "v.sum": 4, "v.mean": 2.0},
                            {"k": "b", "v.sum": 2, "v.mean": 2.0},
                            {"k": "c", "v.sum": 5, "v.mean": 5.0}], res
    assert res["text"] == cpython_repr(GROUPBY, expr), res
    # a MultiIndex on both axes: the index's levels are columns, then the tuples'
    expr = "df.assign(j=[1, 1, 2, 2]).groupby(['k', 'j']).agg({'v': ['sum']})"
    res = run(host, GROUPBY + expr, policy="data")
    assert res["value"] == [{"k": "a", "j": 1, "v.sum": 1}, {"k": "a", "j": 2, "v.sum": 3},
                            {"k": "b", "j": 1, "v.sum": 2}, {"k": "c", "j": 2, "v.sum": 5}], res


@needs_data
def test_multiindex_columns_whose_names_collide_come_as_text(host):
    expr = ("pd.DataFrame([[1, 2]], columns=pd.MultiIndex.from_tuples("
            "[('a', 'b.c'), ('a.b', 'c')]))")
    res = run(host, GROUPBY + expr, policy="data")
    assert res["ok"] is True and res["value_repr"] is True, res
    assert res["value"] == res["text"] == cpython_repr(GROUPBY, expr), res


@needs_data
@pytest.mark.parametrize("code,value,text", [
    ("np.arange(6).reshape(2, 3)", [[0, 1, 2], [3, 4, 5]], "array([[0, 1, 2],\n       [3, 4, 5]])"),
    ("np.int64(3)", 3, "3"),
    ("np.array([1, 2, 3]).mean()", 2.0, "2.0"),
    ("np.bool_(True)", True, "True"),
    ("np.array(['a', 'b'])", "array(['a', 'b'], dtype='<U1')", "array(['a', 'b'], dtype='<U1')"),
])
def test_numpy_values(host, code, value, text):
    res = run(host, "import numpy as np\n" + code, policy="data")
    assert (res["ok"], res["value"], res["text"]) == (True, value, text), res
    assert bool(res.get("value_repr")) == isinstance(value, str), res


# -- figures -----------------------------------------------------------------------

PLT = "import matplotlib.pyplot as plt\n"


@needs_data
def test_a_figure_left_open_is_an_image(host):
    res = run(host, PLT + "plt.plot([1, 3, 2])\nplt.title('t')\n'done'", policy="data")
    assert (res["ok"], res["value"]) == (True, "done"), res
    assert [i["mime"] for i in res["images"]] == ["image/png"], res
    assert png_size(res["images"][0]["data"]) == (640, 480)


@needs_data
def test_shown_figures_come_first_in_order_then_open_ones(host):
    code = (PLT + "plt.figure(figsize=(2, 1)); plt.plot([1]); plt.show()\n"
            "plt.figure(figsize=(3, 1)); plt.plot([1]); plt.show()\n"
            "plt.figure(figsize=(4, 1)); plt.plot([1])\n")
    res = run(host, code, policy="data")
    assert res["ok"] is True, res
    assert [png_size(i["data"]) for i in res["images"]] == [(200, 100), (300, 100), (400, 100)]


@needs_data
def test_a_closed_figure_is_no_image_and_no_figure_is_no_images_key(host):
    res = run(host, PLT + "plt.plot([1])\nplt.close()\n1", policy="data")
    assert res["ok"] is True and "images" not in res, res
    res = run(host, "1", policy="data")
    assert "images" not in res, res


@needs_data
def test_images_count_against_output_bytes(host):
    code = PLT + "print('x' * 100)\nplt.plot([1, 3, 2])\n"
    res = run(host, code, policy="data", limits={"output_bytes": 4000})
    assert res["ok"] is False, res
    e = res["error"]
    assert (e["kind"], e["layer"], e["limit"]["name"], e["limit"]["limit"]) == (
        "output_limit", "language", "output_bytes", 4000), res
    assert e["limit"]["used"] > 4000 and res["stdout"] == "x" * 100 + "\n", res
    assert "images" not in res


@needs_data
def test_more_than_sixteen_figures_is_a_result_error(host):
    code = PLT + "for i in range(17):\n    plt.figure(figsize=(1, 1))\n"
    res = run(host, code, policy="data")
    assert res["ok"] is False, res
    assert (res["error"]["kind"], res["error"]["message"]) == (
        "result_error", "more than 16 figures: close some (plt.close) or draw them as "
        "subplots of one"), res


@needs_data
def test_a_failed_exec_has_no_images_and_leaves_no_figure_to_the_next():
    h = Host()
    try:
        sid = h.call("sandbox/session/open", {"lang": "python", "policy": "data"})
        assert "result" in sid, sid
        sid = sid["result"]["session_id"]
        res = run(h, PLT + "plt.plot([1])\n1/0", session_id=sid)
        assert res["ok"] is False and "images" not in res, res
        res = run(h, "2", session_id=sid)
        assert (res["ok"], res["value"]) == (True, 2) and "images" not in res, res
        res = run(h, "plt.figure(figsize=(1, 1))\n3", session_id=sid)
        assert [png_size(i["data"]) for i in res["images"]] == [(100, 100)], res
    finally:
        h.close()


@needs_data
def test_a_figure_a_savefig_path_cannot_write_is_refused_not_an_image(host):
    res = run(host, PLT + "plt.plot([1])\nplt.savefig('/tmp/x.png')", policy="data")
    assert res["ok"] is False and res["error"]["kind"] == "policy_violation", res
    assert "images" not in res and not os.path.exists("/tmp/x.png")


# -- MCP: a group-by as a table, a chart as an image --------------------------------

@needs_data
@pytest.mark.parametrize("rev", ["2025-06-18", "2024-11-05"])
def test_mcp_groupby_and_chart_come_as_table_and_image(rev):
    h = Host(args=("--policy", "data"))
    try:
        r = h.call("initialize", {"protocolVersion": rev, "capabilities": {},
                                  "clientInfo": {"name": "t", "version": "1"}})
        assert r["result"]["protocolVersion"] == rev, r
        code = GROUPBY + "s = df.groupby('k')['v'].sum()\ns.plot(kind='bar')\ns"
        r = h.call("tools/call", {"name": "run_python", "arguments": {"code": code}}, timeout=90)
        res = r["result"]
        assert res["isError"] is False, res
        text, image = res["content"]
        assert (text["type"], image["type"], image["mimeType"]) == ("text", "image", "image/png")
        assert png_size(image["data"]) == (640, 480)
        body = json.loads(text["text"])
        assert body == res["structuredContent"], res
        assert body["value"] == [{"k": "a", "v": 4}, {"k": "b", "v": 2}, {"k": "c", "v": 5}]
        assert body["text"] == cpython_repr(GROUPBY, "df.groupby('k')['v'].sum()")
        # The result names each image; its data travels once, as the image item.
        assert body["images"] == [{"mime": "image/png",
                                   "bytes": len(base64.b64decode(image["data"]))}], body
    finally:
        h.close()


# -- numpy scalars inside values ------------------------------------------------------

@needs_data
@pytest.mark.parametrize("code,value", [
    ("{'total': np.int64(5), 'mean': np.float32(1.5), 'ok': np.bool_(True), np.int32(3): 'k'}",
     {"total": 5, "mean": 1.5, "ok": True, "3": "k"}),
    ("[np.uint8(255), np.float16(0.5), np.int64(-2**63)]", [255, 0.5, -2**63]),
    ("pd.Series([1, 2], index=[10, 20]).to_dict()", {"10": 1, "20": 2}),
])
def test_numpy_scalars_in_a_value_are_their_numbers(host, code, value):
    res = run(host, "import numpy as np\nimport pandas as pd\n" + code, policy="data")
    assert (res["ok"], res["value"]) == (True, value), res
    assert "value_repr" not in res


@needs_data
@pytest.mark.parametrize("code,message", [
    ("{np.int32(7): 1, '7': 2}", "keys 7 and '7' both become \"7\" in JSON"),
])
def test_numpy_scalars_keep_the_refusals(host, code, message):
    res = run(host, "import numpy as np\n" + code, policy="data")
    assert res["ok"] is False, res
    assert (res["error"]["kind"], res["error"]["message"]) == ("result_error", message), res


@needs_data
def test_numpy_nan_is_null_named_by_its_pointer(host):
    res = run(host, "import numpy as np\n[np.float32('nan'), {'x': np.float64('-inf')}]",
              policy="data")
    assert (res["ok"], res["value"], res["nonfinite"]) == (
        True, [None, {"x": None}], {"/0": "nan", "/1/x": "-inf"}), res


@needs_data
def test_a_snippet_subclass_of_a_numpy_scalar_is_not_asked_for_its_item(host):
    # item() of the snippet's own class would be snippet code in the raw conversion:
    # its instance is not JSON, and the value is its repr (numpy's, the class has none).
    code = ("import numpy as np\nclass X(np.int64):\n    def item(self):\n"
            "        print('ran')\n        return 99\n[X(5)]")
    res = run(host, code, policy="data")
    assert (res["ok"], res["value"], res.get("value_repr"), res["stdout"]) == (
        True, "[5]", True, ""), res


@needs_data
def test_numpy_dates_are_not_made_numbers(host):
    code = "import numpy as np\nnp.datetime64('2020-01-01T00:00:00.000000000')"
    res = run(host, code, policy="data")
    assert (res["ok"], res["value"], res["value_repr"]) == (
        True, "numpy.datetime64('2020-01-01T00:00:00.000000000')", True), res


@needs_data
@pytest.mark.parametrize("fontset", ["dejavusans", "cm", "stix", "stixsans", "dejavuserif"])
def test_mathtext_labels_draw_in_every_fontset(host, fontset):
    # Mathtext reads fonts the zygote preloaded; a worker cannot stat them, and a
    # findfont that could not would rebuild its cache in a thread (refused).
    code = (PLT + "plt.rcParams['mathtext.fontset'] = %r\n" % fontset +
            "plt.title(r'$\\alpha^2 + \\sqrt{x} \\sum_i \\frac{a}{b}$')\n"
            "plt.ylabel(r'$\\int_0^1 f(x)\\,dx \\mathcal{L} \\mathbf{m}$')\nplt.plot([1, 2])\n1")
    res = run(host, code, policy="data")
    assert (res["ok"], res["value"], res["stderr"]) == (True, 1, ""), res
    assert png_size(res["images"][0]["data"]) == (640, 480)


@needs_data
def test_a_font_file_outside_the_preloaded_ones_is_refused(host):
    code = PLT + "plt.title('x', fontproperties={'fname': '/etc/passwd'})\n1"
    res = run(host, code, policy="data")
    assert res["ok"] is False, res
    assert (res["error"]["kind"], res["error"]["message"]) == (
        "policy_violation", "the font '/etc/passwd' was not loaded in the zygote (policy data: "
        "no files)"), res
    assert "root:" not in json.dumps(res)
