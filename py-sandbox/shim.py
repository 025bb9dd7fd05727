# shim.py -- the Python side of the tidepool language layer, run once in the
# zygote (filename "<tidepool>"). Source of pyshim.c: regenerate with
# `/usr/bin/python3 py-sandbox/gen_shim.py` after an edit. What a snippet can
# reach is decided here: the module allowlist, the facades, the AST check, the
# guarded builtins. None of this is the security boundary (docs/python.md).
# The C layer injects before running this: _write, _refuse, _settype, _gate,
# _print, _eval_builtins, _guard, PolicyViolation, LimitExceeded.
import ast
import builtins
import sys
import types
import _string

# -- what a snippet may import, and why each omission ----------------------------
ALLOWED = ('math', 'json', 're', 'random', 'datetime', 'collections', 'itertools',
           'functools', 'statistics', 'decimal', 'fractions', 'string', 'textwrap',
           'heapq', 'bisect', 'dataclasses', 'typing', 'enum', 'operator', 'copy',
           'pprint', 'collections.abc')
# Loaded now because the allowed modules import them lazily: a worker cannot
# open a file, and a real import there trips the audit hook.
PRELOAD = ('_strptime', 'encodings.ascii', 'encodings.latin_1', 'encodings.utf_16',
           'encodings.utf_32', 'encodings.unicode_escape', 'encodings.raw_unicode_escape',
           'encodings.utf_8_sig', 'unicodedata')

# -- introspection: names a snippet may not read -----------------------------------
# Dunder attributes are refused unless listed here: the object protocol and the
# names ordinary classes use. Everything else (__globals__, __subclasses__,
# __dict__, __self__, __code__, __builtins__, __mro__, __base__, __traceback__,
# __getattribute__, __reduce__, __loader__, __spec__ ...) leads back into the
# interpreter's object graph.
DUNDER_OK = frozenset('''
__init__ __new__ __del__ __repr__ __str__ __bytes__ __format__ __hash__ __bool__
__lt__ __le__ __eq__ __ne__ __gt__ __ge__ __len__ __length_hint__ __iter__
__next__ __reversed__ __contains__ __getitem__ __setitem__ __delitem__
__missing__ __call__ __enter__ __exit__ __setattr__ __delattr__
__add__ __sub__ __mul__ __matmul__ __truediv__ __floordiv__ __mod__ __divmod__
__pow__ __lshift__ __rshift__ __and__ __xor__ __or__
__radd__ __rsub__ __rmul__ __rmatmul__ __rtruediv__ __rfloordiv__ __rmod__
__rdivmod__ __rpow__ __rlshift__ __rrshift__ __rand__ __rxor__ __ror__
__iadd__ __isub__ __imul__ __imatmul__ __itruediv__ __ifloordiv__ __imod__
__ipow__ __ilshift__ __irshift__ __iand__ __ixor__ __ior__
__neg__ __pos__ __abs__ __invert__ __complex__ __int__ __float__ __index__
__round__ __trunc__ __floor__ __ceil__
__name__ __qualname__ __doc__ __module__ __class__ __slots__ __post_init__
__annotations__ __members__ __match_args__ __dataclass_fields__ __set_name__
__init_subclass__ __class_getitem__ __cause__ __context__ __version__ __all__
'''.split())
# Plain names that are frames, code and tracebacks: the routes to f_globals.
ATTR_DENY = frozenset('''
f_back f_globals f_locals f_builtins f_code f_trace gi_frame gi_code gi_yieldfrom
cr_frame cr_code cr_await cr_origin ag_frame ag_code ag_await tb_frame tb_next
co_code co_consts co_names
'''.split())
NAME_DUNDER_OK = frozenset(('__name__', '__doc__', '__class__', '__debug__', '__annotations__'))
# What the attribute guard (pyattr.c) refuses in C, on every path: from snippet
# source, from "<string>" code the stdlib compiled, a match pattern, super(),
# getattr, attrgetter, a format field, a descriptor. Only names that lead out of
# the snippet's own objects: down the class graph (__subclasses__), into a
# function (its globals, builtins, cells, code, defaults), a namespace (__dict__:
# a type's descriptors, a module's globals), a C function's module (__self__),
# the import system (__loader__, __spec__), an object's raw state (__reduce__,
# __reduce_ex__, __getstate__), frames and code (ATTR_DENY, __traceback__). The
# AST check refuses more (every dunder not in DUNDER_OK), for early readable
# errors; the guard cannot: CPython and the stdlib read protocol names such as
# __parameters__, __mro_entries__, __set_name__ or __bases__ on the snippet's
# behalf, and __mro__/__bases__ only give what type.mro() gives.
GUARD_DENY = frozenset('''
__subclasses__ __globals__ __builtins__ __closure__ __code__ __defaults__
__kwdefaults__ __dict__ __self__ __loader__ __spec__ __reduce__ __reduce_ex__
__getstate__ __traceback__
'''.split()) | ATTR_DENY


