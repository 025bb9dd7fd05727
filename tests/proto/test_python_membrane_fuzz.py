"""Grammar fuzzing of what a snippet can be handed (issue 24, item 2): the membrane.

The invariant: after the zygote seals, nothing a snippet can reach is a real module
(a module object other than the ones its imports gave it: the facades and their
submodule facades), a frame, a code object, a cell, or a module's namespace (a dict
holding '__name__' and '__builtins__' or '__loader__' that the snippet did not make) --
whether it reaches it through an attribute, an item, iteration, an argument passed to
its own functions and hooks, a return value, an exception or its attributes, or a
callback of an offered module. The attribute guard (What a snippet can reach, 7)
refuses such a value on the snippet's own reads; these routes hand it over without a
snippet read: stdlib code reads it in its own (exempt) frame and passes it on.

A seeded generator composes snippets from these parts:

    snippet := prelude (imports, capture hooks, the oracle) subject route [chain] oracle
    subject := warnings.catch_warnings(), logging.getLogger(), a logger's bound method,
               functools.partial, json.JSONDecoder/JSONEncoder, json.dumps, a builtin
               (math.sqrt, heapq.heappush), stdlib generators (difflib.ndiff,
               JSONEncoder.iterencode), exceptions raised by stdlib code, a snippet
               dataclass instance, typing objects, an enum class and member,
               random.Random, collections objects, facades and facade functions,
               contextlib.ExitStack/redirect_stdout, logging Formatter/Handler/LogRecord/
               LoggerAdapter, string.Formatter/Template, textwrap, difflib, pprint,
               calendar, fractions, re objects, warnings.WarningMessage; issue 28's:
               a queue.Queue, its threading Condition and _thread lock, PriorityQueue,
               SimpleQueue, sched.scheduler, reprlib.Repr, shlex.shlex,
               html.parser.HTMLParser, graphlib.TopologicalSorter, SystemRandom,
               ipaddress networks, hmac and zlib objects, their errors; under data
               numpy arrays, dtypes, Generators, pandas Series/DataFrame/Timestamp
    name    := _module sys modules __dict__ __code__ __globals__ __closure__ __builtins__
               gi_frame gi_code f_back f_globals tb_frame __self__ __wrapped__ _getframe
               __spec__ __loader__ ... and ordinary names (the controls)
    route   := how the stdlib is made to read the name or hand an object over:
               functools.update_wrapper (assigned; updated, into the wrapper's own
               __dict__), functools.wraps, attrgetter handed to functools.singledispatch,
               map, sorted(key=), max(key=), functools.cached_property planted on the
               subject's class,
               string.Formatter subclass hooks (get_value / format_field / convert_field),
               contextlib.redirect_stdout/redirect_stderr subclass naming the stream,
               copy.copy/deepcopy into a subclass's __setstate__, deepcopy with a memo
               that captures (its keep-alive list), dataclasses.replace/asdict/astuple
               over planted __dataclass_fields__, snippet subclasses of stdlib classes
               whose __setattr__, data descriptors (__set__/__get__) or
               __init_subclass__ capture what the stdlib's own methods store or pass,
               typing.get_type_hints over classes naming a
               stdlib __module__, enum _missing_/_generate_next_value_, abc
               __subclasshook__, contextlib ExitStack.push/callback and contextmanager
               receiving exceptions raised by stdlib code, logging filters / record
               factories / Formatter and Handler subclasses, warnings record=True with a
               snippet category and catch_warnings(module=hook), callbacks (json hooks,
               re.sub, reduce, groupby, lru_cache, defaultdict, format_map __missing__;
               issue 28's: sched actions and clocks, Condition.wait_for, PriorityQueue
               comparisons, tomllib's parse_float, graphlib nodes, HTMLParser and
               reprlib.Repr subclasses, recursive_repr, fnmatch, hmac, shlex);
               under data: np.vectorize, np.frompyfunc, np.apply_along_axis,
               Series.map/apply, DataFrame.pipe/agg/apply, with snippet callables and
               with attrgetter / update_wrapper partials
    chain   := sometimes the route is applied again (once or twice), with another name,
               to each object the first application captured, exceptions included
               (warnings.catch_warnings()._module, then its sys: the finding that opened
               issue 24); after a route that reads the real sys's attributes, the chain
               is update_wrapper, wraps, cached_property, deepcopy with a memo, or a call
               of what was captured when it is sys._getframe, exc_info or
               _current_frames (a frame)

Capture hooks (Cap: __setattr__ __eq__ __hash__ __lt__ __set_name__ __init_subclass__
__getitem__ __call__ __get__ __set__ __enter__ __exit__ __format__ __getattr__ update;
Miss: __missing__) store their arguments into a global list. The oracle runs at the
end of the snippet, inside it: it walks the captured objects, return values and caught
exceptions (args, and then obj, value, name, __context__, __cause__) three levels deep
(items of lists, tuples, sets, dicts, mapping proxies) and reports each leak on stdout
("TP-LEAK ...") as it finds it and in the snippet's value. A facade's own namespace
(reached by swapping a facade's __class__ and letting dataclasses read its __dict__)
is reported as "namespace of facade", apart from a real module's.

Verdict per snippet: ok with no leak, or policy_violation (a refusal), or a
runtime_error whose type is an ordinary error a route raises (ALLOWED_ERRORS), or an
exec limit (LIMIT_KINDS: a hook that answers every attribute can make pandas build
without end); never crashed, internal_error or a timeout; and a "TP-LEAK" line in
stdout fails whatever the verdict. A quarter of the snippets are controls (an ordinary
name on a subject that holds no module; for a class route, an attribute its
constructor stores): a control refused with policy_violation is an over-refusal and
fails; a control that runs but captures nothing is counted, and most of each route's
controls and 85 % of all must capture (the routes really run). A failure prints, per
route, the count and the shortest failing snippet after the prelude (PRELUDE + that
text reproduces it) with its seed, preset and case number. Seeded (TP_MEMBRANE_SEED),
bounded in count (TP_MEMBRANE_N per preset) and time (TP_MEMBRANE_SECONDS, shared by
the presets). Runs under standard, permissive and (where numpy, pandas and matplotlib
are installed, as test_data_preset.py) data. test_known_escape_is_refused holds the exact example of issue 24.
"""
import json
import os
import random
import time

import pytest

from conftest import Host, needs_data

SEED = int(os.environ.get("TP_MEMBRANE_SEED", "2411"))
N = int(os.environ.get("TP_MEMBRANE_N", "400"))
SECONDS = float(os.environ.get("TP_MEMBRANE_SECONDS", "40"))
PRESETS = ["standard", "permissive", "data"]
# What a route may legitimately raise past its own try (a class it cannot subclass, a
# constructor that refuses the arguments ...).
ALLOWED_ERRORS = {"TypeError", "AttributeError", "ValueError", "KeyError", "RuntimeError",
                  "NotImplementedError", "IndexError", "StopIteration"}
# A hook that answers every attribute (Cap) can make pandas or numpy build without end:
# the exec's own limits end it, which is a verdict too.
LIMIT_KINDS = {"memory_limit", "cpu_limit"}

