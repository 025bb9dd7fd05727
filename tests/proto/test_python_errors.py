"""Python errors as CPython 3.11 prints them, for the snippet's own frames
(issue 16, part 3): a syntax error (SyntaxError, IndentationError, TabError)
comes back with its line, its column (CPython's 1-based offset) and the text
CPython prints for it (file and line, the source line, the caret line); a
runtime error's traceback keeps the caret lines (`~~^~~`) CPython prints
under the failing expression, and its column is where that expression starts
in the innermost snippet frame (co_positions).

The expected texts were made once by running each snippet with
/usr/bin/python3.11 as a file named `<snippet>` (the name tidepool compiles
it under) and reading stderr (its absolute path shortened to `<snippet>`);
for the columns, SyntaxError.offset, or the innermost frame's co_positions()
start column as a 1-based character count. This test does not need
python3.11 to run."""
import pytest

from conftest import Host

# (name, code, kind, line, column, traceback) -- from python3.11, see above.
CASES = [
    ('missing_paren', 'x = 1\nprint((x + 2)\ny = 3\n', 'syntax_error', 2, 6,
     '  File "<snippet>", line 2\n    print((x + 2)\n         ^\nSyntaxError: \'(\' was never closed'),
    ('unterminated_string', "a = 1\ns = 'abc\n", 'syntax_error', 2, 5,
     '  File "<snippet>", line 2\n    s = \'abc\n        ^\nSyntaxError: unterminated string literal (detected at line 2)'),
    ('bad_indent', 'def f():\n    x = 1\n      y = 2\n', 'syntax_error', 3, 6,
     '  File "<snippet>", line 3\n    y = 2\nIndentationError: unexpected indent'),
    ('tab_error', 'if True:\n        x = 1\n\ty = 2\n', 'syntax_error', 3, 1,
     '  File "<snippet>", line 3\n    y = 2\nTabError: inconsistent use of tabs and spaces in indentation'),
    ('expected_indent', 'def f():\nreturn 1\n', 'syntax_error', 2, 1,
     '  File "<snippet>", line 2\n    return 1\n    ^\nIndentationError: expected an indented block after function definition on line 1'),
    ('invalid_syntax', 'x = 1 +* 2\n', 'syntax_error', 1, 8,
     '  File "<snippet>", line 1\n    x = 1 +* 2\n           ^\nSyntaxError: invalid syntax'),
    ('gen_paren', 'f(a for a in b, c)\n', 'syntax_error', 1, 3,
     '  File "<snippet>", line 1\n    f(a for a in b, c)\n      ^^^^^^^^^^^^\nSyntaxError: Generator expression must be parenthesized'),
    ('uni_syntax', "x = 'é' +* 1\n", 'syntax_error', 1, 10,
     '  File "<snippet>", line 1\n    x = \'é\' +* 1\n              ^\nSyntaxError: invalid syntax'),
    ('zero_div', 'def f(a, b):\n    return a / b\n\nf(1, 0)\n', 'runtime_error', 2, 12,
     'Traceback (most recent call last):\n  File "<snippet>", line 4, in <module>\n    f(1, 0)\n  File "<snippet>", line 2, in f\n    return a / b\n           ~~^~~\nZeroDivisionError: division by zero'),
    ('attr_chain', 'class A:\n    pass\na = A()\na.b = A()\nv = a.b.c.d\n', 'runtime_error', 5, 5,
     'Traceback (most recent call last):\n  File "<snippet>", line 5, in <module>\n    v = a.b.c.d\n        ^^^^^\nAttributeError: \'A\' object has no attribute \'c\''),
    ('attr_chain_call', "import json\nx = {'k': [1, 2]}\ny = json.dumps(x).upper().nope()\n", 'runtime_error', 3, 5,
     'Traceback (most recent call last):\n  File "<snippet>", line 3, in <module>\n    y = json.dumps(x).upper().nope()\n        ^^^^^^^^^^^^^^^^^^^^^^^^^^\nAttributeError: \'str\' object has no attribute \'nope\''),
    ('index_expr', "d = {'a': [1, 2]}\ndef g(k):\n    return d[k][0] + 1\nprint(g('a'))\ng('b')\n", 'runtime_error', 3, 12,
     'Traceback (most recent call last):\n  File "<snippet>", line 5, in <module>\n    g(\'b\')\n  File "<snippet>", line 3, in g\n    return d[k][0] + 1\n           ~^^^\nKeyError: \'b\''),
    ('whole_line', "def f():\n    raise ValueError('x')\nf()\n", 'runtime_error', 2, 5,
     'Traceback (most recent call last):\n  File "<snippet>", line 3, in <module>\n    f()\n  File "<snippet>", line 2, in f\n    raise ValueError(\'x\')\nValueError: x'),
    ('tab_frame', 'def f(a):\n\treturn a // 0\nf(1)\n', 'runtime_error', 2, 9,
     'Traceback (most recent call last):\n  File "<snippet>", line 3, in <module>\n    f(1)\n  File "<snippet>", line 2, in f\n    return a // 0\n           ~~^^~~\nZeroDivisionError: integer division or modulo by zero'),
    ('unicode_bin', "d = {'é': 1}\nx = d['é'] + None\n", 'runtime_error', 2, 5,
     'Traceback (most recent call last):\n  File "<snippet>", line 2, in <module>\n    x = d[\'é\'] + None\n        ~~~~~~~^~~~~~\nTypeError: unsupported operand type(s) for +: \'int\' and \'NoneType\''),
    ('multiline', 'x = (1 +\n     None)\n', 'runtime_error', 1, 6,
     'Traceback (most recent call last):\n  File "<snippet>", line 1, in <module>\n    x = (1 +\n         ^^^\nTypeError: unsupported operand type(s) for +: \'int\' and \'NoneType\''),
    ('last_expr', 'x = [1]\nx[5]\n', 'runtime_error', 2, 1,
     'Traceback (most recent call last):\n  File "<snippet>", line 2, in <module>\n    x[5]\n    ~^^^\nIndexError: list index out of range'),
    ('empty_msg', 'raise ValueError\n', 'runtime_error', 1, 1,
     'Traceback (most recent call last):\n  File "<snippet>", line 1, in <module>\n    raise ValueError\nValueError'),
]


