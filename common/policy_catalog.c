/*
 * policy_catalog.c — what a policy may choose from: the Lua functions and the
 * Python modules and builtins tidepool knows how to offer inside its language
 * layer (lua-sandbox/lenv.c and py-sandbox/shim.py serve exactly these). A name
 * outside a catalog is a validation error: the language layer could not
 * preload it safely. Data only.
 */
#include "policy_catalog.h"

#include <stddef.h>

const char *const tp_catalog_lua_libraries[] = {
	"base", "string", "table", "math", "utf8", "coroutine", "os", "io", "json", NULL,
};

/* Every function of every library above; "base" ones without a prefix. */
const char *const tp_catalog_lua_functions[] = {
	/* base */
	"assert",
	"error",
	"getmetatable",
	"ipairs",
	"next",
	"pairs",
	"rawequal",
	"rawget",
	"rawlen",
	"rawset",
	"select",
	"setmetatable",
	"tonumber",
	"type",
	"warn",
	"_VERSION",
	"print",
	"tostring",
	"load",
	"collectgarbage",
	"pcall",
	"xpcall",
	"require",
	/* string */
	"string.byte",
	"string.char",
	"string.find",
	"string.gmatch",
	"string.gsub",
	"string.len",
	"string.lower",
	"string.match",
	"string.pack",
	"string.packsize",
	"string.rep",
	"string.reverse",
	"string.sub",
	"string.unpack",
	"string.upper",
	"string.format",
	/* table */
	"table.concat",
	"table.insert",
	"table.move",
	"table.pack",
	"table.remove",
	"table.sort",
	"table.unpack",
	/* math */
	"math.abs",
	"math.acos",
	"math.asin",
	"math.atan",
	"math.ceil",
	"math.cos",
	"math.deg",
	"math.exp",
	"math.floor",
	"math.fmod",
	"math.huge",
	"math.log",
	"math.max",
	"math.maxinteger",
	"math.min",
	"math.mininteger",
	"math.modf",
	"math.pi",
	"math.rad",
	"math.random",
	"math.randomseed",
	"math.sin",
	"math.sqrt",
	"math.tan",
	"math.tointeger",
	"math.type",
	"math.ult",
	/* utf8 */
	"utf8.char",
	"utf8.charpattern",
	"utf8.codepoint",
	"utf8.codes",
	"utf8.len",
	"utf8.offset",
	/* coroutine */
	"coroutine.isyieldable",
	"coroutine.running",
	"coroutine.status",
	"coroutine.yield",
	"coroutine.create",
	"coroutine.resume",
	"coroutine.wrap",
	/* os: time only */
	"os.clock",
	"os.date",
	"os.difftime",
	"os.time",
	/* io: output only (io.open and io.lines come with a filesystem grant) */
	"io.write",
	/* json (ours: lua-sandbox/ljsonlib.c) */
	"json.decode",
	"json.encode",
	"json.null",
	NULL,
};

/* sys is a facade: stdout, stderr and facts about the interpreter, nothing of
 * its state (py-sandbox/shim.py, _sys_facade); io only StringIO and BytesIO;
 * time's calendar functions in UTC; traceback over the snippet's own frames. */
const char *const tp_catalog_py_modules[] = {
	"math",
	"cmath",
	"json",
	"re",
	"random",
	"datetime",
	"calendar",
	"collections",
	"collections.abc",
	"itertools",
	"functools",
	"statistics",
	"decimal",
	"fractions",
	"numbers",
	"string",
	"textwrap",
	"difflib",
	"heapq",
	"bisect",
	"dataclasses",
	"typing",
	"enum",
	"operator",
	"copy",
	"pprint",
	"base64",
	"binascii",
	"hashlib",
	"hmac",
	"struct",
	"unicodedata",
	"html",
	"colorsys",
	"graphlib",
	"fnmatch",
	"shlex",
	"zlib",
	"sys",
	"io",
	"csv",
	"time",
	"abc",
	"contextlib",
	"traceback",
	"logging",
	"warnings",
	"uuid",
	"urllib.parse",
	"zoneinfo", /* its data read in the zygote: shim.py, _zoneinfo_patch */
	/* issue 28: what agent frameworks and LLM code import (docs/python.md, "The
	 * standard library, module by module") */
	"queue",
	"stat",
	"errno",
	"keyword",
	"reprlib",
	"ipaddress",
	"tomllib",
	"secrets",
	"sched",
	"html.parser",
	"html.entities",
	/* data (Debian's python3-numpy, -pandas, -matplotlib; facades: shim.py) */
	"numpy",
	"pandas",
	"matplotlib",
	NULL,
};

/* The builtins a policy may leave out; exceptions, constants and the class
 * machinery are always there. open, eval, exec, compile, globals, locals, vars,
 * memoryview, input, help, exit, quit, breakpoint are never offered: a
 * language-layer policy cannot grant them (kernel-only has them all). */
const char *const tp_catalog_py_builtins[] = {
	"abs",         "aiter",    "all",       "anext",  "any",          "ascii",
	"bin",         "bool",     "bytearray", "bytes",  "callable",     "chr",
	"classmethod", "complex",  "delattr",   "dict",   "dir",          "divmod",
	"enumerate",   "filter",   "float",     "format", "frozenset",    "getattr",
	"hasattr",     "hash",     "hex",       "id",     "int",          "isinstance",
	"issubclass",  "iter",     "len",       "list",   "map",          "max",
	"min",         "next",     "object",    "oct",    "ord",          "pow",
	"print",       "property", "range",     "repr",   "reversed",     "round",
	"set",         "setattr",  "slice",     "sorted", "staticmethod", "str",
	"sum",         "super",    "tuple",     "type",   "zip",          NULL,
};