PRELUDE = r'''
import functools, operator, copy, dataclasses, typing, enum, abc, contextlib, traceback
import warnings, logging, string, json, random, collections, collections.abc, itertools
import textwrap, difflib, pprint, calendar, re, fractions, heapq, math
import queue, stat, reprlib, ipaddress, tomllib, graphlib, fnmatch, shlex, hmac, zlib, secrets
import sched, html.parser, time
%(extra_imports)s
CAP = []
_G = globals()
_MODS = [functools, operator, copy, dataclasses, typing, enum, abc, contextlib, traceback,
         warnings, logging, string, json, random, collections, collections.abc, itertools,
         textwrap, difflib, pprint, calendar, re, fractions, heapq, math, queue, stat, reprlib,
         ipaddress, tomllib, graphlib, fnmatch, shlex, hmac, zlib, secrets, sched, html,
         html.parser, time%(extra_mods)s]


def _facades(ms):
    # The facades' own module-valued names (collections.abc, numpy.linalg ...) are
    # facades too: the snippet reads them itself, through the guard.
    out, todo = [], list(ms)
    while todo:
        m = todo.pop()
        if any(m is o for o in out):
            continue
        out.append(m)
        for k in dir(m):
            if not k.startswith('_'):
                v = getattr(m, k, None)
                if type(v).__name__ == 'module':
                    todo.append(v)
    return out


IMPORTED = _facades(_MODS)


def hook(*a, **k):
    CAP.extend(a)
    CAP.extend(k.values())
    return 0


class Cmp:
    def __eq__(self, o):
        CAP.append(o)
        return False

    def __ne__(self, o):
        CAP.append(o)
        return True

    def __lt__(self, o):
        CAP.append(o)
        return False

    __gt__ = __le__ = __ge__ = __lt__

    def __hash__(self):
        return 7


class Cap(Cmp):
    def __setattr__(self, k, v):
        CAP.append(v)

    def __set_name__(self, owner, name):
        CAP.append(owner)

    def __init_subclass__(cls, **kw):
        CAP.append(cls)
        CAP.extend(kw.values())

    def __getitem__(self, k):
        CAP.append(k)
        return 0

    def __call__(self, *a, **k):
        CAP.extend(a)
        CAP.extend(k.values())
        return 0

    def __get__(self, o, t=None):
        CAP.append(o)
        return self

    def __set__(self, o, v):
        CAP.append(o)
        CAP.append(v)

    def __enter__(self):
        return self

    def __exit__(self, *a):
        CAP.extend(a)
        return True

    def __format__(self, spec):
        CAP.append(spec)
        return ''

    def __getattr__(self, n):
        return Cap()

    def update(self, *a, **k):
        CAP.extend(a)
        CAP.extend(k.values())


SYS_CALLS = ('_getframe', 'exc_info', '_current_frames')


class KeyCap:
    def __getattr__(self, n):
        return Cmp()


class Miss(dict):
    def __missing__(self, k):
        CAP.append(k)
        return 0


def _leak(v):
    t = type(v).__name__
    if t in ('frame', 'code', 'cell'):
        return t + ' ' + repr(v)[:80]
    if t == 'module':
        return None if any(v is m for m in IMPORTED) else 'module ' + repr(v)[:80]
    if (type(v) is dict and v is not _G and '__name__' in v
            and ('__builtins__' in v or '__loader__' in v)):
        # A facade's own namespace (no file, no builtins, its loader None) is told
        # apart in the report; it is still not the snippet's to hold.
        facade = ('__builtins__' not in v and '__file__' not in v and v.get('__loader__') is None
                  and any(m.__name__ == v.get('__name__') for m in IMPORTED))
        return 'namespace of %%s %%r' %% ('facade' if facade else 'module', v.get('__name__'))
    return None


LEAKS, _SEEN, _EXC = [], set(), []


def _walk(v, where, depth):
    if id(v) in _SEEN or len(LEAKS) >= 12:
        return
    _SEEN.add(id(v))
    try:
        k = _leak(v)
    except Exception as e:
        k = None
    if k:
        LEAKS.append(where + ': ' + k)
        print('TP-LEAK ' + where + ': ' + k)
        return
    if depth <= 0:
        return
    t = type(v)
    try:
        if t in (list, tuple, set, frozenset, collections.deque):
            for i, x in enumerate(list(v)[:300]):
                _walk(x, '%%s[%%d]' %% (where, i), depth - 1)
        elif t.__name__ == 'mappingproxy' or issubclass(t, dict):
            for kk, x in list(dict.items(v) if issubclass(t, dict) else v.items())[:600]:
                _walk(kk, where + '.key', depth - 1)
                _walk(x, '%%s[%%.40r]' %% (where, kk), depth - 1)
        elif issubclass(t, BaseException):
            _walk(v.args, where + '.args', depth - 1)
            _EXC.append((v, where, depth))
    except Exception as e:
        pass


def _oracle(*extra):
    _walk(CAP, 'CAP', 3)
    for i, x in enumerate(extra):
        _walk(x, 'R%%d' %% i, 3)
    # Exceptions' attributes last: reading one that holds a real module is the guard's
    # refusal (policy_violation, sticky), which must not hide the leaks found above.
    done = 0
    while done < len(_EXC):
        e, where, depth = _EXC[done]
        done += 1
        for a in ('obj', 'value', 'name', '__context__', '__cause__'):
            try:
                x = getattr(e, a, None)
            except Exception:
                x = None
            if x is not None:
                _walk(x, where + '.' + a, depth)
    return LEAKS


def _ncap():
    return len([c for c in CAP if c is not None and not issubclass(type(c), BaseException)])
'''

def subject(expr, name, cls=None, args="", poke="", init_attr=None, setup="", holds=False, weight=1, hot=(),
            pyobj=None):
    """expr: the object X; name: an ordinary attribute of it (the attribute routes'
    control); cls/args/poke: a class to subclass, its constructor's arguments and code
    that drives an instance S through its own methods; init_attr: an attribute the
    constructor stores (the class routes' control); holds: the object holds a real
    module (never a control); weight: how often it is drawn; hot: names worth reading
    on it (drawn half the time); pyobj: an instance of a Python class with a __dict__
    (default: it has a class to subclass)."""
    return {"expr": expr, "name": name, "cls": cls, "args": args, "poke": poke, "init_attr": init_attr,
            "setup": setup, "holds": holds, "weight": weight, "hot": list(hot),
            "pyobj": bool(cls) if pyobj is None else pyobj}


WARN_HOT = ("_module", "_module", "_record", "_entered", "_filters", "_showwarning", "log")
FN_HOT = ("__wrapped__", "__code__", "__globals__", "__closure__", "__defaults__", "__builtins__", "__self__",
          "__func__", "__module__", "__dict__", "__kwdefaults__")
GEN_HOT = ("gi_frame", "gi_code", "gi_yieldfrom", "gi_running")
ERR_HOT = ("obj", "__context__", "__cause__", "__traceback__", "args", "doc", "name")
MOD_HOT = ("sys", "_sys", "os", "__dict__", "__loader__", "__spec__", "__builtins__", "_warnings", "modules")
CLS_HOT = ("__dict__", "__init__", "__module__", "__mro__", "__subclasses__", "__wrapped__")