@pytest.fixture(scope="module")
def host():
    h = Host()
    yield h
    h.close()


def run(h, code):
    r = h.call("sandbox/exec", {"lang": "python", "code": code}, timeout=60)
    assert "result" in r, r
    return r["result"]


@pytest.mark.parametrize("name,code,kind,line,column,traceback", CASES, ids=[c[0] for c in CASES])
def test_error_as_cpython_prints_it(host, name, code, kind, line, column, traceback):
    r = run(host, code)
    e = r["error"]
    assert r["ok"] is False, r
    assert (e["kind"], e["layer"], e["line"], e["column"], e["traceback"]) == \
        (kind, "language", line, column, traceback), e
    # the message is the last line's, after the type
    assert traceback.endswith(e["type"] + (": " + e["message"] if e["message"] else "")), e


def test_a_syntax_error_has_no_frames_of_the_shim(host):
    e = run(host, "x = 1\ny = (\n")["error"]
    assert (e["kind"], e["type"], e["message"], e["line"], e["column"], e["traceback"]) == (
        "syntax_error", "SyntaxError", "'(' was never closed", 2, 5,
        '  File "<snippet>", line 2\n    y = (\n        ^\nSyntaxError: \'(\' was never closed')


def test_recursion_collapses_repeated_lines_as_cpython_does(host):
    # CPython prints the first three of a repeated frame and counts the rest;
    # the count is the sandbox's recursion limit, not python3.11's 1000.
    e = run(host, "def r(n):\n    return r(n + 1)\nr(0)\n")["error"]
    frame = '  File "<snippet>", line 2, in r\n    return r(n + 1)\n           ^^^^^^^^\n'
    head = 'Traceback (most recent call last):\n  File "<snippet>", line 3, in <module>\n    r(0)\n' + frame * 3
    assert e["traceback"].startswith(head), e
    assert e["traceback"].endswith(" more times]\nRecursionError: maximum recursion depth exceeded"), e
    assert e["traceback"].count("[Previous line repeated ") == 1, e
    assert (e["line"], e["column"]) == (2, 12), e


def test_an_error_without_a_position_has_a_null_column(host):
    e = run(host, "1 +")["error"]
    assert (e["line"], e["column"]) == (1, 4), e
    e = run(host, "x = 1\n\0")["error"]  # the parser refuses the source as a whole
    assert e["kind"] == "syntax_error" and e["column"] is None, e


def test_lua_errors_have_a_null_column(host):
    r = host.exec("error('boom')")
    assert (r["error"]["line"], r["error"]["column"]) == (1, None), r
