"""The Python layer's attribute guard (issue 12, finding 1): a denied attribute is
refused where every path meets, the attribute lookup itself in C, whether the read
comes from snippet source, a string the stdlib compiled, a `match` class pattern,
super(), getattr, operator.attrgetter, a format string or a descriptor.

Each hostile snippet prints CANARY (and returns it) only if it got to the object
the guard exists to keep away: object.__subclasses__(), sys, gc, a function's
globals, a frame. So every case checks the verdict is policy_violation, that the
refusal names the attribute, and that the canary is neither in stdout nor in the
value. The regression half runs the code an LLM ordinarily writes (dataclasses,
typing with string annotations, namedtuple, match on its own classes,
string.Formatter, collections, json, re, math, dir()) and checks it still works."""
import json
import os
import shutil
import tempfile

import pytest

from conftest import Host, said

PV = "policy_violation"
CANARY = "tp-guard-canary-7c1e"

# Prelude shared by the hostile snippets: names spelled without a dunder in the
# source (the AST check never sees them), and the real operator classes (the
# facade's attrgetter is a guarded Python wrapper; type() gives the C class).
PRE = f"""
import operator, string, typing, functools, dataclasses
D = lambda s: '_' + '_' + s + '_' + '_'
SUB = D('subclasses')
AG = type(operator.attrgetter('x'))
MC = type(operator.methodcaller('x'))
CANARY = {CANARY!r}
def reached(x):
    print(CANARY, str(x)[:60])
    return CANARY
"""


@pytest.fixture(scope="module")
def host():
    # nofiles: standard without a session workspace, so no exec has the file shims (open)
    d = tempfile.mkdtemp(prefix="tp-guard-", dir="/tmp")
    os.chmod(d, 0o755)
    with open(os.path.join(d, "nofiles.json"), "w") as f:
        json.dump({"name": "nofiles", "extends": "standard", "session": {"workspace_bytes": 0}}, f)
    h = Host(args=("--policy-dir", d))
    yield h
    h.close()
    shutil.rmtree(d, ignore_errors=True)


def run(h, code, **params):
    r = h.call("sandbox/exec", {"lang": "python", "code": code, **params}, timeout=30)
    assert "result" in r, r
    return r["result"]


def refused(res, attr=None):
    """A refusal that names the attribute, with the canary nowhere."""
    assert CANARY not in res.get("stdout", ""), res
    assert CANARY not in json.dumps(res.get("value")), res
    assert res["ok"] is False, res
    assert res["error"]["kind"] == PV, res
    if attr is not None:
        assert attr in said(res["error"]), res


def healthy(h):
    r = run(h, "6*7")
    assert r["ok"] is True and r["value"] == 42, r


# -- the three routes of the finding, as the attack round ran them ------------------
ROUTES = [
    # typing.ForwardRef compiles and evaluates a string with the stdlib's own
    # compile/eval: the string is never checked.
    ("forwardref _evaluate", PRE + """
s = "[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == 'BuiltinImporter'][0].load_module('sys').modules"
m = typing.ForwardRef(s)._evaluate({}, None, frozenset())
reached(m)
""", "__subclasses__"),
    # get_type_hints with a string annotation is the same path.
    ("get_type_hints string annotation", PRE + """
class A:
    x: "().__class__.__base__.__subclasses__()"
reached(typing.get_type_hints(A))
""", "__subclasses__"),
    # A match class pattern reads the attribute named in __match_args__ with
    # C-level getattr; the name comes from a dict passed to a metaclass call, and
    # __instancecheck__ makes any object match. No import at all.
    ("match __match_args__ via metaclass", """
class M(type):
    def __instancecheck__(cls, o):
        return True
K = M('K', (), {'__match_args__': ('__subclasses__',)})
match object:
    case K(v):
        print(%r, len(v()))
""" % CANARY, "__subclasses__"),
    # super() reaches the unguarded base method; the field has no '{', so the
    # check on string constants skips it.
    ("super Formatter.get_field", """
import string
class F(string.Formatter):
    pass
r = super(string.Formatter, F()).get_field('0.__base__', (tuple,), {})
print(%r, r)
""" % CANARY, "__base__"),
    ("super Formatter.get_field to subclasses", """
import string
class F(string.Formatter):
    pass
r = super(string.Formatter, F()).get_field('0.__base__.__subclasses__', (tuple,), {})
print(%r, len(r[0]()))
""" % CANARY, None),
]


