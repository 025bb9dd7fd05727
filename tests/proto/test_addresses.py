"""No address reaches a Python snippet (issue 12, finding 2). id(), hash() and the
reprs that print "at 0x..." give values from a keyed bijection, not addresses: id()
and the reprs use a key derived for each worker, hash() a key drawn for each zygote
(docs/python.md, "Addresses"). Every worker is a fork of one zygote image, so before
this the same snippet showed the same addresses in every exec, and tidepool-python
is not PIE, so static objects (int, None) sat at the same address on every host.

What the tests compare against: the address ranges of the zygotes (their
/proc/PID/maps, widened by SLACK, since a worker's own mappings sit beside them).
A real address, or the rotated address CPython's pointer hash is, falls inside;
a value of the keyed bijection almost never does: the ranges cover about 2**30 of
the 2**52 ids (so an id counts as an address only when it does in two execs) and
of the 2**64 hashes."""
import re

import pytest

from conftest import Host, needs_data

SLACK = 1 << 26

# The objects whose id, hash and repr a snippet can see; built the same way in
# every exec, so the allocation pattern (and, before the fix, every address) repeats.
OBJECTS = r"""
import datetime, decimal, functools
class K:
    def m(self):
        pass
def gen():
    yield 1
async def coro():
    pass
def f():
    pass
k = K()
co = coro()
lock = functools.cached_property(len).lock
objs = [object(), k, f, lambda: 0, gen(), co, K.m, k.m, [].append, (1).__add__,
        int.__add__, len, int, None, datetime.datetime_CAPI, lock,
        decimal.Decimal('nan'), float('nan'), complex(float('nan'), 1), K, object]
reprs = [repr(o) for o in objs]
ids = [id(o) for o in objs]
hashes = [hash(o) for o in objs]
co.close()
"""


def py(host, code, **params):
    r = host.call("sandbox/exec", {"lang": "python", "code": code, **params})["result"]
    assert r["ok"], r
    return r["value"]


def zygote_ranges(host):
    """(start, end) of every mapping of every zygote of this host."""
    out = []
    for pid in host.by_comm("tp-zygote"):
        with open(f"/proc/{pid}/maps") as f:
            for line in f:
                lo, hi = line.split()[0].split("-")
                # Nothing is mapped below 64 KiB (vm.mmap_min_addr).
                out.append((max(int(lo, 16) - SLACK, 1 << 16), int(hi, 16) + SLACK))
    assert out, "no zygote to read the maps of"
    return out


def rotl4(h):
    h &= (1 << 64) - 1
    return ((h << 4) | (h >> 60)) & ((1 << 64) - 1)


def hexes(text):
    return [int(x, 16) for x in re.findall(r"0x([0-9a-f]+)", text)]


def looks_like_address(v, ranges):
    return any(lo <= v < hi for lo, hi in ranges)


@pytest.fixture(scope="module")
def h():
    host = Host()
    yield host
    host.close()


def test_id_is_stable_within_an_exec_and_unique_among_live_objects(h):
    v = py(h, "o = object()\nxs = [object() for _ in range(5000)]\nys = [[] for _ in range(5000)]\n"
              "a = o\n[id(o) == id(o) == id(a), len({id(x) for x in xs + ys + [o]}),"
              " all(id(x) >= 0 for x in xs), id(o) in {id(o)}, [id(None), id(None)]]")
    assert v[0] is True
    assert v[1] == 10001
    assert v[2] is True
    assert v[3] is True
    assert v[4][0] == v[4][1]


def test_id_and_reprs_differ_between_two_execs(h):
    code = OBJECTS + "[ids, reprs]"
    (ids1, reprs1), (ids2, reprs2) = py(h, code), py(h, code)
    for a, b, r in zip(ids1, ids2, reprs1):
        assert a != b, f"id of {r} is the same in two workers"
    for a, b in zip(reprs1, reprs2):
        if "0x" in a:
            assert a != b, f"{a} is the same in two workers"