ENTER_EXIT = "S.__enter__(); S.__exit__(None, None, None)"
SUBJECTS = [
    subject("warnings.catch_warnings()", "_record", "warnings.catch_warnings", "()", ENTER_EXIT, "_record",
            holds=True, weight=5, hot=WARN_HOT),
    subject("warnings.catch_warnings(record=True)", "_record", "warnings.catch_warnings", "(record=True)",
            ENTER_EXIT, "_record", holds=True, weight=3, hot=WARN_HOT),
    subject("logging.getLogger('tp.fz')", "name", "logging.Logger", "('tp.fz2',)", "S.warning('x')", "name",
            hot=('manager', 'parent', 'root', '_cache', 'handlers')),
    subject("logging.getLogger('tp.fz').info", "__name__", hot=FN_HOT),
    subject("functools.partial(json.dumps, indent=1)", "func", "functools.partial", "(json.dumps,)", "S([1])",
            pyobj=False, hot=('func', '__dict__', '__reduce__', 'args', 'keywords')),
    subject("json.JSONDecoder()", "strict", "json.JSONDecoder", "()", "S.decode('{\"a\": [1]}')", "strict",
            hot=('scan_once', 'parse_object', 'parse_array', 'memo', 'object_hook')),
    subject("json.JSONEncoder()", "indent", "json.JSONEncoder", "()", "S.encode({'a': [1]})", "indent"),
    subject("json.dumps", "__name__", hot=FN_HOT),
    subject("math.sqrt", "__name__", hot=FN_HOT),
    subject("heapq.heappush", "__name__", hot=FN_HOT),
    subject("random.choice", "__name__", hot=FN_HOT),
    subject("difflib.ndiff(['a'], ['b'])", "gi_running", hot=GEN_HOT),
    subject("json.JSONEncoder().iterencode([1])", "gi_running", hot=GEN_HOT),
    subject("ERR", "args", setup="try:\n    json.loads('{')\nexcept Exception as _e:\n    ERR = _e\n", hot=ERR_HOT),
    subject("ERR", "args", setup="try:\n    operator.attrgetter('nope')(logging.getLogger('tp.fz'))\n"
                                 "except Exception as _e:\n    ERR = _e\n", hot=ERR_HOT),
    subject("ERR", "args", setup="try:\n    dataclasses.fields(1)\nexcept Exception as _e:\n    ERR = _e\n",
            hot=ERR_HOT),
    subject("ERR", "args", setup="try:\n    contextlib.redirect_stdout(None).__exit__(None, None, None)\n"
                                 "except Exception as _e:\n    ERR = _e\n", hot=ERR_HOT),
    subject("DC()", "a", "DC", "()", "repr(S)", "a", setup="@dataclasses.dataclass\nclass DC:\n    a: int = 1\n"),
    subject("typing.List[int]", "copy_with", hot=('__origin__', '__args__', '__parameters__', '_name', 'copy_with')),
    subject("typing.TypeVar('T')", "__name__", hot=('__module__', '__bound__', '__dict__')),
    subject("typing.get_type_hints", "__name__", hot=FN_HOT),
    subject("Color", "RED", setup="class Color(enum.Enum):\n    RED = 1\n"),
    subject("Color.RED", "value", setup="class Color(enum.Enum):\n    RED = 1\n"),
    subject("enum.Enum", "__name__", hot=CLS_HOT),
    subject("random.Random(1)", "gauss_next", "random.Random", "(1,)", "S.random()", "gauss_next"),
    subject("collections.OrderedDict(a=1)", "keys", "collections.OrderedDict", "()", "S.update(b=2)", pyobj=False),
    subject("collections.Counter('ab')", "most_common", "collections.Counter", "('ab',)", "S.update('ab')"),
    subject("collections.ChainMap({})", "maps", "collections.ChainMap", "({},)", "S.new_child()", "maps"),
    subject("collections.deque([1])", "maxlen"),
    subject("warnings", "warn", hot=MOD_HOT),
    subject("functools", "reduce", hot=MOD_HOT),
    subject("warnings.warn", "__name__", hot=FN_HOT),
    subject("traceback.format_exc", "__name__", hot=FN_HOT),
    subject("logging.Formatter.formatException", "__name__", hot=FN_HOT),
    subject("warnings.catch_warnings", "__name__", hot=CLS_HOT),
    subject("contextlib.ExitStack()", "pop_all", "contextlib.ExitStack", "()", ENTER_EXIT, "_exit_callbacks"),
    # (its control name: _new_target is the None it was given, which captures nothing)
    subject("contextlib.redirect_stdout(None)", "_old_targets", "contextlib.redirect_stdout", "(None,)",
            ENTER_EXIT, "_new_target", hot=('_stream', '_old_targets', '_new_target')),
    subject("logging.Formatter('%(message)s')", "datefmt", "logging.Formatter", "('%(message)s',)",
            "S.format(logging.makeLogRecord({'msg': 'x'}))", "datefmt", hot=('_style', 'converter', '_fmt')),
    subject("logging.NullHandler()", "level", "logging.NullHandler", "()",
            "S.handle(logging.makeLogRecord({'msg': 'x'}))", "level"),
    subject("logging.makeLogRecord({'msg': 'x'})", "msg", "logging.LogRecord",
            "('n', 10, 'p', 1, 'm', None, None)", "S.getMessage()", "msg",
            hot=('exc_info', 'stack_info', 'args', '__dict__')),
    subject("logging.LoggerAdapter(logging.getLogger('tp.fz'), {})", "extra", "logging.LoggerAdapter",
            "(logging.getLogger('tp.fz'), {})", "S.warning('x')", "extra"),
    subject("string.Formatter()", "format", "string.Formatter", "()", "S.format('{0}', 1)"),
    subject("string.Template('$a')", "template", "string.Template", "('$a',)", "S.safe_substitute(a=1)",
            "template"),
    subject("textwrap.TextWrapper()", "width", "textwrap.TextWrapper", "()", "S.wrap('a b c')", "width"),
    subject("difflib.SequenceMatcher(None, 'ab', 'ac')", "a", "difflib.SequenceMatcher", "(None, 'ab', 'ac')",
            "S.ratio()", "a"),
    subject("pprint.PrettyPrinter()", "isreadable", "pprint.PrettyPrinter", "()", "S.pformat([1])", "_width"),
    subject("calendar.TextCalendar()", "firstweekday", "calendar.TextCalendar", "()", "S.formatmonth(2020, 1)",
            "firstweekday"),
    subject("fractions.Fraction(1, 3)", "numerator", "fractions.Fraction", "(1, 3)", "S + 1", "_numerator",
            pyobj=False),
    subject("re.compile('a')", "pattern"),
    subject("re.match('a', 'a')", "re", hot=('re', 'string', 'regs')),
    subject("warnings.WarningMessage('m', UserWarning, 'f', 1)", "message", "warnings.WarningMessage",
            "('m', UserWarning, 'f', 1)", "str(S)", "message"),
    subject("functools.singledispatch(len)", "registry", hot=FN_HOT + ('registry', 'dispatch')),
    subject("collections.namedtuple('P', 'a b')(1, 2)", "a"),
    # issue 28 (docs/python.md, "The standard library, module by module"): a Queue and its
    # threading Condition and _thread locks, sched's scheduler and RLock, the lexers and
    # parsers, their modules and functions
    subject("queue.Queue()", "maxsize", "queue.Queue", "()", "S.put(1); S.get(); S.task_done()", "maxsize",
            weight=2, hot=('mutex', 'not_empty', 'not_full', 'all_tasks_done', 'queue', '_lock', '_waiters')),
    subject("queue.Queue().not_empty", "_waiters", "type(queue.Queue().not_empty)", "()",
            "S.acquire(); S.notify_all(); S.release()", "_lock", weight=2,
            hot=('_lock', '_waiters', 'acquire', 'release', '_release_save', '_is_owned', 'wait')),
    subject("queue.Queue().mutex", "locked", hot=('acquire', 'release', '_at_fork_reinit', '__enter__')),
    subject("queue.PriorityQueue()", "maxsize", "queue.PriorityQueue", "()", "S.put((1, 'a')); S.get()",
            "maxsize"),
    subject("queue.SimpleQueue()", "qsize"),
    subject("sched.scheduler()", "timefunc", "sched.scheduler", "()", "S.enter(0, 1, len, ('a',)); S.run()",
            "timefunc", hot=('_lock', 'timefunc', 'delayfunc', '_queue', 'queue')),
    subject("reprlib.Repr()", "maxlist", "reprlib.Repr", "()", "S.repr([1, [2]])", "maxlist"),
    subject("shlex.shlex('a b')", "instream", "shlex.shlex", "('a b',)", "list(S)", "instream",
            hot=('instream', 'sourcehook', 'filestack', 'infile', 'push_source')),
    subject("html.parser.HTMLParser()", "rawdata", "html.parser.HTMLParser", "()",
            "S.feed('<a x=1>t&amp;</a>'); S.close()", "rawdata", hot=('rawdata', 'interesting', 'lasttag')),
    subject("graphlib.TopologicalSorter({'b': {'a'}})", "_node2info", "graphlib.TopologicalSorter",
            "({'b': {'a'}},)", "list(S.static_order())", "_node2info"),
    subject("secrets.SystemRandom()", "gauss_next"),  # (getstate raises: no copy, no class route)
    subject("ipaddress.ip_network('10.0.0.0/30')", "network_address",
            hot=('network_address', 'netmask', '_constants', 'hosts', '__reduce__')),
    subject("hmac.new(b'k', b'm', 'sha256')", "digest_size", hot=('_hmac', '_inner', '_outer', 'digest_cons')),
    subject("zlib.compressobj()", "compress"),
    subject("queue", "Queue", hot=MOD_HOT + ('threading', 'types', 'time')),
    subject("reprlib", "repr", hot=MOD_HOT + ('get_ident', 'builtins')),
    subject("stat.filemode", "__name__", hot=FN_HOT),
    subject("tomllib.loads", "__name__", hot=FN_HOT),
    subject("fnmatch.translate", "__name__", hot=FN_HOT),
    subject("secrets.choice", "__name__", hot=FN_HOT),
    subject("ERR", "args", setup="try:\n    tomllib.loads('a = ')\nexcept Exception as _e:\n    ERR = _e\n",
            hot=ERR_HOT),
    subject("ERR", "args", setup="try:\n    queue.Queue().get_nowait()\nexcept Exception as _e:\n    ERR = _e\n",
            hot=ERR_HOT),
    subject("ERR", "args", setup="try:\n    graphlib.TopologicalSorter({1: {2}, 2: {1}}).prepare()\n"
                                 "except Exception as _e:\n    ERR = _e\n", hot=ERR_HOT),
    subject("ERR", "args", setup="try:\n    shlex.split('\"')\nexcept Exception as _e:\n    ERR = _e\n",
            hot=ERR_HOT),
]
DATA_SUBJECTS = [
    subject("np.zeros(3)", "shape"),
    subject("np.dtype('f8')", "name"),
    subject("np.random.default_rng(1)", "bit_generator"),
    subject("np.vectorize(len)", "pyfunc", "np.vectorize", "(len,)", "S(['a'])", "pyfunc"),
    subject("pd.Series([1, 2])", "name"),
    subject("pd.DataFrame({'a': [1]})", "columns"),
    subject("pd.Timestamp(0)", "year"),
    subject("np.sum", "__name__"),
    subject("pd.Series.map", "__name__"),
]
# Names the routes read: what leads to modules, frames, code and namespaces, and
# ordinary ones.
NAMES = ["_module", "sys", "modules", "__dict__", "__code__", "__globals__", "__closure__",
         "__builtins__", "__defaults__", "__kwdefaults__", "gi_frame", "gi_code", "gi_yieldfrom",
         "f_back", "f_globals", "tb_frame", "tb_next", "__traceback__", "__self__", "__wrapped__",
         "_getframe", "__spec__", "__loader__", "__func__", "__module__", "__class__", "__context__",
         "__cause__", "func", "scan_once", "parse_object", "manager", "root", "parent", "_old_targets",
         "lock", "_style", "converter", "os", "_os", "_sys", "warnings", "stdout", "stderr",
         "exc_info", "registry", "dispatch", "_member_map_", "__members__", "_inst", "codecs",
         "__init__", "__origin__", "__args__", "__annotations__", "filters", "showwarning",
         "__mro__", "__bases__", "maps", "args", "_stream", "_showwarnmsg_impl", "__getstate__",
         "__reduce_ex__", "_filters_mutated", "pattern", "re", "_lock", "_cache", "stack",
         "obj", "value", "name", "_warnings", "_onceregistry", "defaultaction"]
