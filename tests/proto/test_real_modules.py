"""A snippet reaches modules only through import, which hands it facades: a real
module (one the zygote loaded: the standard library's, a data package's) is not
the snippet's to hold or to use. warnings.catch_warnings()._module was the real
warnings module, and its sys the real sys (sys.modules: every module).

The rule is in the attribute guard (pyattr.c, module_checked): a read the
snippet's own instruction makes (x.y, getattr, a match pattern, a format field,
an attrgetter or methodcaller whoever calls it) is refused when its object or
its value is a real module; so is setting or deleting a real module's
attribute. The stdlib's own code, and the C code a snippet calls, still read
their modules. vars() gives the snippet's own instances only, never a dict that
holds a real module.

Each hostile snippet prints CANARY only if it got past the refusal; every case
checks the verdict is policy_violation with the exact message, and that neither
the canary nor a module's repr is in the output or the value."""
import json

import pytest

from conftest import Host, said

PV = "policy_violation"
CANARY = "tp-realmod-canary-41d9"


@pytest.fixture(scope="module")
def host():
    h = Host()
    yield h
    h.close()


def run(h, code, policy="standard"):
    r = h.call("sandbox/exec", {"lang": "python", "code": code, "policy": policy}, timeout=60)
    assert "result" in r, r
    return r["result"]


def refused(res, message):
    out = res.get("stdout", "") + json.dumps(res.get("value"))
    assert CANARY not in out, res
    assert "<module" not in out, res
    assert res["ok"] is False, res
    assert res["error"]["kind"] == PV, res
    if isinstance(message, tuple):
        assert said(res["error"]) in message, res
    else:
        assert said(res["error"]) == message, res


def ATTR(name, mod):
    return ("attribute '%s' is a module ('%s'), which is not available in the sandbox: "
            "a snippet reaches modules only through import" % (name, mod))


def USE(mod, verb, name):
    return ("module '%s' is not available in the sandbox: a snippet may not %s its "
            "attributes (attribute '%s')" % (mod, verb, name))


VARS = "vars is not available in the sandbox (policy standard: no introspection of the interpreter)"

PRE = f"""
import warnings, operator, functools, string
CANARY = {CANARY!r}
AG = type(operator.attrgetter('x'))
MC = type(operator.methodcaller('x'))
def reached(x):
    print(CANARY, repr(x)[:60])
    return CANARY
"""

# A real module in hand the only way left: a LOAD_ATTR the specialiser cached for
# catch_warnings(module=1) instances reads the next one's slot without the guard.
# What the snippet then holds is inert. Where CPython did not specialise that
# site (a sanitizer build), the read itself is refused (HELD): either way no
# module reaches the snippet's code.
def CROSS(how):
    """The membrane (pymembrane.c): the value never reaches the snippet's frame."""
    return ("a value may not cross into the snippet: %s the module 'warnings', which a "
            "snippet may not hold" % how)


LEFT = ("a value may not cross into the snippet: catch_warnings.__init__ left the module "
        "'warnings' in an object the snippet gave it, which a snippet may not hold")
RETURNED = CROSS("update_wrapper returned a value that is or holds")

HELD = ("attribute '_module' is a module ('warnings'), which is not available in the sandbox: "
        "a snippet reaches modules only through import")
SWAP = PRE + """
def get(o):
    return o._module
for _ in range(300):
    get(warnings.catch_warnings(module=1))
m = get(warnings.catch_warnings())
"""