def test_no_address_in_ids_reprs_or_hashes(h):
    runs = [py(h, OBJECTS + "[ids, reprs, hashes]") for _ in range(2)]
    ranges = zygote_ranges(h)
    (ids, reprs, hashes), (ids2, reprs2, _) = runs
    for i, j, r in zip(ids, ids2, reprs):
        assert 0 <= i < 2**52, f"id of {r} is not a JSON-safe integer: {i}"
        assert not (looks_like_address(i, ranges) and looks_like_address(j, ranges)), \
            f"id of {r} is an address: {i:#x}"
    for r, r2 in zip(reprs, reprs2):
        for x, y in zip(hexes(r), hexes(r2)):
            assert not (looks_like_address(x, ranges) and looks_like_address(y, ranges)), \
                f"{r} shows an address"
    # CPython's pointer hash is the address rotated by 4; a bound method's, a
    # builtin method's and a method-wrapper's XOR two of them, so the XOR of two
    # hashes can give one back: hash(k.m) ^ hash(K.m) is k's, hash((1).__add__) ^
    # hash(int.__add__) is 1's. Hashes are 64-bit: one exec is enough.
    for x, r in zip(hashes, reprs):
        assert not looks_like_address(rotl4(x), ranges), f"hash of {r} is an address"
    for i, x in enumerate(hashes):
        for j in range(i):
            v = rotl4(x ^ hashes[j])
            assert not looks_like_address(v, ranges), f"hash({reprs[i]}) ^ hash({reprs[j]})"


def test_reprs_keep_their_shape_and_show_the_id(h):
    v = py(h, OBJECTS + "one = 1\n[reprs, [id(k), id(f), id(co), id(gen), id(one), id(lock)]]")
    reprs, (kid, fid, coid, _, oneid, lockid) = v
    hx = r"0x[0-9a-f]+"
    shapes = [
        rf"<object object at {hx}>$",
        rf"<__main__\.K object at 0x{kid:x}>$",
        rf"<function f at 0x{fid:x}>$",
        rf"<function <lambda> at {hx}>$",
        rf"<generator object gen at {hx}>$",
        rf"<coroutine object coro at 0x{coid:x}>$",
        rf"<function K\.m at {hx}>$",
        rf"<bound method K\.m of <__main__\.K object at 0x{kid:x}>>$",
        rf"<built-in method append of list object at {hx}>$",
        rf"<method-wrapper '__add__' of int object at 0x{oneid:x}>$",
        r"<slot wrapper '__add__' of 'int' objects>$",
        r"<built-in function len>$",
        r"<class 'int'>$",
        r"None$",
        rf'<capsule object "datetime\.datetime_CAPI" at {hx}>$',
        rf"<unlocked _thread\.RLock object owner=0 count=0 at 0x{lockid:x}>$",
        r"Decimal\('NaN'\)$",
        r"nan$",
        r"\(nan\+1j\)$",
        r"<class '__main__\.K'>$",
        r"<class 'object'>$",
    ]
    assert len(shapes) == len(reprs)
    for shape, r in zip(shapes, reprs):
        assert re.match(shape, r), (shape, r)


def test_hash_is_not_the_rotated_address(h):
    # CPython: hash(o) == id(o) >> 4 for an object at a 16-aligned address.
    v = py(h, "o = object()\nxs = [object() for _ in range(100)]\n"
              "sum(hash(x) * 16 == id(x) or hash(x) == id(x) >> 4 for x in xs + [o])")
    assert v == 0


def test_hash_of_static_objects_differs_between_hosts():
    """int, None and object live in tidepool-python's data (not PIE): before, their
    hash was the same on every host; now it comes from a key each zygote draws."""
    code = "[hash(int), hash(None), hash(object), hash(len.__call__), hash(float('nan'))]"
    hosts = [Host(), Host()]
    try:
        a, b = (py(x, code) for x in hosts)
    finally:
        for x in hosts:
            x.close()
    for i, (x, y) in enumerate(zip(a, b)):
        assert x != y, f"hash #{i} is the same on two hosts"