# -- their families ---------------------------------------------------------------
FAMILY = [
    # other stdlib code that compiles or evaluates a string the snippet chose
    ("forwardref in a stdlib namespace", PRE + """
f = typing.ForwardRef('sys.modules.get', module='typing')
reached(f._evaluate(None, None, frozenset())('gc'))
""", "namespace"),
    ("get_type_hints with __module__ = typing", PRE + """
class A:
    x: 'sys.modules.get'
A.__module__ = 'typing'
reached(typing.get_type_hints(A)['x']('gc'))
""", "namespace"),
    ("dataclass field name compiled into __repr__", PRE + """
N = 'a,().__class__.__base__.' + SUB + '()'
K = dataclasses.dataclass(init=False, eq=False)(type('K', (), {'__annotations__': {N: int}}))
k = K()
k.a = 1
r = repr(k)
if 'BuiltinImporter' in r:
    reached(r)
""", "__subclasses__"),
    ("dataclass class in a stdlib namespace", PRE + """
K = type('K', (), {'__annotations__': {'x': int}, '__module__': 'typing'})
K = dataclasses.dataclass(K)
reached(K)
""", "namespace"),
    # typing hands the namespace named by a class's __module__ to whatever passes
    # isinstance(t, ForwardRef): a patched _evaluate, a _root subclass, a duck.
    ("patched ForwardRef._evaluate gets a stdlib namespace", PRE + """
got = []
def ev(self, g, l, r):
    got.append((g, l))
    return int
typing.ForwardRef._evaluate = ev
class A:
    x: 'int'
A.__module__ = 'typing'
typing.get_type_hints(A)
reached([d['sys'] for pair in got for d in pair if 'sys' in d][0])
""", "ForwardRef"),
    ("ForwardRef subclass gets a stdlib namespace", PRE + """
got = []
class FR(typing.ForwardRef, _root=True):
    def _evaluate(self, g, l, r):
        got.append((g, l))
        return int
A = type('A', (), {'__annotations__': {'x': FR('int')}, '__module__': 'typing'})
typing.get_type_hints(A)
reached([d['sys'] for pair in got for d in pair if 'sys' in d][0])
""", "ForwardRef"),
    ("duck ForwardRef gets a stdlib namespace", PRE + """
got = []
class Duck:
    __class__ = property(lambda s: typing.ForwardRef)
    def _evaluate(self, g, l, r):
        got.append((g, l))
        return int
A = type('A', (), {'__annotations__': {'x': Duck()}, '__module__': 'typing'})
typing.get_type_hints(A)
reached([d['sys'] for pair in got for d in pair if 'sys' in d][0])
""", "ForwardRef"),
    ("forwardref string reads with a computed name", PRE + """
g = {'S': SUB}
reached(typing.ForwardRef('getattr(object, S)')._evaluate(g, None, frozenset())())
""", "__subclasses__"),
    ("forwardref string through attrgetter", PRE + """
g = {'AG': AG, 'S': SUB}
reached(typing.ForwardRef('AG(S)(object)')._evaluate(g, None, frozenset())())
""", "__subclasses__"),
    # other C-level attribute reads
    ("attrgetter class", PRE + "reached(AG(SUB)(object)())", "__subclasses__"),
    ("attrgetter dotted", PRE + "reached(AG('__class__.__base__.' + SUB)(())())", "__subclasses__"),
    ("methodcaller class", PRE + "reached(MC(SUB)(object))", "__subclasses__"),
    ("attrgetter in map", PRE + "reached(list(map(AG(SUB), [object]))[0]())", "__subclasses__"),
    ("attrgetter as sort key", PRE + "reached(sorted([object], key=AG(SUB)))", "__subclasses__"),
    ("hasattr computed", PRE + "reached(hasattr(object, SUB))", "__subclasses__"),
    ("reduce getattr", PRE + "reached(functools.reduce(getattr, [SUB], object)())", "__subclasses__"),
    ("match keyword pattern computed", PRE + """
class M(type):
    def __instancecheck__(cls, o):
        return True
K = M('K', (), {'__match_args__': (D('globals'),)})
match reached:
    case K(g):
        reached(g['__builtins__'])
""", "__globals__"),
    ("match __self__ of a builtin", PRE + """
class M(type):
    def __instancecheck__(cls, o):
        return True
K = M('K', (), {'__match_args__': (D('self'),)})
match len:
    case K(b):
        reached(b)
""", "__self__"),
    ("__set_name__ name from a metaclass dict", PRE + """
class Desc:
    def __set_name__(self, owner, name):
        reached(AG(name)(object)())
K = type('K', (), {SUB: Desc()})
""", "__subclasses__"),
    ("property of attrgetter", PRE + "reached(MC(D('get'), object, type)(property(AG(SUB)))())", "__subclasses__"),
    ("metaclass property", PRE + """
class Meta(type):
    p = property(AG(SUB))
reached(MC(D('get'), object)(Meta.p)())
""", "__subclasses__"),
    ("cached_property launders type.__dict__", PRE + """
cp = functools.cached_property(lambda s: 0)
cp.__set_name__(None, SUB)
d = MC(D('get'), type)(cp)
reached(d(object))
""", "__subclasses__"),
    ("update_wrapper launders type.__dict__", PRE + """
got = []
class Spy:
    def update(self, d):
        got.append(d)
W = type('W', (), {D('dict'): property(lambda s: Spy())})
functools.update_wrapper(W(), type, assigned=())
reached(got[0][SUB](object))
""", "attribute '__dict__' is not allowed"),  # a snippet instance's __dict__ is its real one
    # dataclasses reads a class attribute the snippet names (its annotations) from
    # stdlib code, and hands it back as the field's default
    ("dataclass default launders __getstate__", PRE + """
K = dataclasses.dataclass(init=False)(type('K', (), {'__annotations__': {D('getstate'): object}}))
raw = dataclasses.fields(K)[0].default(int)
reached(raw)
""", None),
    ("dataclass default launders __subclasses__", PRE + """
M = type('M', (type,), {})
K = dataclasses.dataclass(init=False)(M('K', (), {'__annotations__': {SUB: object}}))
reached(dataclasses.fields(K)[0].default())
""", "__subclasses__"),
    ("getattribute via match", PRE + """
class M(type):
    def __instancecheck__(cls, o):
        return True
K = M('K', (), {'__match_args__': (D('getattribute'),)})
match object:
    case K(ga):
        reached(ga(object, SUB)())
""", "__subclasses__"),
    ("type getattribute unbound", PRE + "reached(AG(D('getattribute'))(type)(object, SUB)())", "__subclasses__"),
    ("str subclass with a lying eq", PRE + """
class S(str):
    def __eq__(self, o):
        return True
    def __hash__(self):
        return hash(SUB)
reached(AG(S(SUB))(object)())
""", "__subclasses__"),
    ("generator frame via attrgetter", PRE + """
g = (x for x in [1])
reached(AG('gi_frame')(g))
""", "gi_frame"),
    ("traceback via attrgetter", PRE + """
try:
    1 / 0
except Exception as e:
    reached(AG(D('traceback') + '.tb_frame')(e))
""", "__traceback__"),
    ("function code via attrgetter", PRE + "reached(AG(D('code'))(typing.get_type_hints))", "__code__"),
    ("function defaults via attrgetter", PRE + "reached(AG(D('defaults'))(typing.get_type_hints))", "__defaults__"),
    ("type dict via attrgetter", PRE + "reached(AG(D('dict'))(type)[SUB](object))", "__dict__"),
    ("reduce_ex via attrgetter", PRE + "reached(AG(D('reduce_ex'))(object())(2))", "__reduce_ex__"),
    # other unbound base methods of guarded classes
    ("Formatter.get_field unbound", PRE + "reached(string.Formatter.get_field(string.Formatter(), '0.' + D('class'), (1,), {}))", "__class__"),
    ("Formatter.vformat", PRE + "reached(string.Formatter().vformat('{0.' + D('class') + '.' + D('base') + '}', (1,), {}))", "__class__"),
    ("str.format via UserString", PRE + """
import collections
reached(collections.UserString('{0.' + D('class') + '}').format(1))
""", "__class__"),
]