CASES = [
    ("the finding", PRE + "reached(warnings.catch_warnings()._module.sys)",
     ATTR("_module", "warnings")),
    ("getattr", PRE + "reached(getattr(warnings.catch_warnings(), '_module'))",
     ATTR("_module", "warnings")),
    ("getattr default", PRE + "reached(getattr(warnings.catch_warnings(), '_module', None))",
     ATTR("_module", "warnings")),
    ("hasattr of a module's name", SWAP + "reached(hasattr(m, 'sys'))", (HELD, USE("warnings", "read", "sys"))),
    ("facade attrgetter", PRE + "reached(operator.attrgetter('_module')(warnings.catch_warnings()))",
     ATTR("_module", "warnings")),
    ("C attrgetter", PRE + "reached(AG('_module')(warnings.catch_warnings()))",
     ATTR("_module", "warnings")),
    ("attrgetter in map", PRE + "reached(list(map(AG('_module'), [warnings.catch_warnings()])))",
     ATTR("_module", "warnings")),
    ("attrgetter a stdlib frame calls", PRE +
     "reached(functools.singledispatch(AG('_module'))(warnings.catch_warnings()))",
     ATTR("_module", "warnings")),
    ("methodcaller a stdlib frame calls", SWAP +
     "reached(functools.singledispatch(MC('catch_warnings'))(m))",
     (HELD, USE("warnings", "read", "catch_warnings"))),
    ("reduce over getattr", PRE +
     "reached(functools.reduce(getattr, ['_module', 'sys'], warnings.catch_warnings()))",
     ATTR("_module", "warnings")),
    ("match class pattern", PRE + """
match warnings.catch_warnings():
    case warnings.catch_warnings(_module=m):
        reached(m)
""", ATTR("_module", "warnings")),
    ("__match_args__ of a subclass", PRE + """
class W(warnings.catch_warnings):
    __match_args__ = ('_module',)
match W():
    case W(m):
        reached(m)
""", LEFT),
    ("json default", PRE + "import json\nreached(json.dumps(warnings.catch_warnings(), default=AG('_module')))",
     ATTR("_module", "warnings")),
    ("a copy's attribute", PRE + "import copy\nreached(copy.copy(warnings.catch_warnings())._module)",
     ATTR("_module", "warnings")),
    ("object.__getattribute__", PRE +
     "reached(AG('_' + '_getattribute_' + '_')(object)(warnings.catch_warnings(), '_module'))",
     ATTR("_module", "warnings")),
    ("vars of a stdlib instance", PRE + "reached(vars(warnings.catch_warnings())['_module'])", VARS),
    ("vars of a subclass instance", PRE + """
class W(warnings.catch_warnings):
    pass
reached(vars(W())['_module'])
""", LEFT),
    ("update_wrapper copies a stdlib instance's dict", PRE + """
class O:
    pass
o = O()
functools.update_wrapper(o, warnings.catch_warnings())
reached(o._module)
""", RETURNED),
    ("vars after update_wrapper", PRE + """
class O:
    pass
o = O()
functools.update_wrapper(o, warnings.catch_warnings())
reached(vars(o)['_module'])
""", RETURNED),
    ("a held module's attribute", SWAP + "reached(m.sys)", (HELD, USE("warnings", "read", "sys"))),
    ("a held module's function", SWAP + "reached(m.warn)", (HELD, USE("warnings", "read", "warn"))),
    ("a held module through getattr", SWAP + "reached(getattr(m, 'sys'))",
     (HELD, USE("warnings", "read", "sys"))),
    ("a held module through a format field", SWAP + "reached('{0.sys}'.format(m))",
     (HELD, USE("warnings", "read", "sys"))),
    ("a held module through format_map", SWAP + "reached('{m.sys}'.format_map({'m': m}))",
     (HELD, USE("warnings", "read", "sys"))),
    ("a held module through string.Formatter", SWAP + "reached(string.Formatter().format('{0.sys}', m))",
     (HELD, USE("warnings", "read", "sys"))),
    ("a held module through an attrgetter", SWAP + "reached(AG('sys')(m))",
     (HELD, USE("warnings", "read", "sys"))),
    ("a held module through object.__getattribute__", SWAP +
     "ga = AG('_' + '_getattribute_' + '_')(object)\nreached(functools.singledispatch(ga)(m, 'sys'))",
     (HELD, USE("warnings", "read", "sys"))),
    ("a held module in a match pattern", SWAP + """
match m:
    case object(sys=s):
        reached(s)
""", (HELD, USE("warnings", "read", "sys"))),
    ("a held module at a site the specialiser cached for a facade", SWAP + """
def f(x):
    return x.filters
for _ in range(300):
    f(warnings)
reached(f(m))
""", (HELD, USE("warnings", "read", "filters"))),
    ("setting a held module's attribute", SWAP + "m.filters = []\nreached(1)",
     (HELD, USE("warnings", "set", "filters"))),
    ("setattr on a held module", SWAP + "setattr(m, 'defaultaction', 'error')\nreached(1)",
     (HELD, USE("warnings", "set", "defaultaction"))),
    ("deleting a held module's attribute", SWAP + "del m.filters\nreached(1)",
     (HELD, USE("warnings", "delete", "filters"))),
]


