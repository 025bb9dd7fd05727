# shim.py -- the Python side of the tidepool language layer, run once in the
# zygote (filename "<tidepool>"). Source of pyshim.c: regenerate with
# `/usr/bin/python3 py-sandbox/gen_shim.py` after an edit. What a snippet can
# reach is decided here: the module allowlist, the facades, the AST check, the
# guarded builtins. None of this is the security boundary (docs/python.md).
# The C layer injects before running this: _write, _refuse, _settype, _gate,
# _print, _eval_builtins, _guard, _spelled, _membrane, _sgetattr, _ssetattr, _within, _workspace, _fileop, _errno_call, _errno_check,
# PolicyViolation, LimitExceeded. init() gets the zygote's policy.
import ast
import builtins
import sys
import types
import _string

# -- what a snippet may import, and why each omission ----------------------------
# The policy's modules (common/policy_catalog.c lists what a policy may name),
# set by init(). A module outside them is refused with the reason below.
ALLOWED = ()
POLICY = 'standard'  # the policy's name, for messages
KERNEL_ONLY = False  # the policy has no language layer: nothing here applies
# Loaded now because the allowed modules import them lazily: a worker cannot
# open a file, and a real import there trips the audit hook.
PRELOAD = ('_strptime', 'encodings.ascii', 'encodings.latin_1', 'encodings.utf_16',
           'encodings.utf_32', 'encodings.unicode_escape', 'encodings.raw_unicode_escape',
           'encodings.utf_8_sig', 'encodings.utf_16_le', 'encodings.utf_16_be',
           'encodings.utf_32_le', 'encodings.utf_32_be', 'encodings.cp1252', 'unicodedata')
# Public names left out of a facade: main and test read sys.argv or stdin and
# import lazily (argparse, getopt); calendar's locale classes call setlocale(),
# which reads locale files named by the snippet (a path is a locale name to glibc).
# contextlib.chdir changes the process's directory; logging's FileHandler opens
# files and currentframe() is sys._getframe; uuid1 and getnode read the MAC
# address (a subprocess or the network interfaces) and identify the host.
# reprlib's get_ident is _thread's: the thread's id is its pthread_t, an address;
# sched's namedtuple is the real one (collections' facade has the snippet's).
FACADE_OMIT = {'base64': ('main', 'test'),
               'calendar': ('main', 'different_locale', 'LocaleTextCalendar', 'LocaleHTMLCalendar'),
               'contextlib': ('chdir',),
               'logging': ('FileHandler', 'currentframe'),
               'uuid': ('uuid1', 'getnode', 'os', 'sys', 'platform'),
               'reprlib': ('get_ident',),
               'sched': ('namedtuple',)}
# Why a module is never offered, by its top-level name: every top-level public
# module of sys.stdlib_module_names that standard does not offer has one, and
# docs/python.md ("The standard library, module by module") gives each the same
# reason (tests/proto/test_python_stdlib.py holds them together).
_MODULE_WHY = {}
for _why, _names in (
        ('no processes or files', 'os posix nt posixpath ntpath genericpath subprocess '
         '_posixsubprocess shutil pathlib _io tempfile glob pty fcntl mmap fileinput '
         'filecmp zipfile tarfile gzip bz2 lzma sqlite3 dbm shelve pickle _pickle '
         'linecache tokenize runpy pkgutil zipimport configparser gettext locale '
         'mimetypes netrc mailcap platform pwd grp spwd syslog pipes zipapp venv ensurepip '
         'compileall py_compile tabnanny pyclbr modulefinder imghdr sndhdr uu wave aifc '
         'sunau ossaudiodev xml codecs argparse optparse getopt pydoc lib2to3 distutils '
         'antigravity'),
        ('no network', 'socket _socket ssl _ssl select selectors asyncio urllib http '
         'ftplib smtplib poplib imaplib telnetlib socketserver xmlrpc email mailbox '
         'webbrowser asynchat asyncore smtpd nntplib nis wsgiref cgi'),
        ('no native code', 'ctypes _ctypes cffi'),
        ('no raw buffers', 'array'),
        ('no introspection of the interpreter', 'sys builtins importlib gc inspect types '
         'code codeop dis marshal ast sysconfig site _imp _thread _weakref '
         'weakref atexit faulthandler tracemalloc _tracemalloc imp opcode symtable pdb bdb '
         'trace profile cProfile pstats cgitb unittest'),
        ('no dynamic code', 'doctest timeit'),
        ('no threads, processes or signals', 'threading multiprocessing concurrent '
         'signal _signal resource'),
        ('no terminal', 'curses readline rlcompleter tty termios getpass cmd'),
        ('no display', 'tkinter turtle turtledemo idlelib'),
        ('Windows only', 'msvcrt winreg winsound msilib nturl2path'),
        ('not needed', 'this token stringprep encodings sre_compile sre_constants sre_parse '
         'pickletools copyreg plistlib xdrlib quopri chunk audioop crypt contextvars pyexpat '
         'pydoc_data')):
    for _n in _names.split():
        _MODULE_WHY[_n] = _why
# Builtins a policy never offers (open with a file grant is a checked shim),
# and what to say when a snippet names one.
_BUILTIN_WHY = {}
for _why, _names in (('no files', 'open'),
                     ('no dynamic code', 'eval exec compile'),
                     ('no introspection of the interpreter', 'globals locals vars'),
                     ('no terminal', 'input'),
                     ('no interactive interpreter',
                      'help breakpoint copyright credits license'),
                     ('no raw buffers', 'memoryview')):
    for _n in _names.split():
        _BUILTIN_WHY[_n] = _why
CATALOG_BUILTINS = frozenset()  # set by init(): the builtins a policy may leave out
REFUSED_BUILTINS = {}  # name -> the refusal message, set by init()