DATA_NAMES = ["np", "pd", "_lib", "ctypes", "_ctypes", "_mgr", "base", "__array_interface__",
              "pyfunc", "bit_generator", "_data", "_constructor", "func_globals", "func_code"]
# What a redirect_stdout subclass may name as its stream (an attribute of the real sys).
SYS_NAMES = ["modules", "modules", "_getframe", "_getframe", "__dict__", "nope", "path", "meta_path",
             "exc_info", "settrace", "__dict__", "builtin_module_names", "stdin", "exit", "flags", "audit",
             "addaudithook", "__stdout__", "_current_frames", "path_importer_cache", "breakpointhook",
             "excepthook", "nope"]
SYS_CONTROLS = ["stdout", "stderr"]
# The shim's attrgetter, str.format and getattr refuse, by the AST check's rules, a
# dunder outside the object protocol and the frame names: a route through them
# draws mostly names they let through.
PROTOCOL_DUNDERS = {"__class__", "__module__", "__context__", "__cause__", "__init__", "__annotations__",
                    "__members__", "__name__", "__doc__"}
FRAME_NAMES = set("f_back f_globals f_locals f_builtins f_code f_trace gi_frame gi_code gi_yieldfrom "
                  "cr_frame cr_code cr_await cr_origin ag_frame ag_code ag_await tb_frame tb_next "
                  "co_code co_consts co_names func_globals func_code func_closure func_defaults func_dict".split())


def ast_ok(name):
    if name.startswith("__") and name.endswith("__"):
        return name in PROTOCOL_DUNDERS
    return name not in FRAME_NAMES


# Code that raises from stdlib code, over X and N.
RAISERS = [
    "json.loads('{')", "copy.deepcopy(X)", "dataclasses.fields(X)", "typing.get_type_hints(X)",
    "json.dumps(X)", "textwrap.dedent(X)", "operator.attrgetter('tp_missing')(X)",
    "warnings.catch_warnings(module=X).__enter__()", "dataclasses.replace(X)", "enum.Enum('E', 'a')(X)",
    "difflib.get_close_matches(X, ['a'])", "re.compile(X)", "copy.copy(X).tp_missing",
    "contextlib.redirect_stdout(None).__exit__(None, None, None)", "warnings.warn_explicit('m', X, 'f', 1)",
    "json.JSONDecoder().raw_decode(X)", "string.Template('$a').substitute({})",
    "functools.reduce(operator.add, [X, X])", "logging.getLevelName(X) + 1",
    "tomllib.loads(X)", "ipaddress.ip_address(X)", "shlex.split(X)", "queue.Queue().get(timeout=X)",
    "graphlib.TopologicalSorter({X: {X}}).prepare()", "fnmatch.fnmatch(X, X)", "hmac.new(X)",
]