def _attr_bad(name):
    if name.startswith('__') and name.endswith('__'):
        return name not in DUNDER_OK
    return name in ATTR_DENY


def _field_bad(field):
    """The first attribute a str.format field reads that we refuse, or None."""
    try:
        first, rest = _string.formatter_field_name_split(field)
        for is_attr, key in rest:
            if is_attr and (key.startswith('_') or key in ATTR_DENY):
                return key
    except (ValueError, TypeError):
        pass
    return None


def _format_bad(s, depth=0):
    try:
        for _lit, field, spec, _conv in _string.formatter_parser(s):
            if field:
                bad = _field_bad(field)
                if bad:
                    return bad
            if spec and '{' in spec and depth < 2:
                bad = _format_bad(spec, depth + 1)
                if bad:
                    return bad
    except (ValueError, TypeError):
        pass
    return None


def _check(tree):
    for node in ast.walk(tree):
        line = getattr(node, 'lineno', -1)
        if isinstance(node, ast.Attribute):
            if _attr_bad(node.attr):
                _refuse("attribute '%s' is not allowed" % node.attr, line)
        elif isinstance(node, ast.Name):
            # DUNDER_OK: class bodies set __slots__, __match_args__, __hash__ ...
            if node.id.startswith('__') and node.id.endswith('__') \
                    and node.id not in NAME_DUNDER_OK and node.id not in DUNDER_OK:
                _refuse("name '%s' is not allowed" % node.id, line)
        elif isinstance(node, ast.alias):
            if node.name.startswith('__') or (node.asname or '').startswith('__'):
                _refuse("import name '%s' is not allowed" % node.name, line)
        elif isinstance(node, ast.MatchClass):
            for a in node.kwd_attrs:
                if _attr_bad(a):
                    _refuse("attribute '%s' is not allowed" % a, line)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            bad = _format_bad(node.value) if '{' in node.value else None
            if bad:
                _refuse("format string reads attribute '%s', which is not allowed" % bad, line)


_compile = compile


def prepare(src):
    """Parse, check and compile a snippet: (body, last expression or None)."""
    tree = ast.parse(src, '<snippet>', 'exec')
    _check(tree)
    expr = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body.pop()
        expr = _compile(ast.Expression(last.value), '<snippet>', 'eval')
    return _compile(tree, '<snippet>', 'exec'), expr


# -- guarded builtins ----------------------------------------------------------------
_getattr, _hasattr, _setattr, _delattr = getattr, hasattr, setattr, delattr


def _plain(name):
    if isinstance(name, str) and type(name) is not str:
        name = str.__str__(name)  # a str subclass cannot fake its value
    if type(name) is str and _attr_bad(name):
        _refuse("attribute '%s' is not allowed" % name)
    return name


def getattr(obj, name, *default):
    return _getattr(obj, _plain(name), *default)


def hasattr(obj, name):
    return _hasattr(obj, _plain(name))


def setattr(obj, name, value):
    return _setattr(obj, _plain(name), value)


def delattr(obj, name):
    return _delattr(obj, _plain(name))


FACADES = {}


def __import__(name, globals=None, locals=None, fromlist=(), level=0):
    if level != 0:
        _refuse('relative imports are not allowed')
    if type(name) is not str:
        raise TypeError('module name must be str')
    f = FACADES.get(name)
    if f is None and type(fromlist) is list and name in sys.modules:
        # PyImport_Import() from C (datetime's strptime) passes a list; the
        # import statement passes None or a tuple, and the name __import__ is
        # refused by the AST check, so a snippet cannot take this path.
        return sys.modules[name]
    if f is None:
        _refuse("import of module '%s' is not allowed (allowed: %s)"
                % (name, ', '.join(ALLOWED)))
    if fromlist or '.' not in name:
        return f
    return FACADES[name.partition('.')[0]]