def _import_refused(name):
    why = _MODULE_WHY.get(name.partition('.')[0]) if name != 'urllib.parse' else None
    return ("import of module '%s' is not allowed in the sandbox (policy %s%s); allowed: %s"
            % (name, POLICY, ': ' + why if why else '', ', '.join(ALLOWED) or 'none'))


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
# Plain names that are frames, code and tracebacks: the routes to f_globals; and
# Cython's spellings of a function's __globals__, __code__ ... (pandas' compiled
# functions answer func_globals with their module's real namespace).
ATTR_DENY = frozenset('''
f_back f_globals f_locals f_builtins f_code f_trace gi_frame gi_code gi_yieldfrom
cr_frame cr_code cr_await cr_origin ag_frame ag_code ag_await tb_frame tb_next
co_code co_consts co_names func_globals func_code func_closure func_defaults func_dict
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


# obj.__dict__ may be read (not assigned or deleted): the attribute guard (C,
# pyattr.c, tp_py_own_dict) answers it with the live dict of an instance of a
# class the snippet made, by vars()'s rule, and refuses it on everything else.
# Its writes stay refused here (the AST check, setattr, delattr): the dict's
# own methods (update, clear) change it.
READ_OK = frozenset(('__dict__',))


def _read_bad(name):
    return name not in READ_OK and _attr_bad(name)


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


def _format_reads_attr(s, depth=0, numbering=None):
    """Does a field of the format string s (or of a nested spec) read an attribute?
    False for mixed field numbering, which string.Formatter misses when the manual
    field reads on ('{}{0.x}'): str's own format raises it, after the fields before
    it (their errors first, as ever; what they read it hands nobody)."""
    numbering = [None] if numbering is None else numbering
    reads = False
    try:
        for _lit, field, spec, _conv in _string.formatter_parser(s):
            if field is not None:
                first, rest = _string.formatter_field_name_split(field)
                kind = 'auto' if first == '' else 'manual' if type(first) is int else None
                if kind and numbering[0] and kind != numbering[0]:
                    raise ValueError('cannot switch')
                numbering[0] = numbering[0] or kind
                reads = reads or any(is_attr for is_attr, _k in rest)
            if spec and '{' in spec and depth < 2:
                reads = _format_reads_attr(spec, depth + 1, numbering) or reads
    except TypeError:
        return True  # str.format's own error, from string.Formatter's
    except ValueError as e:
        return not str(e).startswith('cannot switch')
    return reads


def _check(tree):
    for node in ast.walk(tree):
        line = getattr(node, 'lineno', -1)
        if isinstance(node, ast.Attribute):
            if (_read_bad if isinstance(node.ctx, ast.Load) else _attr_bad)(node.attr):
                _refuse("attribute '%s' is not allowed" % node.attr, line,
                        'python.attribute:' + node.attr)
        elif isinstance(node, ast.Name):
            # DUNDER_OK: class bodies set __slots__, __match_args__, __hash__ ...
            if node.id.startswith('__') and node.id.endswith('__') \
                    and node.id not in NAME_DUNDER_OK and node.id not in DUNDER_OK:
                _refuse("name '%s' is not allowed" % node.id, line, 'python.name:' + node.id)
        elif isinstance(node, ast.alias):
            if node.name.startswith('__') or (node.asname or '').startswith('__'):
                _refuse("import name '%s' is not allowed" % node.name, line,
                        'python.name:' + node.name)
        elif isinstance(node, ast.MatchClass):
            for a in node.kwd_attrs:
                if _attr_bad(a):
                    _refuse("attribute '%s' is not allowed" % a, line, 'python.attribute:' + a)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            bad = _format_bad(node.value) if '{' in node.value else None
            if bad:
                _refuse("format string reads attribute '%s', which is not allowed" % bad, line,
                        'python.attribute:' + bad)


_compile = compile


def prepare(src):
    """Parse, check and compile a snippet: (body, last expression or None)."""
    tree = ast.parse(src, '<snippet>', 'exec')
    if not KERNEL_ONLY:
        _check(tree)
    expr = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body.pop()
        expr = _compile(ast.Expression(last.value), '<snippet>', 'eval')
    return _compile(tree, '<snippet>', 'exec'), expr


# -- guarded builtins ----------------------------------------------------------------
_getattr, _hasattr, _setattr, _delattr = getattr, hasattr, setattr, delattr


def _plain(name, bad=_attr_bad):
    if isinstance(name, str) and type(name) is not str:
        name = str.__str__(name)  # a str subclass cannot fake its value
    if type(name) is str and bad(name):
        _refuse("attribute '%s' is not allowed" % name, -1, 'python.attribute:' + name)
    return name


# _sgetattr/_ssetattr (pyattr.c) read and write for the snippet: a real module's
# attribute, or a real module as the value, is refused as in the snippet's own code.
_NOATTR = object()


def getattr(obj, name, *default):
    return _sgetattr(obj, _plain(name, _read_bad), *default)


def hasattr(obj, name):
    return _sgetattr(obj, _plain(name, _read_bad), _NOATTR) is not _NOATTR


def setattr(obj, name, value):
    _ssetattr(obj, _plain(name), value)


def delattr(obj, name):
    _ssetattr(obj, _plain(name))


FACADES = {}


def __import__(name, globals=None, locals=None, fromlist=(), level=0):
    if level != 0:
        _refuse('relative imports are not allowed', -1, 'python.modules')
    if type(name) is not str:
        raise TypeError('module name must be str')
    f = FACADES.get(name)
    if f is None and type(fromlist) is list and name in sys.modules:
        # PyImport_Import() from C (datetime's strptime) passes a list; the
        # import statement passes None or a tuple, and the name __import__ is
        # refused by the AST check, so a snippet cannot take this path.
        return sys.modules[name]
    if f is None:
        _refuse(_import_refused(name), -1, 'python.modules:' + name)
    if fromlist or '.' not in name:
        return f
    return FACADES[name.partition('.')[0]]


# -- facades -------------------------------------------------------------------------
def _facade(name, real):
    """A new module with only the public, non-module names of real."""
    f = types.ModuleType(name, real.__doc__)
    omit = FACADE_OMIT.get(name, ())
    for k, v in list(vars(real).items()):
        if k.startswith('_') or isinstance(v, types.ModuleType) or k in omit:
            continue
        f.__dict__[k] = v
    return f


_field_split = _string.formatter_field_name_split


def _patch_string(f, real):
    # In the real class, so super(string.Formatter, x).get_field and subclasses of
    # string.Formatter meet it too; the original stays in this closure only.
    # string.py's own body, here: the reads are the snippet's (_sgetattr: a real
    # module's attributes are not its to read), not string.py's.
    orig = real.Formatter.get_field

    def get_field(self, field_name, args, kwargs):
        bad = _field_bad(str.__str__(field_name)) if isinstance(field_name, str) else None
        if bad:
            _refuse("format string reads attribute '%s', which is not allowed" % bad, -1,
                    'python.attribute:' + bad)
        first, rest = _field_split(field_name)
        obj = self.get_value(first, args, kwargs)
        for is_attr, i in rest:
            obj = _sgetattr(obj, i) if is_attr else obj[i]
        return obj, first
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
                _plain(part, _read_bad)
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
            _refuse('typing: only typing.ForwardRef itself may evaluate a forward reference',
                    -1, 'python.function:typing._eval_type')
        return orig(t, globalns, localns, recursive_guard)
    real._eval_type = _eval_type


def _guard_enum(real):
    # EnumType._convert_ takes a module's name as data and reads and writes that
    # module's namespace (sys.modules[module].__dict__); global_enum writes the
    # members into the namespace cls.__module__ names. Every Enum subclass inherits
    # _convert_, so it is replaced in the real class; global_enum keeps to the
    # snippet's own module.
    def _convert_(cls, *args, **kwargs):
        _refuse("enum's _convert_ is not available in the sandbox (policy %s: it reads and "
                "writes a module's namespace)" % POLICY, -1, 'python.function:enum._convert_')
    real.EnumType._convert_ = classmethod(_convert_)
    orig = real.global_enum

    def global_enum(cls, update_str=False):
        if type(getattr(cls, '__module__', None)) is not str or cls.__module__ != '__main__':
            _refuse("enum.global_enum is not available in the sandbox for a class of module "
                    "%r (policy %s: only the snippet's own module's)" % (cls.__module__, POLICY),
                    -1, 'python.function:enum.global_enum')
        return orig(cls, update_str)
    global_enum.__doc__ = orig.__doc__
    real.global_enum = global_enum
    if 'enum' in FACADES:
        FACADES['enum'].global_enum = global_enum


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


def _sys_facade(real):
    """sys for a snippet: the captured streams (print(..., file=sys.stderr) fills
    the result's stderr) and facts about the interpreter; nothing that reaches
    its state (modules, path, frames, hooks, limits, flags)."""
    f = types.ModuleType('sys', 'The standard streams and facts about the interpreter.')
    f.stdout, f.stderr = _Stream(0), _Stream(1)
    f.__stdout__, f.__stderr__, f.stdin = f.stdout, f.stderr, None
    for k in ('version', 'version_info', 'hexversion', 'maxsize', 'maxunicode', 'byteorder',
              'platform', 'float_info', 'int_info', 'hash_info', 'float_repr_style'):
        setattr(f, k, getattr(real, k))
    f.argv, f.exit, f.getsizeof = [], _exit, real.getsizeof
    return f


def _exit(status=None):
    """Ends the snippet: a code of None or 0 is a success with no value, any
    other is the runtime error SystemExit (docs/python.md, "Exit")."""
    raise SystemExit(status)


def _io_facade(real):
    """io for a snippet: the in-memory streams only (no open, no file classes)."""
    f = types.ModuleType('io', 'In-memory text and byte streams; no files.')

    class BytesIO(real.BytesIO):
        __slots__ = ()

        def getbuffer(self):
            _refuse('io.BytesIO.getbuffer is not available in the sandbox (policy %s: no raw '
                    'buffers)' % POLICY, -1, 'python.function:io.BytesIO.getbuffer')
    BytesIO.__module__ = 'io'
    BytesIO.__doc__ = real.BytesIO.__doc__
    f.StringIO, f.BytesIO = real.StringIO, BytesIO
    f.SEEK_SET, f.SEEK_CUR, f.SEEK_END = 0, 1, 2
    f.UnsupportedOperation = real.UnsupportedOperation
    return f


def _time_facade(real):
    """time for a snippet: the clocks, sleep (the host's wall clock bounds the
    exec, sleeping included) and calendar time in UTC, whatever the host's zone."""
    f = types.ModuleType('time', 'Clocks, sleep and calendar time (UTC).')
    for k in ('time', 'time_ns', 'monotonic', 'monotonic_ns', 'perf_counter',
              'perf_counter_ns', 'process_time', 'process_time_ns', 'sleep', 'struct_time',
              'gmtime', 'strptime'):
        f.__dict__[k] = getattr(real, k)
    gmtime, struct_time = real.gmtime, real.struct_time
    import calendar

    def utc(t):
        if t is None:
            return gmtime()
        if isinstance(t, struct_time) and t.tm_zone == 'UTC':
            return t
        t = tuple(t)
        if len(t) != 9 and len(t) != 11:
            raise TypeError('time tuple must have 9 elements')
        return struct_time(t[:9] + ('UTC', 0))

    def localtime(secs=None):
        return gmtime(secs)

    def mktime(t):
        return float(calendar.timegm(tuple(t)[:9]))

    def strftime(format, t=None):
        return real.strftime(format, utc(t))

    def asctime(t=None):
        return real.asctime(utc(t))

    def ctime(secs=None):
        return real.asctime(gmtime(secs))
    for fn in (localtime, mktime, strftime, asctime, ctime):
        fn.__doc__ = getattr(real, fn.__name__).__doc__
        f.__dict__[fn.__name__] = fn
    f.timezone = f.altzone = f.daylight = 0
    f.tzname = ('UTC', 'UTC')
    return f


def _format_exception(exc, chain=True, _seen=None):
    """traceback's text for exc, over the snippet's own frames (C: _tb_rows)."""
    seen = set() if _seen is None else _seen
    seen.add(id(exc))
    out = []
    if chain:
        cause, context = exc.__cause__, exc.__context__
        if cause is not None and id(cause) not in seen:
            out += _format_exception(cause, True, seen)
            out.append('\nThe above exception was the direct cause of the following '
                       'exception:\n\n')
        elif (context is not None and id(context) not in seen
              and not exc.__suppress_context__):
            out += _format_exception(context, True, seen)
            out.append('\nDuring handling of the above exception, another exception '
                       'occurred:\n\n')
    rows = _tb_rows(exc)
    if rows:
        out.append('Traceback (most recent call last):\n')
        for line, fn, src in rows:
            out.append('  File "<snippet>", line %d, in %s\n' % (line, fn)
                       + ('    %s\n' % src if src else ''))
    out += _format_only(type(exc), exc)
    return out


def _format_only(t, exc):
    name = t.__qualname__
    mod = t.__module__
    if mod not in ('builtins', '__main__'):
        name = mod + '.' + name
    try:
        msg = str(exc)
    except Exception:
        msg = '<exception str() failed>'
    return ['%s: %s\n' % (name, msg) if msg else '%s\n' % name]


def _traceback_facade():
    f = types.ModuleType('traceback', 'Format and print exceptions (the snippet\'s own frames).')

    def _exc(exc, value):
        if value is not _NOARG or isinstance(exc, type):
            exc = value
        return exc

    def format_exception(exc, /, value=_NOARG, tb=_NOARG, limit=None, chain=True):
        exc = _exc(exc, value)
        return [] if exc is None else _format_exception(exc, chain)

    def format_exception_only(exc, /, value=_NOARG):
        exc = _exc(exc, value)
        return ['NoneType: None\n'] if exc is None else _format_only(type(exc), exc)

    def print_exception(exc, /, value=_NOARG, tb=_NOARG, limit=None, file=None, chain=True):
        (file or sys.stderr).write(''.join(format_exception(exc, value, chain=chain)))

    def format_exc(limit=None, chain=True):
        exc = sys.exc_info()[1]
        return 'NoneType: None\n' if exc is None else ''.join(_format_exception(exc, chain))

    def print_exc(limit=None, file=None, chain=True):
        (file or sys.stderr).write(format_exc(limit, chain))
    for fn in (format_exception, format_exception_only, print_exception, format_exc,
               print_exc):
        fn.__module__ = 'traceback'
        f.__dict__[fn.__name__] = fn
    return f


_NOARG = object()


def _logging_patch(f, real):
    # No caller lookup (findCaller walks f_back, which no frame has here): a
    # record's pathname is '(unknown file)'. Exceptions format as traceback's
    # facade does. basicConfig(filename=...) would open a file.
    real._srcfile = None

    def formatException(self, ei):
        return ''.join(_format_exception(ei[1])).rstrip('\n')
    real.Formatter.formatException = formatException

    def handleError(self, record):
        # The real one prints the exception with the real traceback module.
        if real.raiseExceptions and sys.stderr:
            try:
                sys.stderr.write('--- Logging error ---\n'
                                 + ''.join(_format_exception(sys.exc_info()[1]))
                                 + 'Message: %r\nArguments: %s\n' % (record.msg, record.args))
            except RecursionError:
                raise
            except Exception:
                pass
    handleError.__doc__ = real.Handler.handleError.__doc__
    real.Handler.handleError = handleError
    orig = real.basicConfig

    def basicConfig(**kwargs):
        if 'filename' in kwargs:
            _refuse('logging.basicConfig(filename=...) is not available in the sandbox '
                    '(policy %s: no files)' % POLICY, -1, 'filesystem.write')
        return orig(**kwargs)
    basicConfig.__doc__ = orig.__doc__
    f.basicConfig = basicConfig


def _warnings_patch(f, real):
    # _warnings' C functions look the real module up in sys.modules and read
    # its __spec__, which the guard refuses with the snippet's frame innermost:
    # warn and warn_explicit are warnings.py's logic over the same filters, and
    # the real module's are replaced too (urllib.parse calls warnings.warn).
    registry = {}

    def warn(message, category=None, stacklevel=1, source=None):
        if isinstance(message, Warning):
            category = message.__class__
        if category is None:
            category = UserWarning
        if not (isinstance(category, type) and issubclass(category, Warning)):
            raise TypeError("category must be a Warning subclass, not '%s'"
                            % type(category).__name__)
        warn_explicit(message, category, '<snippet>', max(_snippet_line(), 0), '__main__',
                      registry)

    def warn_explicit(message, category, filename, lineno, module=None, registry=None,
                      module_globals=None, source=None):
        lineno = int(lineno)
        if module is None:
            module = filename or '<unknown>'
        if registry is None:
            registry = {}
        if isinstance(message, Warning):
            text, category = str(message), message.__class__
        else:
            text, message = message, category(message)
        key = (text, category, lineno)
        if registry.get(key):
            return
        for action, msg, cat, mod, ln in real.filters:
            if (_wmatch(msg, text) and issubclass(category, cat) and _wmatch(mod, module)
                    and (ln == 0 or lineno == ln)):
                break
        else:
            action = real.defaultaction
        if action == 'ignore':
            return
        if action == 'error':
            raise message
        if action == 'once':
            registry[key] = 1
            if real.onceregistry.get((text, category)):
                return
            real.onceregistry[(text, category)] = 1
        elif action == 'module':
            registry[key] = 1
            if registry.get((text, category, 0)):
                return
            registry[(text, category, 0)] = 1
        elif action == 'default':
            registry[key] = 1
        elif action != 'always':
            raise RuntimeError('Unrecognized action (%r) in warnings.filters:\n %s'
                               % (action, (action, msg, cat, mod, ln)))
        real._showwarnmsg(real.WarningMessage(message, category, filename, lineno, None, None))
    warn.__doc__, warn_explicit.__doc__ = real.warn.__doc__, real.warn_explicit.__doc__
    warn.__module__ = warn_explicit.__module__ = 'warnings'
    f.warn, f.warn_explicit = real.warn, real.warn_explicit = warn, warn_explicit
    # A warning raised in C (numpy's "divide by zero encountered", a deprecation)
    # goes through _warnings, which shows it with _showwarnmsg: its source line
    # would be read from the file of the Python frame innermost (numpy's own
    # _methods.py: no file is readable in a worker); shown without it.
    show = real._showwarnmsg

    def _showwarnmsg(msg):
        if msg.line is None:
            msg.line = ''
        show(msg)
    real._showwarnmsg = _showwarnmsg


def _wmatch(pattern, s):
    # A filter's message or module, as _warnings matches it: None matches all, a
    # str (the built-in default::DeprecationWarning:__main__) exactly, else a regex.
    return pattern is None or (pattern == s if type(pattern) is str else bool(pattern.match(s)))


def _uuid_patch(f, real):
    # uuid4 from the sandbox's randomness: random, reseeded per worker from the
    # host's entropy (or the request's seed, so a seeded exec is reproducible).
    import random
    UUID = real.UUID

    def uuid4():
        """Generate a random UUID."""
        return UUID(int=random.getrandbits(128), version=4)
    f.uuid4 = uuid4


def _build_facades():
    import importlib
    for name in PRELOAD:
        importlib.import_module(name)
    # typing, string and operator are patched whether or not the policy offers
    # them: other allowed modules hand the snippet their objects.
    for name in ('typing', 'string', 'operator', 'dataclasses', 'collections') + ALLOWED:
        if name in DATA_MODULES:
            continue  # _data_init()
        real = importlib.import_module(name)
        if name == 'sys':
            FACADES[name] = _sys_facade(real)
        elif name == 'io':
            FACADES[name] = _io_facade(real)
        elif name == 'time':
            FACADES[name] = _time_facade(real)
        elif name == 'traceback':
            FACADES[name] = _traceback_facade()
        elif name in ALLOWED:
            FACADES[name] = _facade(name, real)
    # Compile-time only: the features are data.
    FACADES['__future__'] = _facade('__future__', importlib.import_module('__future__'))
    if 'urllib.parse' in FACADES:
        FACADES['urllib'] = types.ModuleType('urllib', 'Only urllib.parse: no network.')
        FACADES['urllib'].parse = FACADES['urllib.parse']
    if 'logging' in FACADES:
        _logging_patch(FACADES['logging'], sys.modules['logging'])
    if 'warnings' in FACADES:
        _warnings_patch(FACADES['warnings'], sys.modules['warnings'])
    if 'uuid' in FACADES:
        _uuid_patch(FACADES['uuid'], sys.modules['uuid'])
    if 'zoneinfo' in FACADES:
        _zoneinfo_patch(FACADES['zoneinfo'], sys.modules['zoneinfo'])
    for name in ALLOWED:  # collections.abc, html.parser: the parent facade's attribute
        parent, _, child = name.rpartition('.')
        if parent in FACADES and name in FACADES:
            setattr(FACADES[parent], child, FACADES[name])
    _patch_string(FACADES.get('string') or types.ModuleType('string'), sys.modules['string'])
    _patch_operator(FACADES.get('operator') or types.ModuleType('operator'),
                    sys.modules['operator'])
    if 'dataclasses' in FACADES:
        _patch_classes(FACADES['dataclasses'], sys.modules['dataclasses'], 'dataclasses')
    if 'collections' in FACADES:
        _patch_classes(FACADES['collections'], sys.modules['collections'], 'collections')
    _guard_typing(sys.modules['typing'])


# -- zoneinfo: the zone data read in the zygote (docs/python.md, "zoneinfo") --------
# The real ZoneInfo reads TZPATH/<key> (Debian's tzdata: /usr/share/zoneinfo) when a
# key is first used, which a worker cannot open. The zygote, before lockdown and only
# for a policy that offers zoneinfo, reads every TZif file under TZPATH (not posix/
# or right/, which available_timezones() skips too) into _ZONES {key: bytes}
# (identical files share one bytes object) and notes the other files' names
# (zone.tab ...: CPython's "Invalid TZif file" for them); TZPATH is then emptied, so
# the real class's lookup validates the key as CPython does (ValueError for an
# absolute or unnormalized key: no traversal) and finds no file, and its fallback,
# _common.load_tzdata (the tzdata package's loader in CPython), is replaced by one
# that hands it the preloaded bytes or raises ZoneInfoNotFoundError. No file is
# opened after the zygote.
_ZONES = {}
_NOT_TZIF = set()


def _zoneinfo_read(roots):
    seen = {}

    def walk(d, prefix):
        try:
            entries = sorted(_os.scandir(d), key=lambda e: e.name)
        except OSError:
            return
        for e in entries:
            if e.is_dir():
                if prefix or e.name not in ('posix', 'right'):
                    walk(e.path, prefix + e.name + '/')
                continue
            key = prefix + e.name
            if key in _ZONES or key in _NOT_TZIF:
                continue
            try:
                fd = _os.open(e.path, _os.O_RDONLY | _os.O_CLOEXEC)
            except OSError:
                continue
            try:
                data = _os.read(fd, 1 << 20)
            except OSError:
                continue
            finally:
                _os.close(fd)
            if data[:4] == b'TZif':
                _ZONES[key] = seen.setdefault(data, data)
            else:
                _NOT_TZIF.add(key)
    for root in roots:  # the first root holding a key wins, as find_tzfile's search
        walk(root, '')


def _zoneinfo_patch(f, real):
    import io as _io
    tzpath, common = sys.modules['zoneinfo._tzpath'], sys.modules['zoneinfo._common']
    _zoneinfo_read(tzpath.TZPATH)
    tzpath.reset_tzpath(to=())
    missing = real.ZoneInfoNotFoundError

    def load_tzdata(key):
        data = _ZONES.get(key)
        if key in _NOT_TZIF:
            raise ValueError('Invalid TZif file: magic not found')
        if data is None:
            raise missing('No time zone found with key %s%s' % (key, '' if _ZONES else
                          ' (the sandbox has no time zone data: /usr/share/zoneinfo was '
                          'empty or missing when it started; Debian package tzdata)'))
        return _io.BytesIO(data)

    def available_timezones():
        return set(_ZONES) - {'posixrules'}
    common.load_tzdata = load_tzdata  # the C ZoneInfo looks it up at each call
    f.available_timezones = available_timezones
    f.reset_tzpath = _data_refuser('zoneinfo.reset_tzpath', 'no files')
    f.TZPATH = ()


# -- data: numpy, pandas, matplotlib (policy data; docs/python.md, "Data") ----------
# Debian's python3-numpy/-pandas/-matplotlib, imported in the zygote (its
# environment already says OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
# MKL_NUM_THREADS=1 MPLBACKEND=Agg: pysandbox.c). Handed out as facades; the
# entry points that read or write files, reach the network or raw memory refuse
# with policy_violation. What is left relies on the kernel layer (no file
# outside the grants, no network), as CPython itself does.
DATA_MODULES = ('numpy', 'pandas', 'matplotlib')
# Submodules a snippet may import (and reach as attributes of the facade).
DATA_SUBMODULES = {'numpy': ('linalg', 'random', 'fft', 'lib', 'lib.stride_tricks'),
                   'pandas': (), 'matplotlib': ('pyplot',)}
_NP_REFUSED = {'no files': ('load', 'save', 'savez', 'savez_compressed', 'loadtxt', 'savetxt',
                            'genfromtxt', 'fromfile', 'fromregex', 'memmap', 'DataSource',
                            'recfromtxt', 'recfromcsv'),
               'no raw buffers': ('frombuffer',),
               'no native code': ('ctypeslib',),
               # byte_bounds: the data's first and last addresses (shares_memory and
               # may_share_memory answer what it is used for); info prints an
               # array's data address and, as lookfor, needs pydoc (not loaded)
               'no addresses': ('byte_bounds',),
               'no pydoc': ('info', 'lookfor'),
               'no source files': ('source',),
               # who reads its caller's frame, show_config its globals(),
               # show_runtime imports threadpoolctl
               'no introspection of the interpreter': ('who', 'show_config', 'show_runtime')}
# Read in the real classes: BitGenerator's ctypes/cffi hand out its state's and
# functions' addresses (and the ctypes module); _ctypes/_cffi cache them.
_NP_BITGEN_NATIVE = ('ctypes', 'cffi', '_ctypes', '_cffi')
_PD_FILE_ARGS = ('path_or_buf', 'buf', 'path', 'excel_writer', 'fname', 'filepath_or_buffer',
                 'io', 'path_or_buffer')
_PD_TO = ('to_csv', 'to_json', 'to_excel', 'to_parquet', 'to_feather', 'to_hdf', 'to_pickle',
          'to_stata', 'to_html', 'to_latex', 'to_markdown', 'to_string', 'to_xml', 'to_orc')
_PD_NEVER = {'no network or databases': ('to_sql', 'to_gbq', 'read_sql', 'read_sql_query',
                                          'read_sql_table', 'read_gbq'),
             'no clipboard': ('to_clipboard', 'read_clipboard'),
             'no files': ('ExcelWriter', 'ExcelFile', 'HDFStore', 'read_hdf', 'read_spss',
                          'read_sas', 'read_orc', 'read_feather', 'read_parquet',
                          'read_pickle', 'read_stata', 'read_excel')}
_PD_DYNAMIC = ('eval', 'query')


def _data_refuser(qual, why):
    def refused(*args, **kwargs):
        _refuse('%s is not available in the sandbox (policy %s: %s)' % (qual, POLICY, why), -1,
                'python.function:' + qual)
    refused.__name__ = refused.__qualname__ = qual.rpartition('.')[2]
    return refused


_PATHS = (str, bytes)  # and os.PathLike, added by _data_init() (no import in a worker)


def _data_is_path(v):
    return isinstance(v, _PATHS)


def _data_file_guard(qual, fn, why='no files'):
    """fn, refusing a path or URL (a str, bytes or os.PathLike) as its first or
    file argument; a file object (io.StringIO, io.BytesIO) or None goes through."""
    def guarded(*args, **kwargs):
        if (args and _data_is_path(args[0]) and not (len(args) > 1 and qual.startswith('to_')) or
                any(_data_is_path(kwargs.get(k)) for k in _PD_FILE_ARGS)):
            _refuse('%s of a file or URL is not available in the sandbox (policy %s: %s); pass '
                    'an io.StringIO or io.BytesIO' % (qual, POLICY, why), -1, 'filesystem.read')
        return fn(*args, **kwargs)
    guarded.__name__ = getattr(fn, '__name__', qual)
    guarded.__qualname__ = getattr(fn, '__qualname__', qual)
    guarded.__doc__ = getattr(fn, '__doc__', None)
    return guarded


def _data_method_guard(cls, cname, name):
    orig = getattr(cls, name)

    def guarded(self, *args, **kwargs):
        if (args and _data_is_path(args[0]) or
                any(_data_is_path(kwargs.get(k)) for k in _PD_FILE_ARGS)):
            _refuse('%s.%s to a file is not available in the sandbox (policy %s: no files); '
                    'call it without a path (it returns the text) or pass an io.StringIO or '
                    'io.BytesIO' % (cname, name, POLICY), -1, 'filesystem.write')
        return orig(self, *args, **kwargs)
    guarded.__name__, guarded.__qualname__ = name, '%s.%s' % (cname, name)
    guarded.__doc__ = orig.__doc__
    setattr(cls, name, guarded)


# -- data files in a session's workspace (docs/python.md, "Files in a session") -----
# Where the policy gives sessions workspaces (FILES), the functions below take a
# path as open() does: resolved in the exec's workspace and checked by _granted
# (an absolute path outside, '..', /proc: policy_violation; a symlink planted in
# the workspace meets Landlock: sandbox_violation). The path is taken once (a
# PathLike's __fspath__ is called once, a str subclass copied) and handed on to
# nothing: the shim opens the file itself, and the data function gets an
# io.BytesIO of its bytes (a read) or renders into one that the shim then writes
# to the file (a write), so no native code gets a descriptor, a file-like object's
# fileno() is never asked, and a refused or failed write leaves no file. URLs,
# storage_options (remote file systems), compression, memory maps and engines
# that would load native code the zygote did not are refused, in or out of a
# session. Without a workspace (a one-shot exec) a path is refused.
_PD_READ = ('read_csv', 'read_table', 'read_json', 'read_excel')
_PD_WRITE = ('to_csv', 'to_json', 'to_excel')
_PD_FILE_KEYS = ('filepath_or_buffer', 'path_or_buf', 'io', 'excel_writer')
# The engines each may name: read_csv's own parsers (pyarrow: not installed);
# Excel's openpyxl (Debian's python3-openpyxl, loaded by the zygote, its lxml
# switched off: the standard library's XML parser reads the sheets).
_PD_ENGINES = {'read_excel': ('openpyxl',), 'to_excel': ('openpyxl',)}
_PD_CSV_ENGINES = ('c', 'python')
EXCEL = False  # openpyxl loaded by the zygote: read_excel/to_excel offered
_COMPRESSED = ('.gz', '.bz2', '.zip', '.xz', '.zst', '.tar', '.tgz', '.tbz', '.tbz2', '.txz')
_MPL_FORMATS = ('png', 'svg', 'pdf')  # what the Agg canvas writes with the zygote's code
_MEMORY = ()  # the in-memory streams a function writes to as it is: set by _data_init()


def _data_str(v, qual):
    """A data function's file argument as the path it names, read once (a str, a
    pathlib.Path or an os.PathLike), or None for anything else (a stream)."""
    if isinstance(v, Path):
        return _pathstr(v, qual)
    if isinstance(v, str):
        return str.__str__(v)
    if isinstance(v, bytes):
        raise TypeError('%s: a path must be a str or a pathlib.Path, not bytes' % qual)
    if isinstance(v, _PATHS):  # os.PathLike: its __fspath__, called once
        s = _os.fspath(v)
        if not isinstance(s, str):
            raise TypeError('%s: a path must be a str or a pathlib.Path, not %s'
                            % (qual, type(s).__name__))
        return str.__str__(s)
    return None


def _data_no(qual, path, what, note, write, rule=None):
    _refuse('%s(%r) is refused: %s (policy %s: %s)' % (qual, path, what, POLICY, note), -1,
            rule or 'filesystem.%s %s' % ('write' if write else 'read', path))


def _data_grant(s, qual, write):
    """The normalized workspace path of the path s, or a policy violation."""
    if '://' in s or s[:5].lower() == 'file:':
        _data_no(qual, s, 'a URL is not a file in the workspace', 'no network', write)
    if not FILES:
        _data_no(qual, s, 'this policy gives no files', 'pass an io.StringIO or io.BytesIO',
                 write)
    if _workspace() is None and not GRANTS:
        _data_no(qual, s, "files are in a session's workspace, and this exec has none",
                 'open a session, or pass an io.StringIO or io.BytesIO', write)
    return _granted(s, write, qual)


def _data_options(qual, shown, path, kwargs, write):
    """Refuses what would reach past the workspace file or load native code."""
    def no(what, note):
        _data_no(qual, shown, what, note, write)
    if kwargs.get('storage_options') is not None:
        no('storage_options name a remote file system', 'no network')
    comp = kwargs.get('compression', 'infer')
    if type(comp) is dict:
        comp = comp.get('method')
    if not (comp is None or type(comp) is str and comp == 'infer') or \
            path is not None and path.lower().endswith(_COMPRESSED):
        no('compression is not available', 'read and write files uncompressed')
    if kwargs.get('memory_map'):
        no('memory_map maps the file into memory', 'no memory maps')
    eng = kwargs.get('engine')
    ok = _PD_ENGINES.get(qual.rpartition('.')[2], _PD_CSV_ENGINES)
    if eng is not None and not (type(eng) is str and eng in ok):
        no('engine %r is not available' % (eng,),
           'engine %s only' % ' or '.join(repr(e) for e in ok) if len(ok) == 1 else
           'the C and Python parsers only')


def _data_read(path):
    f = _fileop(_real_open, path, 'rb')
    try:
        return _BytesIO(f.read())
    finally:
        f.close()


def _data_write(path, data, mode='wb'):
    f = _fileop(_real_open, path, mode)
    try:
        f.write(data)
    finally:
        f.close()


def _data_shown(v, s):
    return s if s is not None else '<%s>' % type(v).__name__


def _pd_reader(qual, fn):
    """pandas.read_csv, read_table, read_json: a path read from the workspace."""
    def read(*args, **kwargs):
        key = None
        if not args:
            key = next((k for k in _PD_FILE_KEYS if k in kwargs), None)
            if key is None:
                return fn(*args, **kwargs)
        v = args[0] if key is None else kwargs[key]
        s = _data_str(v, qual)
        if s is not None and qual == 'pandas.read_json' and s.lstrip()[:1] in ('{', '['):
            v, s = _StringIO(s), None  # JSON text itself, which pandas 1.5 reads as such
        _data_options(qual, _data_shown(v, s), s, kwargs, False)
        if s is not None:
            v = _data_read(_data_grant(s, qual, False))
        if key is None:
            args = (v,) + args[1:]
        else:
            kwargs[key] = v
        return fn(*args, **kwargs)
    read.__name__ = read.__qualname__ = qual.rpartition('.')[2]
    read.__doc__ = getattr(fn, '__doc__', None)
    return read


def _pd_writer(cls, cname, name):
    """DataFrame/Series .to_csv, .to_json: a path written in the workspace."""
    orig, qual = getattr(cls, name), '%s.%s' % (cname, name)

    keyname = 'excel_writer' if name == 'to_excel' else 'path_or_buf'

    def write(self, *args, **kwargs):
        key = None
        if not args:
            key = keyname if keyname in kwargs else None
            if key is None:
                return orig(self, *args, **kwargs)
        v = args[0] if key is None else kwargs[key]
        s = _data_str(v, qual)
        _data_options(qual, _data_shown(v, s), s, kwargs, True)
        if s is None:
            return orig(self, *args, **kwargs)
        path = _data_grant(s, qual, True)
        mode = kwargs.get('mode', 'w')
        mode = 'ab' if type(mode) is str and 'a' in mode else 'xb' if \
            type(mode) is str and 'x' in mode else 'wb'
        buf = _BytesIO()
        if key is None:
            args = (buf,) + args[1:]
        else:
            kwargs[key] = buf
        r = orig(self, *args, **kwargs)
        _data_write(path, buf.getvalue(), mode)
        return r
    write.__name__, write.__qualname__, write.__doc__ = name, qual, orig.__doc__
    setattr(cls, name, write)


def _np_save(real):
    def save(file, arr, allow_pickle=True, fix_imports=True):
        """numpy.save without pickle: an array holding Python objects is refused."""
        np = sys.modules['numpy']
        s = _data_str(file, 'numpy.save')
        path = None
        if s is not None:
            if not s.endswith('.npy'):
                s += '.npy'  # as numpy names it
            path = _data_grant(s, 'numpy.save', True)
        a = np.asanyarray(arr)  # once: what is checked is what is saved
        if a.dtype.hasobject:
            _data_no('numpy.save', _data_shown(file, s), 'an array holding Python objects is '
                     'saved with pickle', 'no pickle', True, 'python.function:numpy.save')
        buf = _BytesIO()
        real(buf, a, allow_pickle=False, fix_imports=fix_imports)
        if path is not None:
            _data_write(path, buf.getvalue())
        else:
            file.write(buf.getvalue())
    save.__doc__ = real.__doc__
    return save


def _np_load(real):
    def load(file, mmap_mode=None, allow_pickle=False, fix_imports=True, encoding='ASCII',
             **kwargs):
        """numpy.load of an .npy file, without pickle and without memory maps."""
        s = _data_str(file, 'numpy.load')
        shown = _data_shown(file, s)
        if mmap_mode is not None:
            _data_no('numpy.load', shown, 'mmap_mode maps the file into memory',
                     'no memory maps', False)
        if allow_pickle:
            _data_no('numpy.load', shown, 'allow_pickle runs the pickles a file holds',
                     'no pickle', False, 'python.function:numpy.load')
        if s is not None:
            file = _data_read(_data_grant(s, 'numpy.load', False))
            if file.getvalue()[:2] == b'PK':
                _data_no('numpy.load', s, 'an .npz archive is not available', 'save each '
                         'array with numpy.save', False, 'python.function:numpy.load')
        elif type(file) not in _MEMORY:
            file = _BytesIO(file.read())  # no native code reads a descriptor
        return real(file, None, False, fix_imports, encoding, **kwargs)
    load.__doc__ = real.__doc__
    return load


def _mpl_savefig(qual, real, bound):
    """pyplot.savefig / Figure.savefig: a PNG, SVG or PDF written in the workspace."""
    def savefig(*args, **kwargs):
        head, rest = (args[:1], args[1:]) if bound else ((), args)
        if not rest and 'fname' in kwargs:
            rest = (kwargs.pop('fname'),)
            args = head + rest
        if not rest:
            return real(*args, **kwargs)  # matplotlib's own TypeError
        v = rest[0]
        backend = kwargs.get('backend')
        s = _data_str(v, qual)
        shown = _data_shown(v, s)
        if backend is not None and not (type(backend) is str and backend.lower() == 'agg'):
            _data_no(qual, shown, 'backend %r is not available' % (backend,),
                     'only the Agg backend', True, 'python.function:' + qual)
        if s is None and type(v) in _MEMORY:
            return real(*args, **kwargs)
        fmt = kwargs.get('format')
        if fmt is None and s is not None:
            fmt = _pp.splitext(s)[1][1:]
            if not fmt:
                fmt = sys.modules['matplotlib'].rcParams['savefig.format']
                s = s.rstrip('.') + '.' + fmt  # as matplotlib names it
        path = _data_grant(s, qual, True) if s is not None else None
        if s is not None and not (type(fmt) is str and fmt.lower() in _MPL_FORMATS):
            _data_no(qual, s, 'format %r is not available' % (fmt,), 'png, svg or pdf', True,
                     'python.function:' + qual)
        buf = _BytesIO()
        kwargs['format'] = fmt
        r = real(*head, buf, *rest[1:], **kwargs)
        data = buf.getvalue()
        if path is not None:
            _data_write(path, data)
            return r
        try:  # a file open() returned, or an object of the snippet's: through its write()
            v.write(data)
        except TypeError:
            if not (type(fmt) is str and fmt.lower() == 'svg'):
                raise
            v.write(data.decode('utf-8'))
        return r
    savefig.__name__ = 'savefig'
    savefig.__qualname__ = qual.rpartition('.')[2] if not bound else qual
    savefig.__doc__ = real.__doc__
    return savefig


def _module_getattr(qual, refused):
    def __getattr__(name):
        why = refused.get(name)
        if why:
            _refuse('%s.%s is not available in the sandbox (policy %s: %s)'
                    % (qual, name, POLICY, why), -1, 'python.function:%s.%s' % (qual, name))
        raise AttributeError("module '%s' has no attribute '%s'" % (qual, name))
    return __getattr__


def _numpy_facades():
    np = sys.modules['numpy']
    f = _facade('numpy', np)
    refused = {}
    for why, names in _NP_REFUSED.items():
        for n in names:
            f.__dict__.pop(n, None)
            refused[n] = why
    if FILES:  # an .npy file in the workspace, without pickle
        del refused['load'], refused['save']
        f.__dict__['load'], f.__dict__['save'] = _np_load(np.load), _np_save(np.save)
    f.__dict__['__getattr__'] = _module_getattr('numpy', refused)
    for n, why in refused.items():
        if n != 'ctypeslib':
            f.__dict__[n] = _data_refuser('numpy.' + n, why)
    FACADES['numpy'] = f
    for sub in ('linalg', 'random', 'fft'):
        m = _facade('numpy.' + sub, sys.modules['numpy.' + sub])
        FACADES['numpy.' + sub] = m
        setattr(f, sub, m)
    st = types.ModuleType('numpy.lib.stride_tricks', 'sliding_window_view and broadcast_to; '
                          'as_strided reaches memory outside the array.')
    real_st = sys.modules['numpy.lib.stride_tricks']
    st.sliding_window_view = real_st.sliding_window_view
    st.broadcast_to = real_st.broadcast_to
    st.as_strided = _data_refuser('numpy.lib.stride_tricks.as_strided', 'no raw memory')
    lib = types.ModuleType('numpy.lib', 'Only stride_tricks (without as_strided).')
    lib.stride_tricks = st
    FACADES['numpy.lib'], FACADES['numpy.lib.stride_tricks'] = lib, st
    f.lib = lib
    # ndarray methods that write files or reach native code (in the real type:
    # every array the snippet meets is one).
    _settype(np.ndarray, 'tofile', _data_refuser('numpy.ndarray.tofile', 'no files'))
    _settype(np.ndarray, 'dump', _data_refuser('numpy.ndarray.dump', 'no files'))
    _settype(np.ndarray, 'ctypes', property(_data_refuser('numpy.ndarray.ctypes',
                                                          'no native code')))
    bitgen = sys.modules['numpy.random.bit_generator'].BitGenerator
    for n in _NP_BITGEN_NATIVE:
        _settype(bitgen, n, property(_data_refuser('numpy.random.BitGenerator.' + n,
                                                   'no native code')))
    # The bytes of an array holding Python objects (dtype object, or a record with
    # an object field) are the objects' addresses: tobytes/tostring refuse it (its
    # buffer too: pynumpy.c). Every other array's bytes are its values.
    for cls, cname, what in ((np.ndarray, 'numpy.ndarray', 'an array'),
                             (np.generic, 'numpy.generic', 'a scalar')):
        for n in ('tobytes', 'tostring'):
            _settype(cls, n, _np_bytes_guard(cls.__dict__[n], '%s.%s' % (cname, n), what,
                                             cls.__dict__['dtype'].__get__))


def _np_bytes_guard(orig, qual, what, dtype):
    # dtype: the C getter itself (a subclass of the snippet's may define its own)
    def guarded(self, *args, **kwargs):
        if dtype(self).hasobject:
            _refuse('%s of %s holding Python objects is not available in the sandbox '
                    '(policy %s: no addresses)' % (qual, what, POLICY), -1,
                    'python.function:' + qual)
        return orig(self, *args, **kwargs)
    guarded.__name__ = guarded.__qualname__ = qual.rpartition('.')[2]
    guarded.__doc__ = orig.__doc__
    return guarded


def _pandas_facade():
    pd = sys.modules['pandas']
    f = _facade('pandas', pd)
    never = {}
    for why, names in _PD_NEVER.items():
        for n in names:
            never[n] = why
    if EXCEL:
        del never['read_excel']
    else:
        never['read_excel'] = never['to_excel'] = 'no Excel reader installed (python3-openpyxl)'
    for k in list(f.__dict__):
        if k in never:
            f.__dict__[k] = _data_refuser('pandas.' + k, never[k])
        elif FILES and k in _PD_READ:
            f.__dict__[k] = _pd_reader('pandas.' + k, f.__dict__[k])
        elif k.startswith('read_'):
            f.__dict__[k] = _data_file_guard('pandas.' + k, f.__dict__[k],
                                             'no files or network')
    for k in _PD_DYNAMIC:
        if k in f.__dict__:
            f.__dict__[k] = _data_refuser('pandas.' + k, 'no dynamic code')
    # (DataFrame.style needs jinja2, which Debian's pandas does not pull in.)
    for cls, cname in ((pd.DataFrame, 'DataFrame'), (pd.Series, 'Series')):
        for name in _PD_TO:
            if name in never:
                continue
            if FILES and name in _PD_WRITE:
                _pd_writer(cls, cname, name)
            elif hasattr(cls, name):
                _data_method_guard(cls, cname, name)
        for name, why in never.items():
            if hasattr(cls, name):
                setattr(cls, name, _data_refuser('%s.%s' % (cname, name), why))
    for name in _PD_DYNAMIC:
        setattr(pd.DataFrame, name, _data_refuser('DataFrame.' + name, 'no dynamic code'))
    FACADES['pandas'] = f


def _matplotlib_facades():
    mpl = sys.modules['matplotlib']
    plt = sys.modules['matplotlib.pyplot']
    from matplotlib.figure import Figure
    f = _facade('matplotlib', mpl)
    refuse_use = _data_refuser('matplotlib.use', 'only the Agg backend')

    def use(backend, *args, **kwargs):  # matplotlib.use('Agg'), as scripts begin: a no-op
        if not (type(backend) is str and backend.lower() == 'agg'):
            refuse_use()
    f.use = use
    p = _facade('matplotlib.pyplot', plt)
    for n in ('switch_backend', 'install_repl_displayhook', 'uninstall_repl_displayhook'):
        p.__dict__[n] = _data_refuser('matplotlib.pyplot.' + n, 'only the Agg backend')
    p.__dict__['show'] = _show  # the figures become the result's images
    for n in ('imread', 'imsave'):
        p.__dict__[n] = _data_file_guard('matplotlib.pyplot.' + n, plt.__dict__[n])
    fonts = _mpl_fonts()
    if FILES:  # a PNG, SVG or PDF in the workspace
        Figure.savefig = _mpl_savefig('Figure.savefig', Figure.savefig, True)
        p.__dict__['savefig'] = _mpl_savefig('matplotlib.pyplot.savefig', plt.savefig, False)
        _mpl_pdf_fonts(fonts)
    else:
        _data_method_guard(Figure, 'Figure', 'savefig')
        p.__dict__['savefig'] = _data_file_guard('matplotlib.pyplot.savefig', plt.savefig)
    f.pyplot = p
    FACADES['matplotlib'], FACADES['matplotlib.pyplot'] = f, p
    global _figures, _figures_reset
    _figures, _figures_reset = _figures_all, _figures_drop


# -- rich results (docs/python.md, "Rich results") ----------------------------------
# Set by _data_init: the types whose values _rich converts (pysandbox.c), and the
# figures' collector and reset (None without matplotlib).
RICH_TYPES = ()
JSON_SCALARS = ()  # (numpy.number, numpy.bool_): pyjson.c converts them by item()
_figures = _figures_reset = None
_dt = _BytesIO = _StringIO = None  # datetime, for _cell; io.BytesIO, for _draw_open
_SHOWN = []  # the PNGs of the figures plt.show() showed in this exec


def _draw_open():
    # Every open figure as a PNG, in figure-number order; then all are closed.
    # (No import here: at exec time an import statement reads the module's
    # __spec__, which the attribute guard refuses.)
    plt, gcf = sys.modules['matplotlib.pyplot'], sys.modules['matplotlib._pylab_helpers'].Gcf
    out = []
    for _, m in sorted(gcf.figs.items()):
        buf = _BytesIO()
        m.canvas.figure.savefig(buf, format='png')
        out.append(buf.getvalue())
    plt.close('all')
    return out


def _show(*args, **kwargs):
    _SHOWN.extend(_draw_open())


def _figures_all():
    out = _SHOWN + _draw_open()
    _SHOWN.clear()
    return out


def _figures_drop():
    _SHOWN.clear()
    sys.modules['matplotlib.pyplot'].close('all')


def _cell(x, pd, np):
    # A frame's cell as JSON-ready Python, as pandas' to_json writes it:
    # missing values (NaN, NaT, NA, None) null, times in ISO 8601.
    if x is None or x is pd.NaT or x is pd.NA:
        return None
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float):
        return None if x != x else x
    if isinstance(x, (bool, int, str)):
        return x
    iso = getattr(x, 'isoformat', None)
    if iso is not None and isinstance(x, (pd.Timestamp, _dt.date, _dt.time)):
        return iso()
    if isinstance(x, (pd.Timedelta, _dt.timedelta)):
        return str(x)
    return x  # anything else: the frame is shown by its text


def _rich(v, result_bytes):
    """(value, text) of a numpy or pandas value: text as a REPL prints it; value
    as JSON-ready Python (a frame's records, an array's list, a scalar's number)
    or None where it has none within result_bytes (the text is then the value)."""
    text = repr(v)
    np, pd = sys.modules['numpy'], sys.modules.get('pandas')
    if isinstance(v, np.generic):  # a date's item() may be an int of nanoseconds: text
        x = v.item() if isinstance(v, JSON_SCALARS) else None
        return (x if isinstance(x, (bool, int, float, str)) else None), text
    if isinstance(v, np.ndarray):
        if v.size * 2 > result_bytes or v.dtype.kind not in 'biuf':
            return None, text
        return v.tolist(), text
    if pd is None:
        return None, text
    if isinstance(v, pd.Series):
        v = v.to_frame()
    rows, cols = v.shape
    if rows * (cols + 1) * 4 > result_bytes:  # each cell costs at least "k":0,
        return None, text
    ix = v.index  # the default index, 0..n-1 without a name (a merge's is an Int64Index)
    if not (ix.name is None and
            (isinstance(ix, pd.RangeIndex) and ix.start == 0 and ix.step == 1 or
             not isinstance(ix, (pd.RangeIndex, pd.MultiIndex)) and ix.dtype.kind in 'iu' and
             ix.equals(pd.RangeIndex(len(ix))))):
        try:
            v = v.reset_index()  # the index is data (a group-by's keys)
        except ValueError:
            return None, text
    if isinstance(v.columns, pd.MultiIndex):
        # A column per tuple of levels, its name the levels joined by '.' (as
        # pandas.json_normalize names nested keys), empty levels left out:
        # agg({'v': ['sum', 'mean']}) gives 'v.sum', 'v.mean', and a reset
        # index ('k', '') 'k'. Names that would collide: the text alone.
        names = ['.'.join(str(p) for p in c if not (p is None or p == '')) for c in v.columns]
        if len(set(names)) != len(names):
            return None, text
        v = v.set_axis(names, axis=1)
    return [{k: _cell(x, pd, np) for k, x in r.items()} for r in v.to_dict('records')], text


def _mpl_fonts():
    # FreeType reads a font lazily through the file matplotlib opened, and a
    # worker can open no file (its fds are closed, Landlock refuses the path;
    # matplotlib's fork hook empties its font cache too): the fonts the warm-up
    # used are read here, once, and every FT2Font is made over their bytes.
    import functools
    import io
    import os
    fm, ft2font = sys.modules['matplotlib.font_manager'], sys.modules['matplotlib.ft2font']
    fonts = {}
    paths = []
    for fam in ('sans-serif', 'serif', 'monospace'):
        for weight in ('normal', 'bold'):
            for style in ('normal', 'italic'):
                paths.append(fm.findfont(fm.FontProperties(family=fam, weight=weight,
                                                           style=style)))
    # Mathtext ('$x^2$' in a label) reaches the files of its fontsets (DejaVu,
    # STIX and its size variants, Computer Modern), all in matplotlib's own font
    # directory (6.7 MB): every one is read. A formula is drawn once here too, so
    # the mathtext parser (its grammar takes ~0.1 s to build) is the zygote's.
    ttf = os.path.join(sys.modules['matplotlib'].get_data_path(), 'fonts', 'ttf')
    paths += sorted(os.path.join(ttf, n) for n in os.listdir(ttf) if n.endswith('.ttf'))
    plt = sys.modules['matplotlib.pyplot']
    fig, ax = plt.subplots()
    ax.set_title(r'$x^2 \alpha \sum_{i=1}^n \sqrt{y} \int \frac{a}{b} \pm \mathrm{m}\,\mathbf{s}^{-1}$')
    fig.savefig(io.BytesIO(), format='png')
    plt.close(fig)
    for p in paths:
        if p not in fonts:
            with io.open(p, 'rb') as fh:
                fonts[p] = fh.read()
    for p in list(fonts):  # by the name findfont gives and by its real path
        fonts.setdefault(fm._cached_realpath(p), fonts[p])
    # findfont and mathtext check that a font file exists, which a worker cannot
    # stat: their modules' os.path.isfile and exists answer from the fonts read here.
    real_os = fm.os
    fpath = types.ModuleType('os.path')
    vars(fpath).update(vars(real_os.path))
    fpath.isfile = fpath.exists = lambda p: (p if isinstance(p, str) else str(p)) in fonts
    fos = types.ModuleType('os')
    vars(fos).update(vars(real_os))
    fos.path = fpath
    fm.os = sys.modules['matplotlib._mathtext'].os = fos
    # A font not read here is refused by name below, never looked for again: a
    # file findfont cannot stat in a worker would make it rebuild its cache, which
    # starts a thread (RuntimeError: can't start new thread).
    d = fm.FontManager.findfont.__defaults__
    fm.FontManager.findfont.__defaults__ = d[:-1] + (False,)  # rebuild_if_missing

    class FT2Font(ft2font.FT2Font):
        """An FT2Font over the bytes read here whose fname is still its path (the
        pdf backend keys the fonts it embeds by it)."""
        fname = property(lambda self: self._path)
    FT2Font.__module__ = 'matplotlib.ft2font'

    def made(path, *args, **kwargs):
        f = FT2Font(io.BytesIO(fonts[path]), *args, **kwargs)
        f._path = path
        return f

    def font(path, hinting_factor, kerning):
        if fonts.get(path) is None:
            _refuse('the font %r was not loaded in the zygote (policy %s: no files)'
                    % (path, POLICY), -1, 'filesystem.read')
        return made(path, hinting_factor, _kerning_factor=kerning)

    @functools.lru_cache(64)
    def _get_font(font_filepaths, hinting_factor, *, _kerning_factor, thread_id):
        first, *rest = font_filepaths
        f = font(first, hinting_factor, _kerning_factor)
        if rest:
            f = made(first, hinting_factor, _kerning_factor=_kerning_factor,
                     _fallback_list=[font(p, hinting_factor, _kerning_factor) for p in rest])
        return f
    fm._get_font = _get_font
    return fonts


def _mpl_pdf_fonts(fonts):
    # A PDF embeds the subset of each font it uses: fontTools reads the font's
    # file, which a worker cannot open; it reads the bytes _mpl_fonts read.
    import io
    pdfps = sys.modules['matplotlib.backends._backend_pdf_ps']
    subset = sys.modules['fontTools.subset']

    def get_glyphs_subset(fontfile, characters):
        data = fonts.get(fontfile)
        if data is None:
            _refuse('the font %r was not loaded in the zygote (policy %s: no files)'
                    % (fontfile, POLICY), -1, 'filesystem.read')
        options = subset.Options(glyph_names=True, recommended_glyphs=True)
        options.drop_tables += ['FFTM', 'PfEd', 'BDF']
        if fontfile.endswith('.ttc'):
            options.font_number = 0
        with subset.load_font(io.BytesIO(data), options) as font:
            subsetter = subset.Subsetter(options=options)
            subsetter.populate(text=characters)
            subsetter.subset(font)
            fh = io.BytesIO()
            font.save(fh, reorderTables=False)
            return fh
    get_glyphs_subset.__doc__ = pdfps.get_glyphs_subset.__doc__
    pdfps.get_glyphs_subset = get_glyphs_subset


def _openpyxl_in_memory():
    # openpyxl writes each worksheet to a temporary file (tempfile, under
    # /tmp), then copies it into the archive by its name: a worker has no /tmp
    # (Landlock) and opens no file but the shim's. Here each sheet is written
    # to an io.BytesIO and copied into the archive from its bytes, and nothing
    # is left to remove.
    import io
    w = sys.modules['openpyxl.worksheet._writer']
    x = sys.modules['openpyxl.writer.excel']
    BytesIO = io.BytesIO

    def create_temporary_file(suffix=''):
        return BytesIO()
    vars(w)['create_temporary_file'] = create_temporary_file
    real_cleanup = w.WorksheetWriter.cleanup

    def cleanup(self):
        if not isinstance(self.out, BytesIO):
            real_cleanup(self)
    w.WorksheetWriter.cleanup = cleanup

    class Archive:  # ZipFile.write(name) for a sheet in memory: writestr of its bytes
        __slots__ = ('zf',)

        def __init__(self, zf):
            self.zf = zf

        def write(self, out, arcname):
            if isinstance(out, BytesIO):
                return self.zf.writestr(arcname, out.getvalue())
            return self.zf.write(out, arcname)
    real_ws = x.ExcelWriter.write_worksheet

    def write_worksheet(self, ws):
        zf = self._archive
        self._archive = Archive(zf)
        try:
            return real_ws(self, ws)
        finally:
            self._archive = zf
    x.ExcelWriter.write_worksheet = write_worksheet


def _data_warm():
    # What common snippets reach lazily (pandas and matplotlib import inside
    # functions; a worker cannot load a module): done once here.
    import io
    if 'pandas' in sys.modules:
        pd, np = sys.modules['pandas'], sys.modules['numpy']
        df = pd.DataFrame({'k': ['a', 'b'] * 50, 'v': np.arange(100.0),
                           't': pd.date_range('2020-01-01', periods=100, freq='D')})
        g = df.groupby('k').agg({'v': ['sum', 'mean', 'std']})
        repr(g), str(df), df.describe(), df.to_dict('records'), df.to_csv(), df.to_json()
        df.merge(df, on='k'), df.pivot_table(index='k', values='v', aggfunc='mean')
        pd.read_csv(io.StringIO(df.to_csv(index=False)))
        pd.read_json(io.StringIO(df.to_json()))
        df.sort_values('v').head().to_string()
        df['t'].dt.strftime('%Y-%m'), df.resample('W', on='t').sum(numeric_only=True)
        df.rolling(3).mean(numeric_only=True), df.corr(numeric_only=True), df.to_html()
        pd.concat([df, df]).drop_duplicates().fillna(0).value_counts()
        df.set_index('k').stack()
        if EXCEL:
            b = io.BytesIO()
            df.to_excel(b, index=False)
            pd.read_excel(io.BytesIO(b.getvalue()))
        if 'tabulate' in sys.modules:
            df.head().to_markdown()
    if 'matplotlib.pyplot' in sys.modules:
        plt = sys.modules['matplotlib.pyplot']
        fig, ax = plt.subplots()
        ax.plot([1, 2, 3], [3, 1, 2], label='x')
        ax.bar(['a', 'b'], [1, 2])
        ax.set_title('warm'), ax.legend()
        for fmt in ('png', 'svg', 'pdf'):
            fig.savefig(io.BytesIO(), format=fmt)
        plt.close('all')
        if 'pandas' in sys.modules:  # pandas' plotting backend loads on first use
            df.groupby('k')['v'].sum().plot(kind='bar', title='warm')
            df.plot(x='t', y='v')  # a time axis (it loads matplotlib.pylab)
            df['v'].plot.hist(), df.plot.scatter(x='v', y='v'), df.boxplot(column='v')
            plt.close('all')


def _data_stacklevels(want, warn):
    # matplotlib and pandas find a warning's stack level by walking the frames
    # (frame.f_globals, f_back: refused to them): a warning of theirs names the
    # caller of the function that warns instead.
    def warn_external(message, category=None):
        warn(message, category, 3)

    def find_stack_level():
        return 3

    if 'matplotlib' in want:
        sys.modules['matplotlib._api'].warn_external = warn_external
    if 'pandas' in want:
        real = sys.modules['pandas.util._exceptions'].find_stack_level
        for name, m in list(sys.modules.items()):
            if name.partition('.')[0] == 'pandas' and isinstance(m, types.ModuleType):
                d = vars(m)
                if d.get('find_stack_level') is real:
                    d['find_stack_level'] = find_stack_level


def _mpl_layout_sets():
    # LayoutEngine.set reads its own __kwdefaults__ (refused by the attribute
    # guard, data packages included): tight_layout() and constrained layout failed
    # with policy_violation. The same method, its names taken here in the zygote.
    def setter(names, doc):
        def set(self, **kwargs):
            for k in kwargs:
                if k not in names:
                    raise TypeError('set() got an unexpected keyword argument %r' % k)
            for k in names:
                if kwargs.get(k) is not None:
                    self._params[k] = kwargs[k]
        set.__doc__ = doc
        return set

    le = sys.modules['matplotlib.layout_engine']
    for cls in (le.TightLayoutEngine, le.ConstrainedLayoutEngine):
        cls.set = setter(tuple(cls.set.__kwdefaults__), cls.set.__doc__)


def _data_init():
    import importlib
    global _PATHS
    want = [m for m in DATA_MODULES if m in ALLOWED]
    if not want:
        return ()
    _PATHS = (str, bytes, importlib.import_module('os').PathLike)
    np = importlib.import_module('numpy')
    _numpy_alloc(sys.modules['numpy.core._multiarray_umath'])
    for m in want:
        importlib.import_module(m)
    if 'pandas' in want:  # DataFrame.to_markdown's table maker (python3-tabulate), if there
        try:
            importlib.import_module('tabulate')
        except ImportError:
            pass
        global EXCEL
        # Excel through openpyxl (python3-openpyxl), if there, with the standard
        # library's XML parser: never lxml, a second native XML library (and
        # one that can fetch), whether or not the machine has it.
        # openpyxl imports lxml and defusedxml when a machine has them, before
        # it reads OPENPYXL_LXML and OPENPYXL_DEFUSEDXML: a None in sys.modules
        # keeps them out of the zygote (unless PIL loaded defusedxml: then the
        # variable decides), so every machine parses sheets the same way, with the C
        # ElementTree over expat (whose amplification limits stop entity
        # bombs). defusedxml would parse with a second, pure-Python copy of
        # ElementTree that is in no module the zygote loaded.
        env = importlib.import_module('os').environ
        env['OPENPYXL_LXML'] = env['OPENPYXL_DEFUSEDXML'] = 'False'
        held = [m for m in ('lxml', 'defusedxml') if m not in sys.modules]
        for m in held:
            sys.modules[m] = None
        try:
            importlib.import_module('openpyxl')
            importlib.import_module('pandas.io.excel._openpyxl')
            x = sys.modules['openpyxl'].xml
            EXCEL = not x.LXML and not x.DEFUSEDXML
        except ImportError:
            pass
        finally:
            for m in held:
                del sys.modules[m]
        if EXCEL:
            _openpyxl_in_memory()
    if 'matplotlib' in want:
        importlib.import_module('matplotlib').use('Agg')
        importlib.import_module('matplotlib.pyplot')
    _data_warm()
    _data_stacklevels(want, importlib.import_module('warnings').warn)
    # The real builtins' memoryview is gated (a function, not the type) from
    # here on; the data modules use the type (matplotlib's Agg canvas hands
    # its pixels out as a memoryview, isinstance checks): theirs, in their own
    # globals, which no snippet can read (__globals__ is refused).
    for name, m in list(sys.modules.items()):
        if name.partition('.')[0] in want and isinstance(m, types.ModuleType):
            vars(m).setdefault('memoryview', memoryview)
    added = []
    if 'numpy' in want:
        _numpy_facades()
        added += ['numpy.linalg', 'numpy.random', 'numpy.fft', 'numpy.lib',
                  'numpy.lib.stride_tricks']
    if 'pandas' in want:
        _pandas_facade()
    if 'matplotlib' in want:
        _matplotlib_facades()
        _mpl_layout_sets()
        added.append('matplotlib.pyplot')
    global RICH_TYPES, JSON_SCALARS, _dt, _BytesIO, _StringIO, _MEMORY
    import datetime as _dt
    _BytesIO = importlib.import_module('io').BytesIO
    _StringIO = importlib.import_module('io').StringIO
    _MEMORY = (_BytesIO, _StringIO) + ((FACADES['io'].BytesIO,) if 'io' in FACADES else ())
    JSON_SCALARS = (np.number, np.bool_)
    RICH_TYPES = (np.ndarray, np.generic) + ((sys.modules['pandas'].DataFrame,
                                              sys.modules['pandas'].Series)
                                             if 'pandas' in want else ())
    for m in want:  # np.__version__: what a data snippet prints first
        FACADES[m].__version__ = sys.modules[m].__version__
    return tuple(added)


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
#   input breakpoint help: the terminal; exit quit vars globals locals: the shim's
#   own (_exit, _snippet_vars, _ns_builtins' snapshots) replace them: the real ones
#   are dicts of the object graph; memoryview: buffer tricks
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


def _snippet_builtins(allowed):
    b = dict(vars(builtins))
    for k in OMIT:
        b.pop(k, None)
    for k in CATALOG_BUILTINS - allowed:
        b.pop(k, None)
    mine = dict(print=_print, getattr=getattr, hasattr=hasattr, setattr=setattr,
                delattr=delattr)
    b.update({k: v for k, v in mine.items() if k in allowed})
    b.update(__import__=__import__, __name__='builtins', exit=_exit, quit=_exit)
    b['vars'] = _snippet_vars
    # globals() and locals(): a new dict of the names the snippet's code can load where it
    # calls them (no __builtins__, __loader__, __spec__, __package__), never the namespace
    # itself (C: pyshimfns.c, snippet_ns); refused to any code but the snippet's.
    nameable = NAME_DUNDER_OK | DUNDER_OK  # the dunder names _check lets a snippet load
    assert not nameable & GUARD_DENY and '__builtins__' not in nameable
    b['globals'], b['locals'] = _ns_builtins(nameable, *(
        '%s() of code that is not the snippet\'s is not available in the sandbox (policy %s: '
        'no introspection of the interpreter)' % (k, POLICY) for k in ('globals', 'locals')))
    if FILES:
        b['open'] = open
    for k in _BUILTIN_WHY:
        if k not in b:
            REFUSED_BUILTINS[k] = ('%s is not available in the sandbox (policy %s: %s)'
                                   % (k, POLICY, _BUILTIN_WHY[k]))
    for k in CATALOG_BUILTINS - allowed:
        REFUSED_BUILTINS[k] = '%s is not available in the sandbox (policy %s)' % (k, POLICY)
    # A name the snippet reads and never bound itself that the policy refuses is
    # a policy violation that says why, not a NameError: C checks each NameError
    # as it is made (pyguard.c). A snippet's own variable of the same name is
    # found first and works as ever; the builtins stay a plain dict (fast lookups).
    _refused_names(REFUSED_BUILTINS)
    return b


def _snippet_vars(*args):
    """vars(obj): the instance dict of one of the snippet's own objects."""
    if len(args) != 1:
        if args:
            raise TypeError('vars expected at most 1 argument, got %d' % len(args))
        _refuse(_VARS_REFUSED % POLICY, -1, 'python.builtins:vars')
    d = _vars(args[0])
    if d is None:
        raise TypeError('vars() argument must have __dict__ attribute')
    if d is False or any(type(k) is str and k in GUARD_DENY for k in d):
        _refuse(_VARS_REFUSED % POLICY, -1, 'python.builtins:vars')
    return d


_snippet_vars.__name__ = _snippet_vars.__qualname__ = 'vars'


_VARS_REFUSED = 'vars is not available in the sandbox (policy %s: no introspection of the interpreter)'


# -- file grants: open, os (listdir, path) and pathlib, only with a grant ------------
# Lexical checks (docs/python.md, "Files"): a path must be absolute; it is
# normalized like os.path.normpath (no symlink is resolved) and must lie at or
# beneath a grant: reads under a read or write grant, writes (w, a, x, +) under a
# write grant. The kernel (Landlock) is the wall; this says early and clearly.
FILES = False
GRANTS = False  # set by init(): the policy grants paths (not only a session's workspace)
_real_open = open
import os as _os
import posixpath as _pp
_real_listdir = _os.listdir


def _pathstr(p, shown):
    if isinstance(p, Path):
        p = p._p  # the snippet can set it: checked like any other
    if isinstance(p, str):
        return str.__str__(p)
    raise TypeError('%s: a path must be a str or a pathlib.Path, not %s'
                    % (shown, type(p).__name__))


def _granted(p, write, call, rest=''):
    """The normalized path if the policy grants it, else a policy violation."""
    path = _pathstr(p, call)
    shown = '%s(%r%s)' % (call, path, rest)
    if '\0' in path:
        raise ValueError('%s: embedded null byte' % call)
    ws = _workspace()
    rule = 'filesystem.%s %s' % ('write' if write else 'read', path)
    if ws is None and not GRANTS:
        _refuse('%s is refused: files are in a session\'s workspace, and this exec has none '
                '(policy %s: open a session)' % (shown, POLICY), -1, rule)
    if ws is not None and path and not path.startswith('/'):
        path = ws + '/' + path  # a session's workspace is the working directory
    if not path.startswith('/'):
        _refuse('%s is refused: a path must be absolute (policy %s)' % (shown, POLICY), -1, rule)
    norm = _pp.normpath(path)
    if not _within(norm, write):
        _refuse("%s is refused: outside the policy's %s grants (policy %s)"
                % (shown, 'write' if write else 'file', POLICY), -1,
                'filesystem.%s %s' % ('write' if write else 'read', norm))
    return norm


def _text_arg(v, what):
    if v is None:
        return None
    if isinstance(v, str):
        return str.__str__(v)
    raise TypeError('open() argument %s must be str or None, not %s' % (what, type(v).__name__))


# Every file the snippet opened, kept until its exec ends (then closed, so what
# it wrote is on disk for the client and the next exec, and a session does not
# run out of fds): an unclosed file's finalizer warns (ResourceWarning), and the
# warnings machinery, run from C with the snippet's frame innermost, reads module
# attributes the guard refuses.
_OPENED = []  # closed by C after each exec (pysandbox.c, close_opened)


def open(file, mode='r', buffering=-1, encoding=None, errors=None, newline=None):
    mode = _text_arg(mode, 'mode') or 'r'
    write = any(c in mode for c in 'wax+')
    path = _granted(file, write, 'open', '' if mode == 'r' else ', %r' % mode)
    f = _fileop(_real_open, path, mode, int(buffering), _text_arg(encoding, 'encoding'),
                _text_arg(errors, 'errors'), _text_arg(newline, 'newline'))
    _OPENED.append(f)
    return f


def _listdir(path):
    return _fileop(_real_listdir, _granted(path, False, 'os.listdir'))


def _exists(path):
    return _fileop(_pp.exists, _granted(path, False, 'os.path.exists'))


def _isfile(path):
    return _fileop(_pp.isfile, _granted(path, False, 'os.path.isfile'))


def _isdir(path):
    return _fileop(_pp.isdir, _granted(path, False, 'os.path.isdir'))


def _getsize(path):
    return _fileop(_pp.getsize, _granted(path, False, 'os.path.getsize'))


class Path:
    """pathlib.Path, cut down to what a file grant allows; every access is checked."""
    __slots__ = ('_p',)

    def __init__(self, *parts):
        self._p = _pp.join(*[_pathstr(x, 'Path') for x in parts]) if parts else '.'

    def __str__(self):
        return self._p

    def __fspath__(self):
        return self._p

    def __repr__(self):
        return 'Path(%r)' % self._p

    def __eq__(self, other):
        return isinstance(other, Path) and self._p == other._p

    def __lt__(self, other):
        return self._p < other._p

    def __hash__(self):
        return hash(self._p)

    def __truediv__(self, other):
        return Path(self._p, other)

    def __rtruediv__(self, other):
        return Path(other, self._p)

    def joinpath(self, *parts):
        return Path(self._p, *parts)

    @property
    def name(self):
        return _pp.basename(self._p.rstrip('/'))

    @property
    def parent(self):
        return Path(_pp.dirname(self._p.rstrip('/')) or '.')

    @property
    def suffix(self):
        return _pp.splitext(self.name)[1]

    @property
    def stem(self):
        return _pp.splitext(self.name)[0]

    @property
    def parts(self):
        p = self._p
        return (('/',) if p.startswith('/') else ()) + tuple(x for x in p.split('/') if x)

    def with_name(self, name):
        return Path(_pp.dirname(self._p.rstrip('/')), name)

    def with_suffix(self, suffix):
        return self.with_name(self.stem + suffix)

    def is_absolute(self):
        return self._p.startswith('/')

    def _call(self, method, write=False):
        return _granted(self._p, write, 'Path', ').%s(' % method)

    def exists(self):
        return _fileop(_pp.exists, self._call('exists'))

    def is_file(self):
        return _fileop(_pp.isfile, self._call('is_file'))

    def is_dir(self):
        return _fileop(_pp.isdir, self._call('is_dir'))

    def open(self, mode='r', buffering=-1, encoding=None, errors=None, newline=None):
        return open(self._p, mode, buffering, encoding, errors, newline)

    def read_text(self, encoding=None, errors=None):
        self._call('read_text')
        with open(self._p, 'r', encoding=encoding, errors=errors) as f:
            return f.read()

    def read_bytes(self):
        self._call('read_bytes')
        with open(self._p, 'rb') as f:
            return f.read()

    def write_text(self, data, encoding=None, errors=None, newline=None):
        if not isinstance(data, str):
            raise TypeError('data must be str, not %s' % type(data).__name__)
        self._call('write_text', True)
        with open(self._p, 'w', encoding=encoding, errors=errors, newline=newline) as f:
            return f.write(data)

    def write_bytes(self, data):
        self._call('write_bytes', True)
        with open(self._p, 'wb') as f:
            return f.write(bytes(data))

    def iterdir(self):
        for n in _fileop(_real_listdir, self._call('iterdir')):
            yield Path(self._p, n)

    def glob(self, pattern):
        """Names in this directory matching pattern (no '**', no '/')."""
        if not isinstance(pattern, str) or '/' in pattern:
            raise ValueError('glob: only a pattern for names in this directory')
        for n in sorted(_fileop(_real_listdir, self._call('glob'))):
            if _fnmatchcase(n, pattern):
                yield Path(self._p, n)


Path.__module__ = 'pathlib'


_fnmatchcase = None


def _file_facades():
    global _fnmatchcase
    import fnmatch
    _fnmatchcase = fnmatch.fnmatchcase
    path = types.ModuleType('os.path', 'Paths, checked against the policy\'s file grants.')
    for k in ('join', 'basename', 'dirname', 'split', 'splitext', 'normpath', 'isabs',
              'commonpath', 'commonprefix', 'sep'):
        path.__dict__[k] = getattr(_pp, k)
    path.exists, path.isfile, path.isdir, path.getsize = _exists, _isfile, _isdir, _getsize
    os_ = types.ModuleType('os', 'Only listdir and path: the policy grants files.')
    os_.listdir, os_.path, os_.sep = _listdir, path, '/'
    pl = types.ModuleType('pathlib', 'Path, checked against the policy\'s file grants.')
    pl.Path = pl.PosixPath = Path
    FACADES.update({'os': os_, 'os.path': path, 'pathlib': pl})
    return ('os', 'os.path', 'pathlib')


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
    # A format string that reads an attribute is formatted by string.Formatter,
    # whose get_field (the shim's) reads through _sgetattr; the rest by str's own.
    fmt = sys.modules['string'].Formatter()

    def format(self, /, *args, **kwargs):
        s = str.__str__(self)
        bad = _format_bad(s)
        if bad:
            _refuse("format string reads attribute '%s', which is not allowed" % bad, -1,
                    'python.attribute:' + bad)
        if '.' in s and _format_reads_attr(s):
            return fmt.vformat(s, args, kwargs)
        return _fmt(self, *args, **kwargs)

    def format_map(self, mapping, /):
        s = str.__str__(self)
        bad = _format_bad(s)
        if bad:
            _refuse("format string reads attribute '%s', which is not allowed" % bad, -1,
                    'python.attribute:' + bad)
        if '.' in s and _format_reads_attr(s):
            return fmt.vformat(s, (), mapping)
        return _fmt_map(self, mapping)
    _settype(str, 'format', format)
    _settype(str, 'format_map', format_map)
    for k in REAL_REMOVE:
        builtins.__dict__.pop(k, None)
    # The real builtins' __loader__ is BuiltinImporter (load_module('sys')).
    builtins.__loader__ = builtins.__spec__ = None
    for k in REAL_GATE:
        builtins.__dict__[k] = _gate(builtins.__dict__[k], k)


# -- kernel-only: the language layer refuses nothing ----------------------------------
# Loaded in the zygote so a snippet's attacks reach the kernel even while no
# file (not even the standard library) can be opened in a worker.
KERNEL_PRELOAD = ('os', 'sys', 'io', 'socket', 'subprocess', 'ctypes', 'pathlib', 'shutil',
                  'tempfile', 'signal', 'threading', 'multiprocessing', 'select', 'errno',
                  'stat', 'glob', 'pty', 'mmap', 'fcntl', 'resource', 'struct', 'urllib.request',
                  'http.client', 'ssl', 'importlib', 'inspect', 'pickle', 'traceback', 'gc',
                  'ast', 'dis', 'codecs', 'encodings.idna', 'weakref', 'asyncio')


def _kernel_init():
    import importlib
    for name in KERNEL_PRELOAD:
        try:
            importlib.import_module(name)
        except Exception:
            pass
    # Calls that report a kernel refusal only as a return value: each is
    # checked, so it ends the exec as the kernel's refusal (docs/python.md).
    os = sys.modules['os']
    system = os.system

    def checked_system(command):
        return _errno_call(system, 'os.system(%r)' % (command,), command)
    checked_system.__doc__ = system.__doc__
    os.system = checked_system
    ctypes = sys.modules.get('ctypes')
    if ctypes is not None:
        cdll_init = ctypes.CDLL.__init__

        def __init__(self, name, mode=ctypes.DEFAULT_MODE, handle=None, use_errno=False,
                     use_last_error=False, winmode=None):
            cdll_init(self, name, mode, handle, True, use_last_error, winmode)
            base = self._FuncPtr

            class _FuncPtr(base):
                _flags_, _restype_ = base._flags_, base._restype_

                def __call__(self, *args, **kwargs):
                    ctypes.set_errno(0)
                    r = base.__call__(self, *args, **kwargs)
                    fn = getattr(self, '__name__', '?')
                    _errno_check('%s() (via ctypes)' % fn, ctypes.get_errno(), fn, args)
                    return r
            self._FuncPtr = _FuncPtr
        ctypes.CDLL.__init__ = __init__
        ctypes.cdll = ctypes.LibraryLoader(ctypes.CDLL)


def init(modules, allowed_builtins, catalog_builtins, policy, kernel_only, files):
    """Called once by the zygote with its policy's lists; returns the builtins
    dict every snippet gets."""
    global _seed, ALLOWED, POLICY, KERNEL_ONLY, CATALOG_BUILTINS, FILES, GRANTS
    import importlib
    ALLOWED, POLICY, KERNEL_ONLY = tuple(modules), policy, bool(kernel_only)
    CATALOG_BUILTINS, FILES = frozenset(catalog_builtins), bool(files)
    GRANTS = files == 2  # 1: a session's workspace only
    if KERNEL_ONLY:
        for name in PRELOAD + ALLOWED:
            importlib.import_module(name)
        _kernel_init()
    else:
        _build_facades()
        ALLOWED += _data_init()
        if FILES:
            ALLOWED += _file_facades()
    _seed = importlib.import_module('random').seed  # reseeded per worker, offered or not
    sys.stdout, sys.stderr = _Stream(0), _Stream(1)
    sys.__stdout__, sys.__stderr__, sys.stdin = sys.stdout, sys.stderr, None
    if KERNEL_ONLY:
        return vars(builtins)
    b = _snippet_builtins(frozenset(allowed_builtins))
    _lock_types()
    _eval_builtins(b)
    assert all(_attr_bad(n) for n in GUARD_DENY)  # the AST check refuses them first ...
    assert READ_OK <= GUARD_DENY  # ... but these reads, which the guard decides in C
    _guard_enum(sys.modules['enum'])  # after every import: the stdlib's own use _convert_
    _spelled(_stdlib_literals(), frozenset(_SPELL_ONLY))  # what the stdlib names (pyattr.c)
    _guard(GUARD_DENY)  # last: from here on a denied name is refused in C
    _membrane(tuple(FACADES.values()), b)  # and what crosses into the snippet is checked
    return b


# The modules whose attributes the standard library's code reads only by names it
# spells itself (pyattr.c, spelled): the interpreter's state, the system, imports.
_SPELL_ONLY = ('sys', 'builtins', 'posix', 'os', 'gc', '_imp', 'marshal', '_io', 'io')


def _stdlib_literals():
    """{module namespace: frozenset of the names its code spells}: every name and
    string constant of every function and class of each standard library module
    loaded now, with its classes' and its own attribute names and string values,
    as far as they name an attribute of one of the modules that hold the
    interpreter's or the system's powers (_SPELL_ONLY). The guard lets the
    stdlib's code read those modules' attributes only by one of these names (or
    its own module's): `getattr(sys, self._stream)` in contextlib reads 'stdout'
    or 'stderr', never a name the snippet put in `_stream`."""
    code_t = types.CodeType
    _real_getattr = builtins.getattr  # this module's getattr is the snippet's
    out = {}

    def names_of(co, acc):
        acc.update(co.co_names)
        for c in co.co_consts:
            if type(c) is str:
                acc.add(c)
            elif type(c) is code_t:
                names_of(c, acc)
            elif type(c) in (tuple, frozenset):
                acc.update(x for x in c if type(x) is str)

    def walk(v, acc, seen, depth):
        if id(v) in seen or depth > 4:
            return
        seen.add(id(v))
        t = type(v)
        if t is str:
            acc.add(v)
        elif t in (tuple, list, set, frozenset):
            acc.update(x for x in v if type(x) is str)
        elif t is dict:
            acc.update(k for k in v if type(k) is str)
            acc.update(x for x in v.values() if type(x) is str)
        elif t is types.FunctionType:
            names_of(v.__code__, acc)
            # A decorated function of its own (contextlib.contextmanager's
            # helper around ElementTree._get_writer): the code it wraps.
            w = v.__dict__.get('__wrapped__')
            if type(w) is types.FunctionType and _real_getattr(w, '__module__', None) == mod_name:
                walk(w, acc, seen, depth + 1)
        elif t in (staticmethod, classmethod):
            walk(v.__func__, acc, seen, depth + 1)
        elif t is property:
            for f in (v.fget, v.fset, v.fdel):
                walk(f, acc, seen, depth + 1)
        elif isinstance(v, type) and _real_getattr(v, '__module__', None) == mod_name:
            for k, x in list(v.__dict__.items()):
                acc.add(k)
                walk(x, acc, seen, depth + 1)

    # Only names some module has matter (a read of any other finds nothing).
    attrs = set(dir(types.ModuleType)) | {'__dict__', '__file__', '__path__'}
    for name in _SPELL_ONLY:
        m = sys.modules.get(name)
        if m is not None:
            attrs.update(m.__dict__)
    for mod_name, m in list(sys.modules.items()):
        f = _real_getattr(m, '__file__', None) or ''
        if not (f.startswith('/usr/lib/python3.') and '/dist-packages/' not in f):
            continue
        acc = set()
        seen = set()
        for k, v in list(m.__dict__.items()):
            acc.add(k)
            walk(v, acc, seen, 0)
        out[id(m.__dict__)] = frozenset(acc & attrs)
    return out


_seed = None


def reseed(n):
    _seed(n)
