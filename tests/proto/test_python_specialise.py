"""Attribute loads and method calls on the snippet's own classes are specialised
by CPython in tidepool-python (py-sandbox/pyattr.c, the specialiser wrappers):
the same values as plain Python through every specialised form and its
deoptimisations, and a denied name is refused after the sites around it are hot."""
import subprocess

import pytest

from conftest import Host

PV = "policy_violation"

# Instance values, a dict that grew past the shared keys, slots, methods found on
# the class and on a base, a property, a class attribute, an attribute that
# shadows a method, a class changed mid-loop, a __getattr__ fallback: each site
# runs hot on one type, then sees others.
POLY = """
class A:
    k = 10
    def __init__(self, x):
        self.x = x
    def get(self):
        return self.x
class B(A):
    def get(self):
        return self.x * 2
    @property
    def p(self):
        return self.x + 1
class S:
    __slots__ = ('x',)
    def __init__(self, x):
        self.x = x
    def get(self):
        return -self.x
class G:
    def __getattr__(self, name):
        return 7
objs = [A(i) for i in range(50)] + [B(i) for i in range(50)] + [S(i) for i in range(50)]
for i, o in enumerate(objs[:20]):
    o.extra = i
objs[5].get = lambda: 1000
total = 0
for rnd in range(40):
    for o in objs:
        total += o.x + o.get()
        if rnd == 20 and type(o) is A:
            o.__class__ = B
    total += sum(b.p + b.k for b in objs if type(b) is B)
    if rnd == 30:
        A.get = lambda self: 3
        A.k = 5
    total += G().anything
total
"""


def test_specialised_loads_match_plain_python():
    plain = subprocess.run(["/usr/bin/python3", "-I", "-S", "-c", POLY.replace("\ntotal\n", "\nprint(total)\n")],
                           capture_output=True, text=True, check=True).stdout
    h = Host()
    try:
        r = h.call("sandbox/exec", {"lang": "python", "code": POLY})["result"]
        assert r["ok"], r
        assert r["value"] == int(plain)
    finally:
        h.close()


HOT = """
class P:
    def __init__(self, x):
        self.x = x
    def get(self):
        return self.x
ps = [P(i) for i in range(100)]
s = 0
for _ in range(100):
    for p in ps:
        s += p.x + p.get()
"""


@pytest.mark.parametrize("read", [
    "getattr(type(ps[0]), '__di' + 'ct__')",
    "vars(ps[0])['__code__'] = 1\ngetattr(ps[0], '__di' + 'ct__')",
    "import operator\noperator.attrgetter('__getstate__')(ps[1])",
    "getattr(ps[1], '__red' + 'uce__')()",
    "'{0.__dict__}'.format(ps[2])",
    "getattr(ps[3].get, '__se' + 'lf__')",
    "getattr(ps[4], '__reduce' + '_ex__')(2)",
    "import dataclasses\nD = dataclasses.make_dataclass('D', ['__globals__'])\n"
    "ds = [D(i) for i in range(100)]\n[repr(d) for d in ds]",
])
def test_denied_reads_refused_after_hot_loops(read):
    h = Host()
    try:
        r = h.call("sandbox/exec", {"lang": "python", "code": HOT + read})["result"]
        assert r["error"] is not None and r["error"]["kind"] == PV, r
    finally:
        h.close()


def test_own_dict_after_hot_loops():
    # __dict__ is never specialised: every read meets the guard, which gives the snippet's
    # own instance its live dict (and refuses it once that holds a denied name, above).
    h = Host()
    try:
        r = h.call("sandbox/exec", {"lang": "python", "code": HOT +
                   "out = []\nfor p in ps[:3] * 50:\n    out.append(p.__dict__)\n"
                   "[out[0], out[1], out[2], all(d is vars(ps[i % 3]) for i, d in enumerate(out))]"})["result"]
        assert r["ok"] is True and r["value"] == [{"x": 0}, {"x": 1}, {"x": 2}, True], r
    finally:
        h.close()