# Routes. kind "attr": the body of route(X, N), chainable (applied again, with a second
# name, to everything it captured); "class": subclasses C (the subject's class),
# constructs S and pokes it; "plain": over X alone. names: "any", "ast" (mostly
# names the shim's readers let through), "fmt" (no leading '_': format fields refuse
# those early), "sys" (an attribute of the real sys). MOD, ANN, KK and RAISE are filled
# in per snippet.
ROUTES = {
    "update_wrapper": ("attr", "any", "functools.update_wrapper(Cap(), X, assigned=(N,), updated=())"),
    # updated=('__dict__',) copies X's dict into the wrapper's own: its items are the snippet's to read.
    "update_wrapper-updated": ("attr", "any", "W = Cap()\nCAP.append(W.__dict__)\n"
                                              "functools.update_wrapper(W, X, assigned=(), updated=(N,))"),
    "wraps": ("attr", "any", "functools.wraps(X, assigned=(N, 'nope'), updated=())(Cap())"),
    "singledispatch-attrgetter": ("attr", "ast", "CAP.append(functools.singledispatch(operator.attrgetter(N))(X))"),
    "map-attrgetter": ("attr", "ast", "CAP.append(list(map(operator.attrgetter(N), [X])))"),
    "sorted-key-attrgetter": ("attr", "ast", "CAP.append(sorted([X, KeyCap()], key=operator.attrgetter(N)))"),
    "max-key-attrgetter": ("attr", "ast", "CAP.append(max([KeyCap(), X], key=operator.attrgetter(N)))"),
    "cached_property": ("attr", "any",
                        "cp = functools.cached_property(Cap())\ntype('Own', (), {N: cp})\nT = type(X)\n"
                        "setattr(T, 'tp_cp', cp)\ntry:\n    CAP.append(X.tp_cp)\nfinally:\n    delattr(T, 'tp_cp')"),
    "formatter-hooks": ("attr", "fmt",
                        "class F(string.Formatter):\n"
                        "    def get_value(self, key, args, kwargs):\n"
                        "        v = super().get_value(key, args, kwargs)\n        CAP.append(v)\n        return v\n"
                        "    def convert_field(self, value, conversion):\n        CAP.append(value)\n"
                        "        return value\n"
                        "    def format_field(self, value, spec):\n        CAP.append(value)\n        return ''\n"
                        "CAP.append(F().format('{0.' + N + '}', X))"),
    "redirect_stdout": ("attr", "sys",
                        "class RS(contextlib.redirect_stdout):\n    _stream = N\n"
                        "r = RS(None)\ntry:\n    r.__enter__()\n    CAP.append(list(r._old_targets))\n"
                        "finally:\n    r.__exit__(None, None, None)\n"
                        "for t in CAP[-1]:\n"
                        "    if type(t).__name__ == 'builtin_function_or_method' and t.__name__ in SYS_CALLS:\n"
                        "        CAP.append(t())"),
    "redirect_stderr": ("attr", "sys",
                        "class RS(contextlib.redirect_stderr):\n    _stream = N\n"
                        "r = RS(Cap())\nr.__enter__()\nCAP.append(list(r._old_targets))\n"
                        "r.__exit__(None, None, None)"),
    "deepcopy-memo": ("attr", "any",
                      "class M(dict):\n    n = 0\n"
                      "    def get(self, k, d=None):\n        M.n += 1\n        return d if M.n <= KK else 0\n"
                      "    def __setitem__(self, k, v):\n        CAP.append(v)\n        dict.__setitem__(self, k, v)\n"
                      "    def __getitem__(self, k):\n        raise KeyError(k)\n"
                      "CAP.append(copy.deepcopy(X, M()))"),
    "dataclass-fields": ("attr", "any",
                         "f = dataclasses.field()\nf.name = N\n"
                         "@dataclasses.dataclass\nclass _D:\n    a: int = 0\n"
                         "f._field_type = dataclasses.fields(_D)[0]._field_type\nT = type(X)\n"
                         "setattr(T, '__dataclass_fields__', {N: f})\ntry:\n"
                         "    CAP.append(dataclasses.asdict(X, dict_factory=Cap()))\nfinally:\n"
                         "    delattr(T, '__dataclass_fields__')"),
    "dataclass-replace": ("attr", "any",
                          "f = dataclasses.field()\nf.name = N\n"
                          "@dataclasses.dataclass\nclass _D:\n    a: int = 0\n"
                          "f._field_type = dataclasses.fields(_D)[0]._field_type\n"
                          "class Sub(type(X)):\n    def __init__(self, *a, **k):\n        CAP.extend(a)\n"
                          "        CAP.extend(k.values())\n"
                          "setattr(Sub, '__dataclass_fields__', {N: f})\nsetattr(X, '__class__', Sub)\n"
                          "CAP.append(dataclasses.replace(X))"),
    "typing-hints": ("attr", "any",
                     "K = type('K', (), {'__module__': MOD, '__annotations__': {'a': ANN, N: int}})\n"
                     "CAP.append(typing.get_type_hints(K, include_extras=True))"),
    "exitstack-raise": ("attr", "any",
                        "with contextlib.ExitStack() as st:\n    st.push(Cap())\n    st.callback(hook, X)\n"
                        "    RAISE"),
    "contextmanager-raise": ("attr", "any",
                             "@contextlib.contextmanager\ndef cm():\n    try:\n        yield X\n"
                             "    except BaseException as e:\n        CAP.append(e)\n        raise\n"
                             "with cm() as v:\n    CAP.append(v)\n    RAISE"),
    "logging-filter": ("attr", "ast",
                       "class Flt(logging.Filter):\n    def filter(self, rec):\n"
                       "        CAP.extend([rec.args, rec.exc_info, rec.msg, rec.stack_info, getattr(rec, N, None)])\n"
                       "        return False\n"
                       "lg = logging.getLogger('tp.fz.filter')\nflt = Flt()\nlg.addFilter(flt)\ntry:\n"
                       "    try:\n        RAISE\n    except Exception:\n        lg.exception('m %s', X)\n"
                       "    lg.warning('m %s', X, stack_info=True)\nfinally:\n    lg.removeFilter(flt)"),
    "logging-record-factory": ("attr", "any",
                               "old = logging.getLogRecordFactory()\n"
                               "def fac(*a, **k):\n    CAP.extend(a)\n    CAP.extend(k.values())\n"
                               "    return old(*a, **k)\n"
                               "logging.setLogRecordFactory(fac)\nlg = logging.getLogger('tp.fz.factory')\n"
                               "lg.propagate = False\ntry:\n    try:\n        RAISE\n    except Exception:\n"
                               "        lg.exception('m %s', X)\n    lg.error('m', extra={'x': X}, stack_info=True)\n"
                               "finally:\n    logging.setLogRecordFactory(old)"),
    "logging-handler-formatter": ("attr", "ast",
                                  "class Fm(logging.Formatter):\n    def formatException(self, ei):\n"
                                  "        CAP.extend(ei)\n        return super().formatException(ei)\n"
                                  "    def formatStack(self, s):\n        CAP.append(s)\n        return s\n"
                                  "    def formatMessage(self, rec):\n"
                                  "        CAP.extend([rec.msg, rec.args, getattr(rec, N, None)])\n"
                                  "        return super().formatMessage(rec)\n"
                                  "class H(logging.Handler):\n    def emit(self, rec):\n"
                                  "        CAP.append(self.format(rec))\n        CAP.extend([rec.args, rec.exc_info])\n"
                                  "lg = logging.getLogger('tp.fz.handler')\nlg.propagate = False\nh = H()\n"
                                  "h.setFormatter(Fm('%(message)s'))\nlg.addHandler(h)\ntry:\n"
                                  "    try:\n        RAISE\n    except Exception:\n        lg.exception('m %s', X)\n"
                                  "    lg.warning('m %s', X, stack_info=True)\nfinally:\n    lg.removeHandler(h)"),
    "warnings-record": ("attr", "any",
                        "class Cat(UserWarning):\n    def __init__(self, *a):\n        CAP.extend(a)\n"
                        "        super().__init__(*a)\n"
                        "with warnings.catch_warnings(record=True) as log:\n    warnings.simplefilter('always')\n"
                        "    warnings.warn('m', Cat, source=X)\n    warnings.warn(Cat(X))\n"
                        "    warnings.warn_explicit('m', Cat, N, 1, module=N, registry=Miss(), module_globals=Cap())\n"
                        "CAP.append(list(log))\n"
                        "CAP.extend([(w.message, w.category, w.filename, w.source, w.file, w.line) for w in log])"),
    "warnings-module-hook": ("attr", "any",
                             "cw = warnings.catch_warnings(module=Cap())\ncw.__enter__()\n"
                             "cw.__exit__(None, None, None)\nCAP.append(cw)\nfunctools.update_wrapper(Cap(), cw, "
                             "assigned=(N,), updated=())"),
    # Calls what a route captured when it is one of sys's functions that answer with
    # frames or the interpreter's state.
    "call": ("attr", "any",
             "if type(X).__name__ == 'builtin_function_or_method' and X.__name__ in SYS_CALLS:\n"
             "    CAP.append(X())"),
    "subclass-setattr": ("class", "any",
                         "class Sub(C):\n    def __setattr__(self, k, v):\n        CAP.append((k, v))\n"
                         "        super().__setattr__(k, v)\n"
                         "S = Sub%(args)s\n%(poke)s"),
    "subclass-descriptor": ("class", "any",
                            "class D:\n    def __set__(self, o, v):\n        CAP.append((N, v))\n"
                            "    def __get__(self, o, t=None):\n        CAP.append(o)\n        return None\n"
                            "Sub = type('Sub', (C,), {N: D()})\nS = Sub%(args)s\n%(poke)s"),
    "copy-setstate": ("class", "any",
                      "class Sub(C):\n    def __setstate__(self, st):\n        CAP.append(st)\n"
                      "S = Sub%(args)s\n%(poke)s\nCAP.append(%(copyfn)s(S))"),
    "subclass-init_subclass": ("class", "any",
                               "class B(C):\n    def __init_subclass__(cls, **kw):\n        CAP.append(cls)\n"
                               "        CAP.extend(kw.values())\n        super().__init_subclass__()\n"
                               "class Sub(B):\n    x = Cap()\nS = Sub%(args)s\n%(poke)s"),
    "enum-hooks": ("plain", "any",
                   "class EB(enum.Enum):\n    @staticmethod\n    def _generate_next_value_(name, start, count, last):\n"
                   "        CAP.extend((name, start, count, last))\n        return count\n"
                   "    @classmethod\n    def _missing_(cls, value):\n        CAP.append(value)\n        return None\n"
                   "E = EB('E', [('a', 1), ('b', 2)])\nclass E2(EB):\n    a = enum.auto()\n    b = enum.auto()\n"
                   "try:\n    E(X)\nexcept ValueError as e:\n    CAP.append(e)\nCAP.append(list(E2))"),
    "abc-subclasshook": ("plain", "any",
                         "class A(abc.ABC):\n    @classmethod\n    def __subclasshook__(cls, C):\n"
                         "        CAP.append(C)\n        return NotImplemented\n"
                         "CAP.append(isinstance(X, A))\nCAP.append(issubclass(type(X), A))\n"
                         "class A2(abc.ABC):\n    @abc.abstractmethod\n    def m(self):\n        pass\n    x = Cap()\n"
                         "CAP.append(abc.update_abstractmethods(A2))"),
    "comparisons": ("plain", "any",
                    "for o in (Cmp(), Cap(), KeyCap()):\n"
                    "    for f in (operator.eq, operator.ne, operator.lt, operator.gt):\n"
                    "        try:\n            CAP.append(f(X, o))\n        except TypeError as e:\n"
                    "            CAP.append(e)\n"
                    "CAP.append(X in [Cmp()])\nCAP.append({Cmp(): 2}.get(X) if X.__hash__ else None)"),
    "json-hooks": ("plain", "any",
                   "CAP.append(json.loads('{\"a\": [1.5, 2, NaN]}', object_hook=hook, parse_float=hook,\n"
                   "                      parse_int=hook, parse_constant=hook))\n"
                   "CAP.append(json.loads('{\"a\": 1}', object_pairs_hook=hook))\n"
                   "CAP.append(json.dumps([X], default=lambda o: (CAP.append(o), repr(o))[1]))\n"
                   "CAP.append(list(json.JSONEncoder(default=hook).iterencode({'k': X})))"),
    "callbacks": ("plain", "any",
                  "CAP.append(functools.reduce(hook, [X, X, X]))\nCAP.append(sorted([X, X], key=hook))\n"
                  "CAP.append(max([X], key=hook))\nCAP.append(list(map(hook, [X])))\n"
                  "CAP.append([list(g) for k, g in itertools.groupby([X, X], key=hook)])\n"
                  "CAP.append(heapq.nsmallest(1, [X, X], key=hook))\nCAP.append(functools.lru_cache(hook)(X))\n"
                  "CAP.append(functools.partial(hook, X)())\nCAP.append(re.sub('a', Cap(), 'aa'))\n"
                  "CAP.append(difflib.SequenceMatcher(Cap(), 'ab', 'ac').ratio())\n"
                  "CAP.append(collections.defaultdict(Cap())['k'])\n"
                  "CAP.append(sorted([X, X], key=functools.cmp_to_key(Cap())))\n"
                  "CAP.append(string.Template('$a $b').substitute(Miss()))\nCAP.append('{a}'.format_map(Miss()))\n"
                  "CAP.append(pprint.pformat(X))\nCAP.append(format(Cap(), 'spec'))"),
    "exitstack-callback": ("plain", "any",
                           "with contextlib.ExitStack() as st:\n    st.callback(hook, X)\n    st.push(Cap())\n"
                           "    st.enter_context(Cap())\n    CAP.append(list(st._exit_callbacks))\n"
                           "    RAISE\nCAP.append(st)"),
    "dataclass-factories": ("plain", "any",
                            "@dataclasses.dataclass\nclass DD:\n    a: object = None\n"
                            "    b: list = dataclasses.field(default_factory=Cap())\n"
                            "d = DD(X)\nCAP.append(dataclasses.fields(d))\n"
                            "CAP.append(dataclasses.replace(d, a=Cap()))\n"
                            "MD = dataclasses.make_dataclass('MD', [('a', int, dataclasses.field(default=Cap()))],\n"
                            "                                bases=(Cap,))\nCAP.append(MD)\n"
                            "CAP.append(dataclasses.asdict(d, dict_factory=Cap()))\n"
                            "CAP.append(dataclasses.astuple(d, tuple_factory=Cap()))"),
    "issue28-callbacks": ("plain", "any",
                          "s = sched.scheduler(Cap(), hook)\ns.enter(0, 1, hook, (X,), {'k': X})\n"
                          "CAP.append(s.run(blocking=False))\nCAP.append(s.queue)\n"
                          "s2 = sched.scheduler()\ns2.enter(0, 1, hook, (X,))\ns2.run()\n"
                          "c = queue.Queue().not_empty\nwith c:\n    CAP.append(c.wait_for(Cap(), 0))\n"
                          "pq = queue.PriorityQueue()\npq.put((Cmp(), X))\npq.put((Cmp(), X))\n"
                          "CAP.append(pq.get())\n"
                          "CAP.append(tomllib.loads('a = 1.5', parse_float=hook))\n"
                          "CAP.append(list(graphlib.TopologicalSorter({Cmp(): {Cmp()}}).static_order()))\n"
                          "class HP(html.parser.HTMLParser):\n"
                          "    def handle_starttag(self, tag, attrs):\n        CAP.append(attrs)\n"
                          "    def __setattr__(self, k, v):\n        CAP.append(v)\n"
                          "        object.__setattr__(self, k, v)\n"
                          "HP().feed('<a x=1>')\n"
                          "class RR(reprlib.Repr):\n    def repr1(self, x, level):\n"
                          "        CAP.append(x)\n        return super().repr1(x, level)\n"
                          "CAP.append(RR().repr([X, {1: X}]))\n"
                          "CAP.append(reprlib.recursive_repr(Cap())(hook)(X))\n"
                          "CAP.append(fnmatch.filter([Cap()], '*'))\n"
                          "CAP.append(hmac.new(b'k', b'm', Cap()))\n"
                          "CAP.append(shlex.shlex('a b', punctuation_chars=Cap()))"),
    "typing-objects": ("plain", "any",
                       "T = typing.TypeVar('T')\nclass G(typing.Generic[T]):\n    def __init_subclass__(cls, **kw):\n"
                       "        CAP.append(cls)\nclass G2(G[int]):\n    pass\n"
                       "CAP.append(typing.get_origin(X))\nCAP.append(typing.get_args(X))\n"
                       "CAP.append(typing.get_type_hints(type('A', (), {'__annotations__': {'a': int}})))\n"
                       "NT = typing.NamedTuple('NT', [('a', int)])\nCAP.append(NT(X))\n"
                       "CAP.append(typing.cast(Cap, X))"),
}
DATA_ROUTES = {
    "np-vectorize": ("plain", "any",
                     "CAP.append(np.vectorize(hook, otypes=[object])(np.array([X, X], dtype=object)))"),
    "np-vectorize-attrgetter": ("attr", "ast",
                                "CAP.append(list(np.vectorize(operator.attrgetter(N), otypes=[object])"
                                "(np.array([X], dtype=object))))"),
    "np-frompyfunc": ("plain", "any", "CAP.append(list(np.frompyfunc(hook, 1, 1)(np.array([X, 1], dtype=object))))"),
    "np-frompyfunc-update_wrapper": ("attr", "any",
                                     "u = lambda o: functools.update_wrapper(Cap(), o, assigned=(N,), updated=())\n"
                                     "CAP.append(list(np.frompyfunc(u, 1, 1)(np.array([X], dtype=object))))"),
    "np-apply_along_axis": ("plain", "any",
                            "CAP.append(np.apply_along_axis(lambda a: (CAP.append(a), 0)[1], 0, np.ones((2, 2))))"),
    "pd-series-map-attrgetter": ("attr", "ast",
                                 "CAP.append(pd.Series([X], dtype=object).map(operator.attrgetter(N)).tolist())"),
    "pd-series-map-update_wrapper": ("attr", "any",
                                     "u = functools.partial(functools.update_wrapper, assigned=(N,), updated=())\n"
                                     "CAP.append(pd.Series([X], dtype=object).map(lambda o: u(Cap(), o)).tolist())"),
    "pd-series-apply": ("plain", "any", "CAP.append(pd.Series([X], dtype=object).apply(hook).tolist())"),
    "pd-dataframe-pipe": ("plain", "any", "CAP.append(pd.DataFrame({'a': [X]}).pipe(hook))"),
    "pd-dataframe-agg": ("plain", "any",
                         "CAP.append(pd.DataFrame({'a': [1, 2]}).agg(hook))\n"
                         "CAP.append(pd.DataFrame({'a': [1, 2]}).apply(hook, axis=1))"),
    "pd-groupby-apply": ("plain", "any",
                         "CAP.append(pd.DataFrame({'g': [1, 1], 'a': [X, X]}).groupby('g').apply(hook))"),
}
# Subjects copy.deepcopy copies (a control of deepcopy-memo).
DEEPCOPY_CONTROLS = {"DC()", "random.Random(1)", "collections.Counter('ab')", "collections.ChainMap({})",
                     "textwrap.TextWrapper()", "string.Template('$a')", "calendar.TextCalendar()"}