@pytest.mark.parametrize("name,code,attr", ROUTES, ids=[c[0] for c in ROUTES])
def test_issue_routes_refused(host, name, code, attr):
    refused(run(host, code), attr)
    healthy(host)


@pytest.mark.parametrize("name,code,attr", FAMILY, ids=[c[0] for c in FAMILY])
def test_route_families_refused(host, name, code, attr):
    refused(run(host, code), attr)
    healthy(host)


def test_caught_refusal_stays_refused(host):
    """Catching the refusal (or C code that clears it, like hasattr) does not help."""
    res = run(host, PRE + """
try:
    AG(SUB)(object)
except BaseException:
    pass
reached(1)
""")
    refused(res, "__subclasses__")


STDLIB_EVAL = """
import typing
g = {}
typing.ForwardRef('1')._evaluate(g, None, frozenset())
b = g['__builtins__']
[type(b).__name__, '__loader__' in b, 'open' in b, 'eval' in b]
"""


def test_stdlib_eval_gets_the_snippet_builtins(host):
    """eval() in typing puts builtins into the globals it is given: the snippet's
    (a guarded dict), never the real builtins module with its __loader__. Under a
    policy without files, the snippet's have no open (the real ones do)."""
    res = run(host, STDLIB_EVAL, policy="nofiles")
    assert res["ok"] is True, res
    assert res["value"] == ["dict", False, False, False], res
    # standard gives sessions a workspace: the snippet's builtins have the file shim's open,
    # and the dict typing got holds that very one
    res = run(host, STDLIB_EVAL.replace("'open' in b", "b['open'] is open"))
    assert res["ok"] is True, res
    assert res["value"] == ["dict", False, True, False], res