# -- facades -------------------------------------------------------------------------
def _facade(name, real):
    """A new module with only the public, non-module names of real."""
    f = types.ModuleType(name, real.__doc__)
    for k, v in list(vars(real).items()):
        if k.startswith('_') or isinstance(v, types.ModuleType):
            continue
        f.__dict__[k] = v
    return f


def _patch_string(f, real):
    # In the real class, so super(string.Formatter, x).get_field and subclasses of
    # string.Formatter meet it too; the original stays in this closure only.
    orig = real.Formatter.get_field

    def get_field(self, field_name, args, kwargs):
        bad = _field_bad(str.__str__(field_name)) if isinstance(field_name, str) else None
        if bad:
            _refuse("format string reads attribute '%s', which is not allowed" % bad)
        return orig(self, field_name, args, kwargs)
    get_field.__qualname__ = 'Formatter.get_field'
    get_field.__doc__ = orig.__doc__
    real.Formatter.get_field = get_field

    class Formatter(real.Formatter):  # as before: the snippet's subclasses sit below it
        pass
    Formatter.__module__ = 'string'
    f.Formatter = Formatter


def _patch_operator(f, real):
    def attrgetter(*names):
        for n in names:
            for part in str(n).split('.'):
                _plain(part)
        return real.attrgetter(*names)

    def methodcaller(name, *args, **kwargs):
        return real.methodcaller(_plain(name), *args, **kwargs)
    f.attrgetter, f.methodcaller = attrgetter, methodcaller


def _guard_typing(real):
    # typing hands the namespace it resolves from a class's __module__ (a real
    # module's, when the snippet's class claims one) to t._evaluate() for every t
    # that passes isinstance(t, ForwardRef): a subclass (class F(ForwardRef,
    # _root=True)), an object whose __class__ says ForwardRef, or a patched
    # ForwardRef._evaluate would receive it. Only typing's own may.
    orig, fr = real._eval_type, real.ForwardRef
    evaluate = fr._evaluate

    def _eval_type(t, globalns, localns, recursive_guard=frozenset()):
        if isinstance(t, fr) and (type(t) is not fr or fr._evaluate is not evaluate):
            _refuse('typing: only typing.ForwardRef itself may evaluate a forward reference')
        return orig(t, globalns, localns, recursive_guard)
    real._eval_type = _eval_type


def _patch_classes(f, real, name):
    # Classes these make get the calling frame's module as __module__, which is
    # the stdlib's here (no frame globals): make them the snippet's, so code that
    # resolves cls.__module__ (dataclasses' exec, get_type_hints) uses its namespace.
    if name == 'dataclasses':
        def make_dataclass(cls_name, fields, *, namespace=None, **kwargs):
            ns = dict(namespace or {})
            ns.setdefault('__module__', '__main__')
            return real.make_dataclass(cls_name, fields, namespace=ns, **kwargs)
        make_dataclass.__doc__ = real.make_dataclass.__doc__
        f.make_dataclass = make_dataclass
    else:
        def namedtuple(typename, field_names, *, rename=False, defaults=None, module=None):
            return real.namedtuple(typename, field_names, rename=rename, defaults=defaults,
                                   module='__main__' if module is None else module)
        namedtuple.__doc__ = real.namedtuple.__doc__
        f.namedtuple = namedtuple


def _build_facades():
    import importlib
    for name in PRELOAD:
        importlib.import_module(name)
    for name in ALLOWED:
        real = importlib.import_module(name)
        FACADES[name] = _facade(name, real)
    FACADES['collections'].abc = FACADES['collections.abc']
    _patch_string(FACADES['string'], sys.modules['string'])
    _patch_operator(FACADES['operator'], sys.modules['operator'])
    _patch_classes(FACADES['dataclasses'], sys.modules['dataclasses'], 'dataclasses')
    _patch_classes(FACADES['collections'], sys.modules['collections'], 'collections')
    _guard_typing(sys.modules['typing'])