# A route's control name where the subject's ordinary name would not run it (a
# cached_property runs its function for a name the instance's dict lacks).
CONTROL_NAMES = {"cached_property": "tp_fresh"}
# Names the chain draws half the time: from a module to sys, to its modules ...
CHAIN_HOT = ["sys", "modules", "_module", "__dict__", "obj", "__code__", "_getframe", "__globals__",
             "__context__", "gi_frame", "__builtins__"]
CHAIN_ROUTES = ["update_wrapper", "update_wrapper-updated", "wraps", "cached_property", "deepcopy-memo", "call",
                "call"]
MODULES_FOR_HINTS = ["warnings", "typing", "functools", "logging", "json", "string", "__main__", "enum"]
ANNOTATIONS = ["'int'", "int", "Cap()", "'typing.List[int]'", "'sys'", "'warnings'"]
COPYFNS = ["copy.copy", "copy.deepcopy"]


def indent(code, n=1):
    return "\n".join("    " * n + line if line else line for line in code.split("\n"))


def route_code(rng, route, subj, name, chain, control, data):
    """The snippet (prelude included) and its tail (what follows the prelude)."""
    kind, _, body = ROUTES.get(route) or DATA_ROUTES[route]
    extra = "import numpy as np, pandas as pd" if data else ""
    prelude = PRELUDE % {"extra_imports": extra, "extra_mods": ", np, pd" if data else ""}
    mod, ann = ("'__main__'", "int") if control else (repr(rng.choice(MODULES_FOR_HINTS)), rng.choice(ANNOTATIONS))
    body = (body.replace("MOD", mod).replace("ANN", ann).replace("KK", str(rng.randint(2, 5)))
            .replace("RAISE", "json.loads('{')" if control else rng.choice(RAISERS)))
    if kind == "attr":
        fn = ("def route(X, N):\n    start = len(CAP)\n    try:\n%s\n    except Exception as e:\n"
              "        CAP.append(e)\n    return CAP[start:]\n" % indent(body, 2))
        call = "X = %s\nN = %r\nR = route(X, N)\n" % (subj["expr"], name)
        # The chain: what the first application captured, exceptions included, is the
        # next subject.
        if chain:
            # The chain's route: the same one, or one that reads any name of any object
            # when the first reads the real sys's.
            chained = route if ROUTES.get(route, ("", ""))[1] != "sys" else rng.choice(CHAIN_ROUTES)
            body2 = (ROUTES.get(chained) or DATA_ROUTES[chained])[2].replace("KK", str(rng.randint(2, 5)))
            fn += ("def route2(X, N):\n    start = len(CAP)\n    try:\n%s\n    except Exception as e:\n"
                   "        CAP.append(e)\n    return CAP[start:]\n" % indent(body2, 2))
        for depth, n2 in enumerate(chain):
            call += "R%d = []\nfor v in [c for c in R%s if c is not None]:\n    R%d += route2(v, %r)\n" % (
                depth + 1, str(depth) if depth else "", depth + 1, n2)
    elif kind == "class":
        body = body % {"args": subj["args"], "poke": subj["poke"], "copyfn": rng.choice(COPYFNS)}
        fn = ""
        call = "C = %s\nN = %r\ntry:\n%s\nexcept Exception as e:\n    CAP.append(e)\n" % (
            subj["cls"], name, indent(body))
    else:
        fn = ""
        call = "X = %s\nN = %r\ntry:\n%s\nexcept Exception as e:\n    CAP.append(e)\n" % (
            subj["expr"], name, indent(body))
    tail = subj["setup"] + fn + call + "[_oracle(), _ncap()]\n"
    return prelude + tail, tail