def test_forwardref_loader_never_reached(host):
    res = run(host, PRE + """
reached(typing.ForwardRef("__loader__.load_module('sys')")._evaluate({}, None, frozenset()))
""")
    assert res["ok"] is False, res
    assert CANARY not in res["stdout"], res
    assert res["error"]["kind"] in (PV, "runtime_error"), res


# -- ordinary code still works -------------------------------------------------------
ORDINARY = [
    ("dataclasses", """
from dataclasses import dataclass, field, asdict, replace, fields
@dataclass(order=True)
class P:
    x: int
    y: int = 0
    tags: list = field(default_factory=list)
@dataclass(frozen=True, slots=True)
class Q:
    a: str
    b: 'int' = 3
p = replace(P(1, 2), y=5)
[asdict(p), [f.name for f in fields(Q)], repr(Q('z')), P(1) < P(2), hash(Q('a')) == hash(Q('a'))]
""", [{"x": 1, "y": 5, "tags": []}, ["a", "b"], "Q(a='z', b=3)", True, True]),
    ("typing string annotations", """
from typing import Optional, List, Dict, get_type_hints, NamedTuple, TypedDict
class Node:
    value: int
    next: 'Optional[Node]'
    kids: 'List[Node]'
def f(a: 'int', b: dict[str, list[int]]) -> 'Dict[str, int]':
    return {}
class Pt(NamedTuple):
    x: int
    y: 'float' = 0.0
class TD(TypedDict):
    k: 'str'
h = get_type_hints(Node)
[str(h['next']), str(h['kids']), Pt(1)._asdict(), list(TD.__annotations__), f.__annotations__['a']]
""", ["typing.Optional[__main__.Node]", "typing.List[__main__.Node]", {"x": 1, "y": 0.0}, ["k"], "int"]),
    ("namedtuple and make_dataclass", """
from collections import namedtuple
from dataclasses import make_dataclass, field
from typing import NamedTuple, get_type_hints
P = namedtuple('P', 'x y', defaults=[0])
p = P(1)
M = make_dataclass('M', [('a', int), ('b', 'str', field(default='z'))])
class N(NamedTuple):
    a: 'int'
[p, p._replace(y=3), p.x + p.y, repr(p), repr(M(1)), P.__module__, M.__module__, get_type_hints(N)['a'].__name__]
""", [[1, 0], [1, 3], 1, "P(x=1, y=0)", "M(a=1, b='z')", "__main__", "__main__", "int"]),
    ("match class patterns on own classes", """
from dataclasses import dataclass
@dataclass
class Pt:
    x: int
    y: int
class C:
    __match_args__ = ('r',)
    def __init__(self, r):
        self.r = r
def area(s):
    match s:
        case Pt(0, 0):
            return 'origin'
        case Pt(x=x, y=0):
            return f'on x at {x}'
        case C(r) if r > 0:
            return round(3.14159 * r * r, 2)
        case [a, b, *rest]:
            return len(rest)
        case {'k': v}:
            return v
        case int() | float() as n:
            return n
        case _:
            return None
[area(Pt(0, 0)), area(Pt(3, 0)), area(C(1)), area([1, 2, 3, 4]), area({'k': 'v'}), area(2.5), area('s')]
""", ["origin", "on x at 3", 3.14, 2, "v", 2.5, None]),
    ("string.Formatter and format", """
import string
class P:
    x = 3
    def __init__(self): self.y = [1, 2]
fmt = string.Formatter()
t = string.Template('$who likes $what')
[fmt.format('{0.x}-{p.y[1]}-{n:>4}', P(), p=P(), n=7), '{0.x} {0.y[0]}'.format(P()),
 '{a}'.format_map({'a': 1}), f'{P().y!r}', t.substitute(who='tim', what='pie'), format(3.14159, '.2f')]
""", ["3-2-   7", "3 1", "1", "[1, 2]", "tim likes pie", "3.14"]),
    ("collections json re math", """
import collections, json, re, math
c = collections.Counter('abracadabra')
d = collections.defaultdict(list)
d['a'].append(1)
o = collections.OrderedDict(b=1, a=2)
o.move_to_end('b')
dq = collections.deque([1, 2, 3], maxlen=3)
dq.append(4)
cm = collections.ChainMap({'a': 1}, {'a': 2, 'b': 3})
j = json.loads(json.dumps({'x': [1, 2.5, None, True], 'y': 'z'}, sort_keys=True, indent=2))
m = re.findall(r'(\\w+)@(\\w+)\\.com', 'a@b.com c@d.com')
[c.most_common(2), dict(d), list(o), list(dq), cm['a'], cm['b'], j, m, math.isclose(math.sqrt(2) ** 2, 2), math.comb(5, 2)]
""", [[["a", 5], ["b", 2]], {"a": [1]}, ["a", "b"], [2, 3, 4], 1, 3, {"x": [1, 2.5, None, True], "y": "z"}, [["a", "b"], ["c", "d"]], True, 10]),
    ("functools enum abc copy", """
import functools, enum, copy, collections.abc
def deco(f):
    @functools.wraps(f)
    def w(*a, **k):
        return f(*a, **k) + 1
    return w
@deco
def g(x):
    '''doc'''
    return x
class Lazy:
    @functools.cached_property
    def v(self):
        return 41
@functools.lru_cache(maxsize=None)
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
@functools.total_ordering
class V:
    def __init__(self, n): self.n = n
    def __eq__(self, o): return self.n == o.n
    def __lt__(self, o): return self.n < o.n
@functools.singledispatch
def kind(x): return 'obj'
@kind.register
def _(x: int): return 'int'
class Color(enum.Enum):
    RED = 1
    GREEN = 2
class Sq(collections.abc.Sized):
    def __len__(self): return 4
class Box:
    def __init__(self): self.items = [1, [2]]
b = copy.deepcopy(Box())
[g(1), g.__name__, g.__doc__, Lazy().v, fib(30), V(1) <= V(2), kind(1), kind('a'), Color(2).name,
 [c.name for c in Color], len(Sq()), isinstance({}, collections.abc.Mapping), issubclass(list, collections.abc.Sequence),
 b.items, copy.copy([1, 2])]
""", [2, "g", "doc", 41, 832040, True, "int", "obj", "GREEN", ["RED", "GREEN"], 4, True, True, [1, [2]], [1, 2]]),
    ("dir and star imports", """
from math import *
class K:
    a = 1
    def __init__(self): self.b = 2
    def m(self): pass
import json
[[n for n in dir(K()) if not n.startswith('_')], [n for n in dir(K) if not n.startswith('_')], 'dumps' in dir(json), floor(pi), 'append' in dir([])]
""", [["a", "b", "m"], ["a", "m"], True, 3, True]),
    ("classes, properties, super, getattr", """
import operator
class Base:
    def __init__(self, n):
        self.n = n
    def __repr__(self):
        return f'{type(self).__name__}({self.n})'
class Child(Base):
    def __init__(self, n):
        super().__init__(n * 2)
    @property
    def double(self):
        return self.n * 2
class Proxy:
    def __init__(self, t): self._t = t
    def __getattr__(self, k): return getattr(self._t, k)
items = [Child(3), Child(1)]
[repr(sorted(items, key=operator.attrgetter('n'))), Child(2).double, Proxy(Child(5)).n, getattr(Child(1), 'missing', 'dflt'),
 hasattr(Child(1), 'double'), type(Child(1)).__name__, [c.__name__ for c in Child.mro()], isinstance(1, (int, float))]
""", ["[Child(2), Child(6)]", 8, 10, "dflt", True, "Child", ["Child", "Base", "object"], True]),
    ("statistics fractions decimal itertools heapq bisect datetime random", """
import statistics, fractions, decimal, itertools, heapq, bisect, datetime, random, textwrap, pprint
random.seed(1)
[statistics.mean([1, 2, 3, 4]), str(fractions.Fraction(1, 3) + fractions.Fraction(1, 6)), str(decimal.Decimal('1.1') + decimal.Decimal('2.2')),
 list(itertools.accumulate([1, 2, 3])), heapq.nsmallest(2, [5, 1, 4]), bisect.bisect([1, 3, 5], 4),
 datetime.date(2024, 2, 29).isoformat(), random.randint(1, 1) , textwrap.shorten('hello world foo', 12), pprint.pformat({'a': 1})]
""", [2.5, "1/2", "3.3", [1, 3, 6], [1, 4], 2, "2024-02-29", 1, "hello [...]", "{'a': 1}"]),
]