@pytest.mark.parametrize("code,message", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_real_module_refused(host, code, message):
    refused(run(host, code), message)


def test_object_setattr_on_a_held_module_refused(host):
    """object.__setattr__ skips no C-level tp_setattro: CPython's own check
    (hackcheck) refuses it on a module now that the module type's is the guard's."""
    res = run(host, SWAP + "sa = AG('_' + '_setattr_' + '_')(object)\n"
                           "functools.singledispatch(sa)(m, 'x', 1)\nreached(1)")
    assert CANARY not in res.get("stdout", ""), res
    if (res["error"]["kind"], said(res["error"])) == (PV, HELD):
        return  # no module was held (see SWAP)
    assert res["error"]["kind"] == "runtime_error", res
    assert said(res["error"]) == "can't apply this __setattr__ to module object", res


def test_denied_name_through_a_getter_a_stdlib_frame_calls(host):
    """functools.singledispatch calls what the snippet gave it from functools' own
    frame: the C attrgetter's read is the snippet's, not the stdlib's."""
    res = run(host, PRE + "import typing\nreached(functools.singledispatch(AG('_' + '_code_' + '_'))"
                          "(typing.get_type_hints))")
    assert CANARY not in res.get("stdout", "") + json.dumps(res.get("value")), res
    assert res["error"]["kind"] == PV and said(res["error"]) == "attribute '__code__' is not allowed", res


@pytest.mark.parametrize("getter", [
    "AG(D('getattribute'))(object)",                 # object.__getattribute__, unbound
    "AG(D('getattribute'))(typing.get_type_hints)",  # bound to the function
])
def test_denied_name_through_a_slot_wrapper_a_stdlib_frame_calls(host, getter):
    """object.__getattribute__ handed to functools.singledispatch: its read is the
    snippet's too."""
    args = "(typing.get_type_hints, D('code'))" if "(object)" in getter else "(D('code'))"
    res = run(host, PRE + "import typing\nD = lambda s: '_' + '_' + s + '_' + '_'\n"
                          "g = %s\nreached(functools.singledispatch(g)%s)" % (getter, args))
    assert CANARY not in res.get("stdout", "") + json.dumps(res.get("value")), res
    assert res["error"]["kind"] == PV and said(res["error"]) == "attribute '__code__' is not allowed", res


def test_cython_function_globals_refused(host):
    """pandas' compiled functions answer func_globals (and func_code ...) with their
    module's real namespace: denied like __globals__."""
    for name in ("func_globals", "func_code", "func_closure", "func_defaults", "func_dict"):
        res = run(host, "import pandas as pd\nf = pd.Timedelta.round\nprint(%r, getattr(f, %r))"
                  % (CANARY, name), policy="data")
        assert CANARY not in res.get("stdout", ""), res
        assert res["error"]["kind"] == PV, res
        assert said(res["error"]) == "attribute '%s' is not allowed" % name, res


def test_pandas_map_attrgetter_refused(host):
    res = run(host, PRE + "import pandas as pd\n"
                          "reached(pd.Series([warnings.catch_warnings()]).map(operator.attrgetter('_module')))",
              policy="data")
    refused(res, ATTR("_module", "warnings"))


def test_ordinary_code_still_works(host):
    """The stdlib and the C code a snippet calls still read their own modules; the
    snippet's own instances' vars() and its classes' attributes work as ever."""
    code = """
import warnings, time, datetime, string, operator, functools, logging, json, typing, dataclasses
class P:
    def __init__(self): self.a = 1
with warnings.catch_warnings(record=True) as log:
    warnings.simplefilter('always')
    warnings.warn('w')
@dataclasses.dataclass
class D:
    x: int
    y: 'int' = 2
[time.strptime('2024-03-10', '%Y-%m-%d')[:3], datetime.datetime.strptime('2024-03-10', '%Y-%m-%d').day,
 string.Formatter().format('{0.a}-{1[0]}', P(), [7]), '{0.a}'.format(P()), vars(P()),
 operator.attrgetter('a')(P()), functools.reduce(getattr, ['a'], P()), len(log),
 typing.get_type_hints(D)['y'].__name__, D(1) == D(1), json.dumps({'a': 1}),
 logging.getLogger('x').name, type(warnings).__name__]
"""
    res = run(host, code)
    assert res["ok"], res
    assert res["value"] == [[2024, 3, 10], 10, "1-7", "1", {"a": 1}, 1, 1, 1, "int", True,
                            '{"a": 1}', "x", "module"], res


def test_c_code_behind_an_attribute_reads_its_own_module(host):
    """numpy's dtype.name getter reads numpy.core._dtype._name_get: the C code's own
    read, whether the snippet's instruction, getattr or a format field asked."""
    res = run(host, "import numpy as np\nd = np.dtype('f8')\n"
                    "[d.name, getattr(np.False_.dtype, 'name'), '{0.dtype.name}'.format(np.arange(2)),"
                    " '{a.dtype.name}'.format_map({'a': np.arange(2.0)}), hasattr(d, 'name')]",
              policy="data")
    assert res["ok"], res
    assert res["value"] == ["float64", "bool", "int64", "float64", True], res


def test_format_with_attribute_fields_as_before(host):
    res = run(host, """
class P:
    x = 3
    y = [1, 2]
['{0.x}-{1}'.format(P(), 4), '{p.y[1]:>3}'.format(p=P()), '{0.x!r:{w}}'.format(P(), w=4),
 '{x.real}'.format_map({'x': 5}), '{}{}'.format(1, 2), '{0.imag}'.format(2j)]
""")
    assert res["ok"], res
    assert res["value"] == ["3-4", "  2", "3   ", "5", "12", "2.0"], res
    for code, msg in (("'{0.x}{}'.format(1)", "'int' object has no attribute 'x'"),
                      ("'{}{0.real}'.format(1)",
                       "cannot switch from automatic field numbering to manual field specification"),
                      ("'{0.real}{}'.format(1)",
                       "cannot switch from manual field specification to automatic field numbering")):
        res = run(host, code)
        assert res["error"]["kind"] == "runtime_error", res
        assert said(res["error"]) == msg, res


def test_data_still_works(host):
    res = run(host, """
import numpy as np, pandas as pd, operator
df = pd.DataFrame({'k': ['a', 'b', 'a'], 'v': [1, 2, 3]})
[float(np.array([1, 2, 3]).mean()), df.groupby('k')['v'].sum().to_dict(),
 pd.Series([1.5, 2.5]).map(operator.attrgetter('real')).tolist()]
""", policy="data")
    assert res["ok"], res
    assert res["value"] == [2.0, {"a": 4, "b": 2}, [1.5, 2.5]], res


def test_no_module_is_held_through_a_cached_load(host):
    """SWAP's site reads _module from instances of a stdlib class: the snippet's
    loads from such instances are never specialised (pyattr.c, with the
    membrane), so the value rule sees every read and no real module is ever held
    (before, a site warmed on catch_warnings(module=1) handed over the next
    instance's real module, and only the wall behind it stopped its use)."""
    refused(run(host, SWAP + "reached(m.sys)"), HELD)