def draw_name(rng, pool, names, hot=()):
    if pool == "sys":
        return rng.choice(SYS_NAMES)
    if hot and rng.random() < 0.5:
        pick = [n for n in hot if pool == "any" or (pool == "fmt" and not n.startswith("_"))
                or (pool == "ast" and ast_ok(n))]
        if pick:
            return rng.choice(pick)
    if pool == "fmt":
        return rng.choice([n for n in names if not n.startswith("_")])
    if pool == "ast" and rng.random() < 0.85:
        return rng.choice([n for n in names if ast_ok(n)])
    return rng.choice(names)


def control_ok(route, pool, s):
    """Whether s, with its ordinary name, is a control for route: it holds no module,
    and the route can read its name or construct its class."""
    kind = (ROUTES.get(route) or DATA_ROUTES[route])[0]
    if s["holds"] or s["expr"] == "ERR":  # an exception: what its routes capture is one too
        return False
    if kind == "class":
        return bool(s["cls"] and s["init_attr"])
    if pool == "fmt" and s["name"].startswith("_"):
        return False
    if pool == "ast" and not ast_ok(s["name"]):
        return False
    if route == "deepcopy-memo":
        return s["expr"] in DEEPCOPY_CONTROLS
    if route in ("cached_property", "dataclass-fields", "dataclass-replace"):
        return s["pyobj"]  # a Python class the snippet may set attributes on, a __dict__
    return True