@pytest.mark.parametrize("name,code,value", ORDINARY, ids=[c[0] for c in ORDINARY])
def test_ordinary_code_still_works(host, name, code, value):
    res = run(host, code)
    assert res["ok"] is True, res
    assert res["value"] == value, res


def test_ordinary_errors_stay_ordinary(host):
    """Errors the guard must not turn into refusals: a missing name in an import,
    a bad issubclass argument, a missing attribute."""
    for code, typ in [("from collections import Mapping", "ImportError"),
                      ("issubclass(1, int)", "TypeError"),
                      ("class K: pass\nK().nope", "AttributeError"),
                      ("import math\nmath.nope", "AttributeError")]:
        res = run(host, code)
        assert res["ok"] is False and res["error"]["kind"] == "runtime_error", (code, res)
        assert res["error"]["type"] == typ, (code, res)


def test_instruction_limit_with_guard(host):
    """The guard also holds with the line tracer on (no specialised bytecode)."""
    res = run(host, PRE + "reached(AG(SUB)(object)())", limits={"instructions": 10 ** 6})
    refused(res, "__subclasses__")


# -- exemptions that had no test of their own (docs/python-guard.md) ----------------


def test_pickle_names_on_a_builtin_without_a_dict(host):
    """keeps_generic (pyattr.c): list, dict, str ... keep PyObject_GenericGetAttr, so
    a pickle protocol name is answered on their instances, even through an
    attrgetter: on an object without a __dict__ it gives what rebuilds it (its type
    and its contents), nothing it does not hold. Calling it reads __reduce__ on the
    type, which the guard refuses to the snippet; on object() the lookup itself is
    refused (test_route_families_refused[reduce_ex via attrgetter])."""
    res = run(host, PRE + "m = AG(D('reduce_ex'))([1, 2])\n"
              "[type(m).__name__, m.__name__, type(AG(D('getstate'))('s')).__name__]")
    assert res["ok"] is True, res
    assert res["value"] == ["builtin_function_or_method", "__reduce_ex__",
                            "builtin_function_or_method"], res
    res = run(host, PRE + "AG(D('reduce_ex'))([1, 2])(2)")
    refused(res)
    assert said(res["error"]) == "attribute '__reduce__' is not allowed", res