def test_hash_and_identity_stay_consistent(h):
    """hash() must agree with identity for every object, and the dicts the zygote
    filled before the fork (keyed by types, functions, bound methods) must still
    find their keys: the key is fixed before the interpreter starts."""
    code = r"""
import copy, re, functools, typing, collections, json, dataclasses, enum, decimal, pprint
class K:
    def m(self):
        pass
k = K()
nan = float('nan')
dnan = decimal.Decimal('nan')
cnan = complex(nan, 0)
keys = [object(), k, K, int, None, len, k.m, K.m, [].append, (1).__add__, nan, dnan, cnan,
        lambda: 0, copy.deepcopy]
d = {x: i for i, x in enumerate(keys)}
s = set(keys)
big = [object() for _ in range(20000)]
bs = set(big)

@functools.singledispatch
def kind(x):
    return 'other'
@kind.register
def _(x: int):
    return 'int'

class Color(enum.Enum):
    RED = 1

@dataclasses.dataclass
class P:
    x: int

memo = {}
copy.deepcopy([k], memo)
l = []
l.append(l)
[all(d[x] == i for i, x in enumerate(keys)), all(x in s for x in keys),
 all(hash(x) == hash(x) for x in keys), all(x in bs for x in big), len(bs),
 nan in {nan}, float('nan') in {nan}, dnan in {dnan}, cnan in {cnan},
 hash(k.m) == hash(k.m), k.m in {k.m}, [].append in {[].append},
 copy.deepcopy({'a': [1, (2, 3)], 'b': (4,)}), bool(re.match('a+', 'aa')), bool(re.match('a+', 'aa')),
 kind(3), kind('x'), typing.List[int] == typing.List[int], isinstance([], collections.abc.Sequence),
 json.dumps({'a': [1, 2]}), Color(1).name, P(1) == P(1), id(k) in memo,
 pprint.saferepr(l) == '[<Recursion on list with id=%d>]' % id(l),
 '%x' % id(k) in repr(k), object.__repr__(k) == repr(k), object.__hash__(k) == hash(k)]
"""
    v = py(h, code)
    assert v == [True, True, True, True, 20000, True, False, True, True, True, True, False,
                 {"a": [1, [2, 3]], "b": [4]}, True, True, "int", "other", True, True,
                 '{"a": [1, 2]}', "RED", True, True, True, True, True, True]


def test_rlock_owner_is_hidden_and_round_trips(h):
    """functools.cached_property(f).lock is a _thread.RLock: its repr and
    _release_save() show the owner thread's ident, which is an address."""
    v = py(h, "import functools\nl = functools.cached_property(len).lock\nl.acquire()\n"
              "r = repr(l)\ns = l._release_save()\nowned = l._is_owned()\n"
              "l._acquire_restore(s)\nback = l._is_owned()\nl.release()\n"
              "[r, list(s), owned, back, repr(l)]")
    r, (count, owner), owned, back, after = v
    ranges = zygote_ranges(h)
    assert count == 1
    assert not looks_like_address(owner, ranges), f"owner {owner:#x}"
    assert f"owner={owner} count=1" in r, r
    assert not any(looks_like_address(x, ranges) for x in hexes(r)), r
    assert (owned, back) == (False, True)
    assert "owner=0 count=0" in after, after


@needs_data
def test_numpy_nan_hashes_are_not_addresses(h):
    """numpy hashes its float16, float32, longdouble, complex64 and clongdouble
    scalars with _Py_HashDouble(self, value): a NaN's hash was _Py_HashPointer,
    the address rotated by 4 (float64 and complex128 inherit float's and
    complex's, already hidden). Each NaN keeps one hash, in a set too."""
    code = ("import numpy as np\n"
            "ts = [np.float16, np.float32, np.float64, np.longdouble, np.complex64,\n"
            "      np.complex128, np.clongdouble]\n"
            "xs = [t('nan') for t in ts[:4]] + [t(complex('nan')) for t in ts[4:]]\n"
            "xs += [np.complex64(complex(1, float('nan'))), np.complex64(complex(float('nan'), 1))]\n"
            "[[hash(x) for x in xs], all(hash(x) == hash(x) and x in {x} for x in xs),\n"
            " all(type(x).__hash__(x) == hash(x) for x in xs),\n"
            " [hash(np.float16(1.5)), hash(np.float32(2.5)), hash(np.longdouble(0.5)),\n"
            "  hash(np.complex64(1 + 2j)), hash(np.clongdouble(1 + 2j))]]")
    hashes, stable, wrappers, plain = py(h, code, policy="data")
    assert stable is True and wrappers is True
    assert plain == [hash(1.5), hash(2.5), hash(0.5), hash(1 + 2j), hash(1 + 2j)]
    ranges = zygote_ranges(h)
    for i, x in enumerate(hashes):
        assert not looks_like_address(rotl4(x), ranges), f"hash of NaN #{i} is an address"