def cases(rng, n, data):
    subjects = SUBJECTS + (DATA_SUBJECTS if data else [])
    names = NAMES + (DATA_NAMES if data else [])
    routes = sorted(r for r in ROUTES if r != "call") + (sorted(DATA_ROUTES) if data else [])
    out = []
    for i in range(n):
        route = rng.choice(routes)
        kind, pool, _ = ROUTES.get(route) or DATA_ROUTES[route]
        control = rng.random() < 0.25
        if control:
            subj = rng.choice([s for s in subjects if control_ok(route, pool, s)])
            name = {"class": subj["init_attr"], "sys": rng.choice(SYS_CONTROLS)}.get(
                kind if kind == "class" else pool, CONTROL_NAMES.get(route, subj["name"]))
        else:
            pick = [s for s in subjects if s["cls"]] if kind == "class" else subjects
            subj = rng.choices(pick, [s["weight"] for s in pick])[0]
            name = draw_name(rng, pool, names, subj["hot"] + ([subj["init_attr"]] if kind == "class" else []))
        chain = []
        if kind == "attr" and not control:
            while len(chain) < 2 and rng.random() < (0.7 if pool == "sys" else 0.4):
                chain.append(draw_name(rng, pool if pool != "sys" else "any", names, CHAIN_HOT))
        out.append((i, route, subj, name, chain, control))
    return out


@pytest.fixture(scope="module")
def host():
    h = Host()
    yield h
    h.close()


def run(host, code, policy):
    r = host.call("sandbox/exec", {"lang": "python", "code": code, "policy": policy}, timeout=60)
    assert "result" in r, r
    return r["result"]


def leaks_of(res):
    out = [line[len("TP-LEAK "):] for line in res.get("stdout", "").splitlines() if line.startswith("TP-LEAK ")]
    if res["ok"] and isinstance(res["value"], list) and res["value"] and isinstance(res["value"][0], list):
        out += [x for x in res["value"][0] if x not in out]
    return out


KNOWN_ESCAPE = """
import functools, warnings
box = {}
class Cap:
    def __setattr__(self, k, v):
        box[k] = v
def grab(obj, *names):
    functools.update_wrapper(Cap(), obj, assigned=names, updated=())
    return [box.get(n) for n in names]
wm, = grab(warnings.catch_warnings(), '_module')   # the real warnings module
sysm, = grab(wm, 'sys')                            # the real sys
[repr(wm), repr(sysm)]
"""


def preset_param(p):
    return pytest.param(p, marks=needs_data) if p == "data" else p  # test_data_preset.py's skip


@pytest.mark.parametrize("policy", [preset_param(p) for p in PRESETS])
def test_known_escape_is_refused(host, policy):
    """Issue 24's example: update_wrapper reads catch_warnings()._module in functools'
    frame and hands it to the snippet's __setattr__, then reads its sys the same way."""
    res = run(host, KNOWN_ESCAPE, policy)
    assert not res["ok"] and res["error"]["kind"] == "policy_violation", json.dumps(res)[:1500]


@pytest.mark.parametrize("policy", [preset_param(p) for p in PRESETS])
def test_membrane_grammar_fuzz(host, policy):
    data = policy == "data"
    rng = random.Random("%d-%s" % (SEED, policy))
    deadline = time.monotonic() + SECONDS / len(PRESETS)
    failures, soft, ran, stats = [], [], 0, {}
    for i, route, subj, name, chain, control in cases(rng, N, data):
        if time.monotonic() > deadline:
            break
        code, tail = route_code(rng, route, subj, name, chain, control, data)
        r = host.call("sandbox/exec", {"lang": "python", "code": code, "policy": policy}, timeout=60)
        res = r.get("result")
        ran += 1
        where = "seed %d preset %s case %d: route %s, subject %s, name %r%s%s" % (
            SEED, policy, i, route, subj["expr"], name, "".join(" then %r" % n for n in chain),
            " (control)" if control else "")
        st = stats.setdefault(route, {"runs": 0, "controls": 0, "controls_ok": 0, "captured": 0})
        st["runs"] += 1
        st["controls"] += control
        if res is None:
            failures.append((where + " (no result)", route, [], r, tail))
            continue
        leaks = leaks_of(res)
        if leaks:
            failures.append((where, route, leaks, res, tail))
            continue
        if res["ok"]:
            ncap = res["value"][1] if isinstance(res["value"], list) and len(res["value"]) == 2 else 0
            st["captured"] += ncap > 0
            if control:
                if ncap > 0:
                    st["controls_ok"] += 1
                else:
                    soft.append((where + " (ran, captured nothing)", res, tail))
            continue
        e = res["error"]
        if control and e["kind"] == "policy_violation":
            failures.append((where + " (a control was refused: an over-refusal, not a leak)", route, [], res, tail))
        elif control and e["kind"] == "runtime_error":
            soft.append((where + " (%s)" % e.get("type"), res, tail))
        elif not (e["kind"] in {"policy_violation"} | LIMIT_KINDS
                  or (e["kind"] == "runtime_error" and e["type"] in ALLOWED_ERRORS)):
            failures.append((where + " (verdict %s %s)" % (e["kind"], e.get("type")), route, [], res, tail))
    assert ran >= min(N, 100), "only %d snippets ran in %.0f s" % (ran, SECONDS / len(PRESETS))
    by_route = {}
    for f in failures:
        by_route.setdefault(f[1], []).append(f)
    report = []
    for route, fs in sorted(by_route.items()):
        f = min(fs, key=lambda f: len(f[4]))
        report.append("== %s: %d failing snippets; e.g. %s\n   leaks: %s\n   result: %s\n"
                      "   snippet (after the prelude, PRELUDE in this file):\n%s" % (
                          route, len(fs), f[0], f[2][:6],
                          json.dumps(f[3])[:600] if not f[2] else "ok=%s" % f[3].get("ok"), indent(f[4], 2)))
    assert not failures, "%d of %d snippets failed (%s):\n%s" % (len(failures), ran, policy, "\n".join(report))
    # The controls prove the routes run: most of each route's controls, and nearly
    # all in all, succeed with something captured.
    controlled = [r for r, s in stats.items() if s["controls"]]
    bad = [r for r in controlled if stats[r]["controls_ok"] < 0.5 * stats[r]["controls"]]
    controls = sum(s["controls"] for s in stats.values())
    controls_ok = sum(s["controls_ok"] for s in stats.values())
    assert not bad and controls_ok >= 0.85 * controls and controls >= 0.1 * ran, (
        "%d of %d controls captured; routes whose controls did not: %s\n%s" % (
            controls_ok, controls, {r: stats[r] for r in bad},
            "\n".join("%s\n%s\n%s" % (f[0], json.dumps(f[1])[:400], indent(f[2], 2)) for f in soft[:5])))