def test_import_error_names_a_facade_as_cpython_does(host):
    """object_exempt (pyattr.c): CPython reads __spec__ (and __file__) of a facade
    for an import error's message; a facade's __spec__ is None, so the message is
    CPython's own for a module without a location."""
    res = run(host, "from json import nope")
    assert res["ok"] is False and res["error"]["type"] == "ImportError", res
    assert said(res["error"]) == "cannot import name 'nope' from 'json' (unknown location)", res


def test_stdlib_calls_subclasses_for_the_snippet(host):
    """subclasses_gate (pyattr.c): type.__subclasses__() answers the standard
    library's own frames: functools.singledispatch walks an ABC's subclasses
    (_compose_mro) to dispatch a class registered under it."""
    res = run(host, """
import functools, collections.abc
@functools.singledispatch
def kind(x):
    return 'obj'
@kind.register(collections.abc.Sequence)
def _(x):
    return 'seq'
class L(list): pass
[kind(L()), kind((1,)), kind(1)]
""")
    assert res["ok"] is True, res
    assert res["value"] == ["seq", "seq", "obj"], res


def test_stdlib_reads_a_power_module_by_a_name_it_spells(host):
    """spelled (pyattr.c): the standard library reads a _SPELL_ONLY module (sys) by
    a name its own module's code spells: contextlib.redirect_stdout's default
    _stream, 'stdout', read with getattr(sys, self._stream). A name the snippet
    chose stays refused (test_membrane.py::test_the_family_is_refused[a stdlib
    subclass naming the attribute of sys the stdlib reads])."""
    res = run(host, """
import contextlib, io
b = io.StringIO()
with contextlib.redirect_stdout(b):
    print('inside')
print('outside')
b.getvalue()
""")
    assert res["ok"] is True, res
    assert (res["value"], res["stdout"]) == ("inside\n", "outside\n"), res