# -- output --------------------------------------------------------------------------
class _Stream:
    encoding = 'utf-8'
    errors = 'replace'

    def __init__(self, n):
        self._n = n

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError('write() argument must be str, not %s' % type(s).__name__)
        _write(self._n, s)
        return len(s)

    def writelines(self, lines):
        for s in lines:
            self.write(s)

    def flush(self):
        pass

    def isatty(self):
        return False


# -- the builtins a snippet sees, and the real module -----------------------------------
# Omitted from the snippet's builtins, and why:
#   open: files; exec eval compile: code that skips the AST check;
#   input breakpoint help exit quit: the terminal and the process;
#   globals locals vars: dicts of the object graph; memoryview: buffer tricks
#   (the bytearray use-after-free family); __loader__ __spec__: BuiltinImporter.
OMIT = ('open', 'exec', 'eval', 'compile', 'input', 'breakpoint', 'help', 'exit', 'quit',
        'globals', 'locals', 'vars', 'memoryview', 'copyright', 'credits', 'license',
        '__loader__', '__spec__', '__import__')
# In the real builtins module (which stdlib code uses) these are removed ...
REAL_REMOVE = ('open', 'input', 'breakpoint', 'help', 'exit', 'quit', 'copyright',
               'credits', 'license')
# ... and these only answer callers whose code is the stdlib (a C gate): namedtuple
# needs eval, dataclasses exec, typing compile, and stdlib imports resolve lazily.
REAL_GATE = ('exec', 'eval', 'compile', '__import__', 'globals', 'locals', 'vars', 'memoryview')


def _snippet_builtins():
    b = dict(vars(builtins))
    for k in OMIT:
        b.pop(k, None)
    b.update(print=_print, getattr=getattr, hasattr=hasattr, setattr=setattr,
             delattr=delattr, __import__=__import__, __name__='builtins')
    return b


def _lock_types():
    # Descriptors removed from the core types, in the zygote after every import,
    # so the routes exist for no code at all in a worker (defence in depth).
    frame = sys._getframe()
    def gen():
        yield
    async def co():
        pass
    async def agen():
        yield
    c = co()
    try:
        raise ValueError
    except ValueError as e:
        tb = e.__traceback__
    for t, names in ((types.FunctionType, ('__globals__', '__builtins__', '__closure__')),
                     (type(frame), ('f_back', 'f_globals', 'f_builtins', 'f_locals')),
                     (type(gen()), ('gi_frame',)), (type(c), ('cr_frame',)),
                     (type(agen()), ('ag_frame',)), (type(tb), ('tb_frame',)),
                     (types.BuiltinFunctionType, ('__self__',))):
        for n in names:
            _settype(t, n)
    c.close()
    _fmt, _fmt_map = str.format, str.format_map

    def format(self, /, *args, **kwargs):
        bad = _format_bad(str.__str__(self))
        if bad:
            _refuse("format string reads attribute '%s', which is not allowed" % bad)
        return _fmt(self, *args, **kwargs)

    def format_map(self, mapping, /):
        bad = _format_bad(str.__str__(self))
        if bad:
            _refuse("format string reads attribute '%s', which is not allowed" % bad)
        return _fmt_map(self, mapping)
    _settype(str, 'format', format)
    _settype(str, 'format_map', format_map)
    for k in REAL_REMOVE:
        builtins.__dict__.pop(k, None)
    # The real builtins' __loader__ is BuiltinImporter (load_module('sys')).
    builtins.__loader__ = builtins.__spec__ = None
    for k in REAL_GATE:
        builtins.__dict__[k] = _gate(builtins.__dict__[k], k)


def init():
    global _seed
    _build_facades()
    _seed = sys.modules['random'].seed
    sys.stdout, sys.stderr = _Stream(0), _Stream(1)
    sys.__stdout__, sys.__stderr__, sys.stdin = sys.stdout, sys.stderr, None
    b = _snippet_builtins()
    _lock_types()
    _eval_builtins(b)
    assert all(_attr_bad(n) for n in GUARD_DENY)  # the AST check refuses them first
    _guard(GUARD_DENY)  # last: from here on a denied name is refused in C
    return b


_seed = None


def reseed(n):
    _seed(n)
