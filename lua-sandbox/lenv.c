/*
 * lenv.c — the globals a snippet can reach, built from the const allowlist below,
 * and the functions we replace. Invariant: nothing outside the allowlist is
 * reachable from _G, from the string metatable, or through a replaced function;
 * no function prints an address; errors that carry a limit cannot be caught.
 * The middle of the Lua layer: it calls down into the guard (lguard.c) and the
 * json module (ljsonlib.c), never up into the exec (lsandbox.c), which calls it.
 */
#include "lenv.h"

#include <lauxlib.h>
#include <lualib.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "lang.h"
#include "lguard.h"
#include "ljsonlib.h"
#include "policy.h"
#include "policy_catalog.h"

#define IDS_KEY "tidepool.ids" /* registry: weak-keyed object -> id for tostring */

/* What the environment keeps outside the lua_State, for the state it serves:
 * each process has its own copy, and tp_lenv_exec_reset rebuilds all of it
 * whenever an exec starts on a state no exec has used (every exec but a
 * session's second and later: a one-shot worker's, each exec of isolation
 * "state" in its fresh state, a session's first), so no exec of a reused
 * worker sees anything of the one before:
 *   next_id     the last number tostring gave ("table: #3"); the ids it gave
 *               are in the registry's IDS_KEY table, replaced with it;
 *   warn_on     warn()'s switch ("@on"/"@off"), off as in a fresh lua.c;
 *   warn_cont   inside a multi-part warning (a warn of several pieces);
 *   clock0      os.clock()'s origin: this thread's CPU time when the exec began.
 * Everything else an exec can change is in its lua_State (globals, libraries,
 * the string metatable, the random stream: rebuilt with the state, reseeded)
 * or is bookkeeping lsandbox.c resets at each exec's begin(). */
static struct exec_env {
	lua_Integer next_id;
	int warn_on, warn_cont;
	struct timespec clock0;
} g_env;

/* ---- tostring without addresses ------------------------------------------ */

/* A small per-state number for an object: "table: #3" instead of its address. */
static lua_Integer object_id(lua_State *L, int idx)
{
	lua_Integer id;

	lua_getfield(L, LUA_REGISTRYINDEX, IDS_KEY);
	lua_pushvalue(L, idx);
	if (lua_rawget(L, -2) == LUA_TNUMBER) {
		id = lua_tointeger(L, -1);
		lua_pop(L, 2);
		return id;
	}
	lua_pop(L, 1);
	id = ++g_env.next_id;
	lua_pushvalue(L, idx);
	lua_pushinteger(L, id);
	lua_rawset(L, -3);
	lua_pop(L, 1);
	return id;
}

const char *tp_lenv_tostring(lua_State *L, int idx, size_t *len)
{
	const char *name;

	idx = lua_absindex(L, idx);
	if (luaL_callmeta(L, idx, "__tostring")) {
		if (!lua_isstring(L, -1))
			luaL_error(L, "'__tostring' must return a string");
		return lua_tolstring(L, -1, len);
	}
	switch (lua_type(L, idx)) {
	case LUA_TNIL:
	case LUA_TBOOLEAN:
	case LUA_TNUMBER:
	case LUA_TSTRING: return luaL_tolstring(L, idx, len);
	}
	/* Tables, functions, threads, userdata: luaL_tolstring would print "%p". */
	int t = luaL_getmetafield(L, idx, "__name"); /* pushes nothing when absent */
	name = t == LUA_TSTRING ? lua_tostring(L, -1) : luaL_typename(L, idx);
	lua_pushfstring(L, "%s: #%I", name, (LUAI_UACINT)object_id(L, idx));
	if (t != LUA_TNIL)
		lua_remove(L, -2);
	return lua_tolstring(L, -1, len);
}

static int l_tostring(lua_State *L)
{
	luaL_checkany(L, 1);
	tp_lenv_tostring(L, 1, NULL);
	return 1;
}

/* ---- output ---------------------------------------------------------------- */

/* print: to the capped stdout buffer, never to fd 1 (it carries the protocol). */
static int l_print(lua_State *L)
{
	int n = lua_gettop(L);

	for (int i = 1; i <= n; i++) {
		size_t len;
		const char *s = tp_lenv_tostring(L, i, &len);
		if (i > 1)
			tp_lua_guard_write(L, TP_STDOUT, "\t", 1);
		tp_lua_guard_write(L, TP_STDOUT, s, len);
		lua_pop(L, 1);
	}
	tp_lua_guard_write(L, TP_STDOUT, "\n", 1);
	return 0;
}

/* io.write: strings and numbers, to the same buffer as print; returns nothing. */
static int l_io_write(lua_State *L)
{
	int n = lua_gettop(L);

	for (int i = 1; i <= n; i++) {
		size_t len;
		const char *s = luaL_checklstring(L, i, &len);
		tp_lua_guard_write(L, TP_STDOUT, s, len);
	}
	return 0;
}

static void warn_out(const char *s)
{
	tp_lua_guard_write(NULL, TP_STDERR, s, strlen(s));
}

/* warn(): off until "@on", like lua.c; may run inside the GC, so it never raises. */
static void warnf(void *ud, const char *msg, int tocont)
{
	(void)ud;
	if (!g_env.warn_cont && msg[0] == '@') {
		if (strcmp(msg, "@on") == 0)
			g_env.warn_on = 1;
		else if (strcmp(msg, "@off") == 0)
			g_env.warn_on = 0;
		return;
	}
	if (g_env.warn_on) {
		if (!g_env.warn_cont)
			warn_out("Lua warning: ");
		warn_out(msg);
		if (!tocont)
			warn_out("\n");
	}
	g_env.warn_cont = tocont;
}

/* os.clock: the CPU seconds of this exec (of a session, since its first), as a
 * fresh process's first exec reads them, not the worker's since its fork. The
 * worker has one thread (verdict.c): the thread's clock is the process's. */
static int l_clock(lua_State *L)
{
	struct timespec now;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
	double s = (double)(now.tv_sec - g_env.clock0.tv_sec) +
		   (double)(now.tv_nsec - g_env.clock0.tv_nsec) / 1e9;
	lua_pushnumber(L, s > 0 ? s : 0);
	return 1;
}

/* A new weak-keyed table of object ids at IDS_KEY: ids never keep objects alive. */
static void new_ids(lua_State *L)
{
	lua_newtable(L);
	lua_pushliteral(L, "k");
	lua_setfield(L, -2, "__mode");
	lua_pushvalue(L, -1);
	lua_setmetatable(L, -2);
	lua_setfield(L, LUA_REGISTRYINDEX, IDS_KEY);
}

void tp_lenv_exec_reset(lua_State *L)
{
	memset(&g_env, 0, sizeof g_env);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &g_env.clock0);
	new_ids(L);
}

/* string.format without "%p" (an address); "%s" goes through our tostring. */
static int l_format(lua_State *L)
{
	size_t flen;
	const char *f = luaL_checklstring(L, 1, &flen);
	int arg = 1, top = lua_gettop(L);

	for (size_t i = 0; i < flen; i++) {
		if (f[i] != '%' || ++i >= flen || f[i] == '%')
			continue;
		while (i < flen && f[i] != '\0' && strchr("-+ #0123456789.", f[i]))
			i++;
		if (i >= flen)
			break;
		if (f[i] == 'p')
			return luaL_error(
			    L, "invalid conversion '%%p' to 'format' (addresses are hidden)");
		if (f[i] == 's' && ++arg <= top && !lua_isstring(L, arg)) {
			tp_lenv_tostring(L, arg, NULL);
			lua_replace(L, arg);
		} else if (f[i] != 's') {
			arg++;
		}
	}
	lua_getfield(L, lua_upvalueindex(1), "format");
	lua_insert(L, 1);
	lua_call(L, top, 1);
	return 1;
}

/* ---- load and the collector ---------------------------------------------- */

#define RESERVED_SLOT 5 /* where the reader keeps the last piece alive */

static const char *load_reader(lua_State *L, void *ud, size_t *size)
{
	(void)ud;
	luaL_checkstack(L, 2, "too many nested functions");
	lua_pushvalue(L, 1);
	lua_call(L, 0, 1);
	if (lua_isnil(L, -1)) {
		lua_pop(L, 1);
		*size = 0;
		return NULL;
	}
	if (!lua_isstring(L, -1))
		luaL_error(L, "reader function must return a string");
	lua_replace(L, RESERVED_SLOT);
	return lua_tolstring(L, RESERVED_SLOT, size);
}

/* load(chunk [, name [, mode [, env]]]): text only, whatever mode says, since
 * untrusted bytecode breaks memory safety; errors that hold a limit are rethrown. */
static int l_load(lua_State *L)
{
	size_t len;
	const char *s = lua_tolstring(L, 1, &len);
	int env = !lua_isnone(L, 4) ? 4 : 0;
	int status;

	luaL_optstring(L, 3, "t"); /* type-checked like the original, then ignored */
	if (s != NULL) {
		status = luaL_loadbufferx(L, s, len, luaL_optstring(L, 2, s), "t");
	} else {
		const char *name = luaL_optstring(L, 2, "=(load)");
		luaL_checktype(L, 1, LUA_TFUNCTION);
		lua_settop(L, RESERVED_SLOT);
		status = lua_load(L, load_reader, NULL, name, "t");
	}
	tp_lua_guard_status(L, status); /* lua_load swallows errors, limits included */
	if (status != LUA_OK) {
		luaL_pushfail(L);
		lua_insert(L, -2);
		return 2;
	}
	if (env != 0) {
		lua_pushvalue(L, env);
		if (!lua_setupvalue(L, -2, 1))
			lua_pop(L, 1);
	}
	return 1;
}

/* Only "count": the others run finalizers when the snippet likes, or restart a
 * collector the guard stopped after a limit. */
static int l_collectgarbage(lua_State *L)
{
	const char *opt = luaL_optstring(L, 1, "collect");

	if (strcmp(opt, "count") != 0)
		return luaL_error(L, "collectgarbage: only \"count\" is allowed, not \"%s\"", opt);
	lua_pushnumber(L, (lua_Number)lua_gc(L, LUA_GCCOUNT, 0) +
			      (lua_Number)lua_gc(L, LUA_GCCOUNTB, 0) / 1024);
	return 1;
}

/* ---- pcall, xpcall: catch errors, never limits ------------------------------ */

static int finish_pcall(lua_State *L, int status, lua_KContext extra)
{
	if (status != LUA_OK && status != LUA_YIELD) {
		tp_lua_guard_status(L, status);
		lua_pushboolean(L, 0);
		lua_pushvalue(L, -2);
		return 2;
	}
	tp_lua_guard_status(L, LUA_OK);
	return lua_gettop(L) - (int)extra;
}

static int l_pcall(lua_State *L)
{
	luaL_checkany(L, 1);
	lua_pushboolean(L, 1);
	lua_insert(L, 1);
	return finish_pcall(L, lua_pcallk(L, lua_gettop(L) - 2, LUA_MULTRET, 0, 0, finish_pcall),
			    0);
}

/* Runs the caller's handler, unless a limit tripped: then no snippet code may run. */
static int l_xpcall(lua_State *L)
{
	int n = lua_gettop(L);

	luaL_checktype(L, 2, LUA_TFUNCTION);
	lua_pushvalue(L, 2);
	lua_pushcclosure(L, tp_lua_guard_xpcall_msgh, 1);
	lua_replace(L, 2);
	lua_pushboolean(L, 1);
	lua_pushvalue(L, 1);
	lua_rotate(L, 3, 2);
	return finish_pcall(L, lua_pcallk(L, n - 2, LUA_MULTRET, 2, 2, finish_pcall), 2);
}

/* ---- coroutines: each thread hooked, the running one tracked ------------------ */

static int co_create(lua_State *L)
{
	lua_State *co;

	luaL_checktype(L, 1, LUA_TFUNCTION);
	co = lua_newthread(L);
	tp_lua_guard_thread(L, co);
	lua_pushvalue(L, 1);
	lua_xmove(L, co, 1);
	return 1;
}

/* lcorolib's auxresume, plus thread tracking and the limit check. */
static int aux_resume(lua_State *L, lua_State *co, int narg)
{
	lua_State *prev;
	int status, nres;

	if (!lua_checkstack(co, narg)) {
		lua_pushliteral(L, "too many arguments to resume");
		return -1;
	}
	lua_xmove(L, co, narg);
	prev = tp_lua_guard_enter(co);
	status = lua_resume(co, L, narg, &nres);
	tp_lua_guard_leave(prev);
	if (status == LUA_OK || status == LUA_YIELD) {
		tp_lua_guard_status(L, LUA_OK);
		if (!lua_checkstack(L, nres + 1)) {
			lua_pop(co, nres);
			lua_pushliteral(L, "too many results to resume");
			return -1;
		}
		lua_xmove(co, L, nres);
		return nres;
	}
	lua_xmove(co, L, 1);
	tp_lua_guard_status(L, status);
	return -1;
}

static int co_resume(lua_State *L)
{
	lua_State *co = lua_tothread(L, 1);
	int r;

	luaL_argexpected(L, co != NULL, 1, "coroutine");
	r = aux_resume(L, co, lua_gettop(L) - 1);
	if (r < 0) {
		lua_pushboolean(L, 0);
		lua_insert(L, -2);
		return 2;
	}
	lua_pushboolean(L, 1);
	lua_insert(L, -(r + 1));
	return r + 1;
}

/* lcorolib's auxwrap: an error kills the coroutine, closes its variables, propagates. */
static int co_wrap_call(lua_State *L)
{
	lua_State *co = lua_tothread(L, lua_upvalueindex(1));
	int r = aux_resume(L, co, lua_gettop(L));

	if (r >= 0)
		return r;
	int stat = lua_status(co);
	if (stat != LUA_OK && stat != LUA_YIELD) {
		lua_State *prev = tp_lua_guard_enter(co);
		stat = lua_resetthread(co);
		tp_lua_guard_leave(prev);
		lua_xmove(co, L, 1);
		tp_lua_guard_status(L, LUA_OK);
	}
	if (stat != LUA_ERRMEM && lua_type(L, -1) == LUA_TSTRING) {
		luaL_where(L, 1);
		lua_insert(L, -2);
		lua_concat(L, 2);
	}
	return lua_error(L);
}

static int co_wrap(lua_State *L)
{
	co_create(L);
	lua_pushcclosure(L, co_wrap_call, 1);
	return 1;
}

/* ---- require: the libraries the snippet already has ------------------------------ */

static int l_require(lua_State *L);

/* ---- the allowlist ------------------------------------------------------------ */

struct lib {
	const char *name;        /* global name; "_G" is the globals table itself */
	lua_CFunction open;      /* the stock library; NULL when we provide it all */
	const char *const *keep; /* stock functions the snippet gets */
	const luaL_Reg *ours;    /* our functions (upvalue 1: the stock module) */
};

static const char *const base_keep[] = { "assert", "error", "getmetatable", "ipairs", "next",
					 "pairs", "rawequal", "rawget", "rawlen", "rawset",
					 "select", "setmetatable", "tonumber", "type", "warn",
					 "_VERSION",
					 /* dofile, loadfile: read files. require is ours (stock:
					  * package.loaded, C libraries). */
					 NULL };
static const luaL_Reg base_ours[] = { { "print", l_print }, /* to the capped buffer, not fd 1 */
				      { "tostring", l_tostring },             /* no addresses */
				      { "load", l_load },                     /* text chunks only */
				      { "collectgarbage", l_collectgarbage }, /* "count" only */
				      { "pcall", l_pcall },     /* cannot catch a limit */
				      { "xpcall", l_xpcall },   /* cannot catch a limit */
				      { "require", l_require }, /* only the libraries of libs[] */
				      { NULL, NULL } };
static const char *const string_keep[] = {
	"byte", "char", "find", "gmatch", "gsub", "len", "lower", "match", "pack", "packsize",
	"rep", "reverse", "sub", "unpack", "upper",
	/* dump: makes bytecode, and loading bytecode breaks memory safety. */
	NULL
};
static const luaL_Reg string_ours[] = { { "format", l_format }, /* no "%p" */
					{ NULL, NULL } };
static const char *const table_keep[] = { "concat", "insert", "move",   "pack",
					  "remove", "sort",   "unpack", NULL };
static const char *const math_keep[] = { "abs",        "acos", "asin", "atan",       "ceil",
					 "cos",        "deg",  "exp",  "floor",      "fmod",
					 "huge",       "log",  "max",  "maxinteger", "min",
					 "mininteger", "modf", "pi",   "rad",        "random",
					 "randomseed", "sin",  "sqrt", "tan",        "tointeger",
					 "type",       "ult",  NULL };
static const char *const utf8_keep[] = { "char", "charpattern", "codepoint", "codes",
					 "len",  "offset",      NULL };
static const char *const coroutine_keep[] = {
	"isyieldable", "running", "status", "yield",
	/* close: crashes Debian's Lua 5.4.4 when nested through __close. */
	NULL
};
static const luaL_Reg coroutine_ours[] = {
	{ "create", co_create }, /* hooks the new thread */
	{ "resume", co_resume }, /* tracks the running thread, rethrows limits */
	{ "wrap", co_wrap },     /* both */
	{ NULL, NULL }
};
static const char *const os_keep[] = { "date", "difftime", "time",
				       /* execute, exit, getenv, remove, rename, setlocale, tmpname:
					* reach the process, the environment or the filesystem. */
				       NULL };
static const luaL_Reg os_ours[] = { { "clock", l_clock }, /* from the exec's start */
				    { NULL, NULL } };
static const luaL_Reg io_ours[] = { { "write", l_io_write }, /* to the capped buffer; every other io
							      * function reaches files or fds */
				    { NULL, NULL } };

/* Not installed at all: debug (reaches the registry, upvalues and hooks, so it
 * undoes every limit) and package (loads C libraries: CVE-2022-0543). */
static const struct lib libs[] = {
	{ "_G", luaopen_base, base_keep, base_ours },
	{ LUA_STRLIBNAME, luaopen_string, string_keep, string_ours },
	{ LUA_TABLIBNAME, luaopen_table, table_keep, NULL },
	{ LUA_MATHLIBNAME, luaopen_math, math_keep, NULL },
	{ LUA_UTF8LIBNAME, luaopen_utf8, utf8_keep, NULL },
	{ LUA_COLIBNAME, luaopen_coroutine, coroutine_keep, coroutine_ours },
	{ LUA_OSLIBNAME, luaopen_os, os_keep, os_ours },
	{ LUA_IOLIBNAME, NULL, NULL, io_ours },
	{ "json", NULL, NULL, tp_ljson_lib }, /* ours (ljsonlib.c); fill_lib adds json.null */
};

/* require(name): the table of a library of libs[] this environment built (as
 * package.loaded would give it: the same table as the global, whatever the
 * snippet did to the global since); any other name is refused like a name the
 * policy left out. Never package.loaded, never a C library: _LOADED also holds
 * the stock tables (io as "tidepool.io"), so only these names are looked up. */
static int l_require(lua_State *L)
{
	const char *name = luaL_checkstring(L, 1);
	const struct tp_policy *p = tp_sandbox_policy();
	char have[160] = "", msg[400];
	/* The JSON libraries LLM-written Lua names most, with the API json has
	 * (encode, decode, null): code that tries them in turn finds one. */
	const char *want =
	    strcmp(name, "cjson") == 0 || strcmp(name, "dkjson") == 0 ? "json" : name;

	luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
	for (size_t i = 1; i < sizeof libs / sizeof libs[0]; i++) {
		if (lua_getfield(L, -1, libs[i].name) != LUA_TTABLE) {
			lua_pop(L, 1);
			continue;
		}
		if (strcmp(want, libs[i].name) == 0)
			return 1;
		lua_pop(L, 1);
		snprintf(have + strlen(have), sizeof have - strlen(have), "%s%s",
			 have[0] ? ", " : "", libs[i].name);
	}
	snprintf(msg, sizeof msg,
		 "require('%.60s') is not available in the sandbox (policy %s: no modules; its "
		 "libraries are globals: %s)",
		 name, p ? p->name : "?", have);
	char rule[96];
	snprintf(rule, sizeof rule, "lua.libraries:%.60s", name);
	return tp_lua_guard_refuse(L, TP_KIND_POLICY_VIOLATION, rule, msg);
}

/* ---- the policy's choice -------------------------------------------------------- */

static int strv_has(const struct tp_strv *v, const char *s)
{
	for (size_t i = 0; i < v->n; i++)
		if (strcmp(v->v[i], s) == 0)
			return 1;
	return 0;
}

/* "os.time", or "print" for the base library. */
static void full_name(char *buf, size_t len, const char *lib, const char *fn)
{
	if (strcmp(lib, "_G") == 0)
		snprintf(buf, len, "%s", fn);
	else
		snprintf(buf, len, "%s.%s", lib, fn);
}

/* This file's state (S, not L: L is a lua_State throughout the Lua layer):
 * the answers of allowed() in the order tp_lenv_open asks, kept from the first
 * build: the policy is the process's for its life, and a state worker builds
 * the same environment before each exec (lsandbox.c tp_lua_reset). No signal
 * handler reads or writes it. */
static struct {
	/* The first build's answers: memo and memo_len written by the zygote's
	 * build (tp_lua_zygote_init), before any worker; memo_done set at the end
	 * of every build, to the same value after the first: all fitted, so later
	 * builds only read them back (else each asks again). */
	unsigned char memo[1024];
	size_t memo_len;
	int memo_done;
	/* Per build (each tp_lenv_open: the zygote's, and a state worker's before
	 * each exec): the next answer to read back. */
	size_t memo_next;
} S;

static int allowed_uncached(const char *lib, const char *fn);

/* Does the policy give the snippet this function of this library? */
static int allowed(const char *lib, const char *fn)
{
	if (S.memo_done && S.memo_next < S.memo_len)
		return S.memo[S.memo_next++];
	int r = allowed_uncached(lib, fn);
	if (!S.memo_done && S.memo_len < sizeof S.memo)
		S.memo[S.memo_len++] = (unsigned char)r;
	return r;
}

static int allowed_uncached(const char *lib, const char *fn)
{
	const struct tp_policy *p = tp_sandbox_policy();
	char full[96];

	if (p == NULL)
		return 0;
	if (strv_has(&p->lua_libraries, strcmp(lib, "_G") == 0 ? "base" : lib))
		return 1;
	full_name(full, sizeof full, lib, fn);
	return strv_has(&p->lua_functions, full);
}

/* Fills the table on top with the part of one library the policy allows. */
static void fill_lib(lua_State *L, const struct lib *lib)
{
	if (lib->open != NULL)
		luaL_requiref(L, lib->name, lib->open, 0);
	else
		lua_pushnil(L);
	for (const char *const *k = lib->keep; k != NULL && *k != NULL; k++) {
		if (!allowed(lib->name, *k))
			continue;
		lua_getfield(L, -1, *k);
		lua_setfield(L, -3, *k);
	}
	if (strcmp(lib->name, LUA_MATHLIBNAME) ==
	    0) { /* the workers' reseed, whatever the policy */
		lua_getfield(L, -1, "randomseed");
		lua_setfield(L, LUA_REGISTRYINDEX, TP_LENV_SEED_KEY);
	}
	for (const luaL_Reg *r = lib->ours; r != NULL && r->name != NULL; r++) {
		if (!allowed(lib->name, r->name))
			continue;
		lua_pushvalue(L, -1); /* upvalue 1: the stock module */
		lua_pushcclosure(L, r->func, 1);
		lua_setfield(L, -3, r->name);
	}
	if (strcmp(lib->name, "json") == 0 && allowed(lib->name, "null")) {
		lua_pushlightuserdata(L, NULL); /* JSON null: ljson.c knows it */
		lua_setfield(L, -3, "null");
	}
	lua_pop(L, 1);
}

/* ---- refusals that name themselves ------------------------------------------------ */

/* Names stock Lua 5.4 has that a policy may leave out, and what that denies
 * (and json, tidepool's own library, left out of _G when the policy gives none
 * of it). A name of tidepool's catalog the policy left out is refused with no
 * reason beyond the policy; a name stock Lua lacks reads as nil, as in plain Lua. */
struct stock {
	const char *lib, *name, *why;
};

static const struct stock stock[] = {
	{ "_G", "dofile", "no files" },        { "_G", "loadfile", "no files" },
	{ "_G", "require", "no modules" },     { "_G", "package", "no modules" },
	{ "_G", "debug", "no debug library" }, { "io", "open", "no files" },
	{ "io", "lines", "no files" },         { "io", "read", "no files" },
	{ "io", "input", "no files" },         { "io", "output", "no files" },
	{ "io", "close", "no files" },         { "io", "tmpfile", "no files" },
	{ "io", "type", "no files" },          { "io", "stdin", "no files" },
	{ "io", "stdout", "no files" },        { "io", "stderr", "no files" },
	{ "io", "popen", "no processes" },     { "os", "execute", "no processes" },
	{ "os", "exit", "no processes" },      { "os", "getenv", "no environment" },
	{ "os", "remove", "no files" },        { "os", "rename", "no files" },
	{ "os", "tmpname", "no files" },       { "os", "setlocale", "no locale" },
	{ "os", "clock", "no clocks" },        { "os", "date", "no clocks" },
	{ "os", "difftime", "no clocks" },     { "os", "time", "no clocks" },
	{ "string", "dump", "no bytecode" },   { "coroutine", "close", NULL },
};

static int in_catalog(const char *full)
{
	for (size_t i = 0; tp_catalog_lua_functions[i] != NULL; i++)
		if (strcmp(tp_catalog_lua_functions[i], full) == 0)
			return 1;
	return 0;
}

/* __index of _G and of each library table: upvalue 1 is the library's name. */
static int refuse_index(lua_State *L)
{
	const char *lib = lua_tostring(L, lua_upvalueindex(1));
	const char *key = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : NULL;
	const struct tp_policy *p = tp_sandbox_policy();
	char full[96], msg[256];
	const char *why = NULL;
	int known = 0;

	if (key == NULL || lib == NULL || strlen(key) > 40)
		return 0;
	full_name(full, sizeof full, lib, key);
	for (size_t i = 0; i < sizeof stock / sizeof stock[0] && !known; i++)
		if (strcmp(stock[i].lib, lib) == 0 && strcmp(stock[i].name, key) == 0) {
			known = 1;
			why = stock[i].why;
		}
	if (!known && strcmp(lib, "_G") == 0 && strcmp(key, "json") == 0)
		known = 1; /* tidepool's own library, which this policy does not give */
	if (!known && !in_catalog(full))
		return 0; /* not a name Lua has: nil, as in plain Lua */
	if (why != NULL)
		snprintf(msg, sizeof msg, "%s is not available in the sandbox (policy %s: %s)",
			 full, p ? p->name : "?", why);
	else
		snprintf(msg, sizeof msg, "%s is not available in the sandbox (policy %s)", full,
			 p ? p->name : "?");
	char rule[96];
	snprintf(rule, sizeof rule, "lua.%s:%.60s", strchr(full, '.') ? "functions" : "libraries",
		 full);
	return tp_lua_guard_refuse(L, TP_KIND_POLICY_VIOLATION, rule, msg);
}

/* The table on top refuses the stock names it lacks; its metatable is locked. */
static void set_refusals(lua_State *L, const char *lib)
{
	lua_createtable(L, 0, 2);
	lua_pushstring(L, lib);
	lua_pushcclosure(L, refuse_index, 1);
	lua_setfield(L, -2, "__index");
	lua_pushboolean(L, 0);
	lua_setfield(L, -2, "__metatable");
	lua_setmetatable(L, -2);
}

/* The string metatable leads to our string table, and getmetatable("") gets false. */
static void lock_string_metatable(lua_State *L)
{
	lua_pushliteral(L, "");
	lua_getmetatable(L, -1);
	lua_getglobal(L, LUA_STRLIBNAME);
	lua_setfield(L, -2, "__index");
	lua_pushboolean(L, 0);
	lua_setfield(L, -2, "__metatable");
	lua_pop(L, 2);
}

/* ---- kernel-only: everything, and the kernel's refusals reported ------------------ */

static const char *kernel_reason(int e, const char *what)
{
	if (strcmp(what, "os.execute") == 0 || strcmp(what, "io.popen") == 0)
		return "seccomp allows no new process, thread or program";
	return e == EACCES ? "Landlock allows no file outside the policy's grants"
			   : "the kernel layer allows no file outside the policy's grants";
}

/* error.rule of a refusal the runtime saw: Landlock's right and the path, or
 * seccomp's answer by its errno (the runtime cannot see which call it was). */
static const char *kernel_rule(char *out, size_t len, int e, const char *what, const char *mode,
			       const char *path)
{
	int file = strcmp(what, "io.open") == 0 || strcmp(what, "io.lines") == 0 ||
		   strcmp(what, "dofile") == 0 || strcmp(what, "loadfile") == 0;
	int write =
	    strcmp(what, "io.open") == 0 && strcmp(mode, "r") != 0 && strcmp(mode, "rb") != 0;
	if (e == EACCES && file)
		snprintf(out, len, "landlock:%s%s", write ? "write_file" : "read_file", path);
	else if (e == EACCES && strcmp(what, "os.remove") == 0)
		snprintf(out, len, "landlock:remove_file%s", path);
	else if (e == EACCES)
		snprintf(out, len, "landlock%s", path);
	else if (e == EROFS)
		snprintf(out, len, "kernel:EROFS%s", path);
	else
		snprintf(out, len, "seccomp:%s", e == ENOSYS ? "ENOSYS" : "EPERM");
	return out;
}

static const char *errno_name(int e)
{
	switch (e) {
	case EACCES: return "EACCES";
	case EPERM: return "EPERM";
	case EROFS: return "EROFS";
	default: return "ENOSYS";
	}
}

/* A stock io/os/base function (upvalue 1) named upvalue 2. When it fails and
 * errno says the kernel refused (EACCES, EPERM, EROFS, ENOSYS), the exec ends
 * as sandbox_violation naming the call and its argument: sticky, so a pcall
 * around it does not hide what the kernel stopped. */
static int kernel_watch(lua_State *L)
{
	const char *what = lua_tostring(L, lua_upvalueindex(2));
	char arg[160] = "", path[170] = "", mode[8] = "r";
	int n = lua_gettop(L), status, e;

	if (n >= 1 && lua_type(L, 1) == LUA_TSTRING) {
		snprintf(arg, sizeof arg, "'%.120s'", lua_tostring(L, 1));
		snprintf(path, sizeof path, " %.160s", lua_tostring(L, 1));
	}
	if (n >= 2 && lua_type(L, 2) == LUA_TSTRING)
		snprintf(mode, sizeof mode, "%s", lua_tostring(L, 2));
	lua_pushvalue(L, lua_upvalueindex(1));
	lua_insert(L, 1);
	errno = 0;
	status = lua_pcall(L, n, LUA_MULTRET, 0);
	e = errno;
	int failed = status != LUA_OK || lua_gettop(L) == 0 || !lua_toboolean(L, 1);
	if (failed && (e == EACCES || e == EPERM || e == EROFS || e == ENOSYS)) {
		char msg[512], rule[200];
		snprintf(msg, sizeof msg, "the kernel refused %s(%s): %s (%s); %s", what, arg,
			 strerror(e), errno_name(e), kernel_reason(e, what));
		return tp_lua_guard_refuse(L, TP_KIND_SANDBOX_VIOLATION,
					   kernel_rule(rule, sizeof rule, e, what, mode, path),
					   msg);
	}
	if (status != LUA_OK) {
		tp_lua_guard_status(L, status);
		return lua_error(L);
	}
	return lua_gettop(L);
}

/* ---- file grants: io.open and io.lines, checked against the policy's paths ---------- */

/* path made absolute-normalized in out ('.', '..', '//' resolved lexically; the
 * kernel resolves symlinks and holds the real line). 0, or -1 if not absolute. */
static int normalize(const char *path, char *out, size_t len)
{
	size_t n = 0;
	const char *p = path;

	if (path[0] != '/' || len < 2)
		return -1;
	out[n++] = '/';
	while (*p) {
		while (*p == '/')
			p++;
		const char *end = strchr(p, '/');
		size_t seg = end ? (size_t)(end - p) : strlen(p);
		if (seg == 0)
			break;
		if (seg == 1 && p[0] == '.') {
			/* nothing */
		} else if (seg == 2 && p[0] == '.' && p[1] == '.') {
			while (n > 1 && out[n - 1] != '/')
				n--; /* drop the last name ... */
			if (n > 1)
				n--; /* ... and the slash before it */
		} else {
			if (n > 1 && out[n - 1] != '/')
				out[n++] = '/';
			if (n + seg + 2 > len)
				return -1;
			memcpy(out + n, p, seg);
			n += seg;
		}
		p += seg;
	}
	if (n > 1 && out[n - 1] == '/')
		n--;
	out[n] = '\0';
	return 0;
}

#define WRITTEN_KEY "tidepool.written" /* files opened for writing: their paths */

/* upvalue 1: the stock function; upvalue 2: its name. */
static int file_shim(lua_State *L)
{
	const struct tp_policy *p = tp_sandbox_policy();
	const char *what = lua_tostring(L, lua_upvalueindex(2));
	const char *path = luaL_checkstring(L, 1);
	const char *mode = strcmp(what, "io.open") == 0 ? luaL_optstring(L, 2, "r") : "r";
	int write = strcmp(mode, "r") != 0 && strcmp(mode, "rb") != 0;
	char norm[4096], joined[4096], msg[600], rule[232];
	const char *ws = tp_sandbox_workspace();

	if (ws == NULL && p->fs_read.n == 0 && p->fs_write.n == 0) {
		snprintf(msg, sizeof msg,
			 "%s('%.200s') is refused: files are in a session's workspace, and this "
			 "exec has none (policy %s: open a session)",
			 what, path, p->name);
		snprintf(rule, sizeof rule, "filesystem.%s %.200s", write ? "write" : "read", path);
		return tp_lua_guard_refuse(L, TP_KIND_POLICY_VIOLATION, rule, msg);
	}
	/* In a session's workspace (its working directory), a relative path is in it. */
	if (ws != NULL && path[0] != '/' && path[0] != '\0') {
		snprintf(joined, sizeof joined, "%s/%s", ws, path);
		path = joined;
	}
	if (normalize(path, norm, sizeof norm) != 0) {
		snprintf(msg, sizeof msg,
			 "%s('%.200s') is refused: the sandbox takes absolute paths (policy %s)",
			 what, path, p->name);
		snprintf(rule, sizeof rule, "filesystem.%s %.200s", write ? "write" : "read", path);
		return tp_lua_guard_refuse(L, TP_KIND_POLICY_VIOLATION, rule, msg);
	}
	if (!(tp_policy_path_within(&p->fs_write, norm) || tp_sandbox_in_workspace(norm) ||
	      (!write && tp_policy_path_within(&p->fs_read, norm)))) {
		snprintf(
		    msg, sizeof msg,
		    "%s('%.200s'%s%s%s) is refused: outside the policy's %sfile grants (policy %s)",
		    what, path, write ? ", '" : "", write ? mode : "", write ? "'" : "",
		    write ? "writable " : "", p->name);
		snprintf(rule, sizeof rule, "filesystem.%s %.200s", write ? "write" : "read", norm);
		return tp_lua_guard_refuse(L, TP_KIND_POLICY_VIOLATION, rule, msg);
	}
	/* Past the shim, the kernel may still refuse (a symlink out of the grant):
	 * kernel_watch reports that as the kernel's refusal. */
	lua_pushvalue(L, lua_upvalueindex(1));
	lua_pushvalue(L, lua_upvalueindex(2));
	lua_pushcclosure(L, kernel_watch, 2);
	lua_insert(L, 1);
	lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
	if (write && luaL_testudata(L, 1, LUA_FILEHANDLE) != NULL) {
		/* Kept (weakly) with its path: flushed when the exec ends. */
		if (luaL_getsubtable(L, LUA_REGISTRYINDEX, WRITTEN_KEY) == 0) {
			lua_pushliteral(L, "k");
			lua_setfield(L, -2, "__mode");
			lua_pushvalue(L, -1);
			lua_setmetatable(L, -2);
		}
		lua_pushvalue(L, 1);
		lua_pushstring(L, norm);
		lua_rawset(L, -3);
		lua_pop(L, 1);
	}
	return lua_gettop(L);
}

int tp_lenv_flush_written(lua_State *L, char *msg, size_t len)
{
	int failed = 0;
	if (lua_getfield(L, LUA_REGISTRYINDEX, WRITTEN_KEY) != LUA_TTABLE) {
		lua_pop(L, 1);
		return 0;
	}
	lua_pushnil(L);
	while (lua_next(L, -2) != 0) {
		luaL_Stream *f = luaL_testudata(L, -2, LUA_FILEHANDLE);
		if (f != NULL && f->closef != NULL && f->f != NULL && fflush(f->f) != 0 &&
		    !failed) {
			int e = errno;
			const struct tp_policy *p = tp_sandbox_policy();
			uint64_t g = p->fs_write.n > 0 ? p->file_bytes : 0;
			uint64_t w =
			    tp_sandbox_workspace() != NULL ? p->session.workspace_bytes : 0;
			failed = 1;
			if (e == EFBIG)
				snprintf(msg, len,
					 "File too large: a file left open was cut at %" PRIu64
					 " bytes when the exec ended and flushed it (%s): '%.200s'",
					 w > g ? w : g,
					 w > g ? "session.workspace_bytes"
					       : "filesystem.file_bytes",
					 lua_tostring(L, -1));
			else
				snprintf(msg, len,
					 "%s: writing a file left open failed when the exec "
					 "ended: '%.200s'",
					 strerror(e), lua_tostring(L, -1));
		}
		lua_pop(L, 1);
	}
	lua_pop(L, 1);
	return failed;
}

/* io.open and io.lines, only when the policy grants paths. io on top. */
static void open_file_shims(lua_State *L)
{
	static const char *const fns[] = { "open", "lines" };
	const struct tp_policy *p = tp_sandbox_policy();
	if (p == NULL ||
	    (p->fs_read.n == 0 && p->fs_write.n == 0 && p->session.workspace_bytes == 0))
		return;
	luaL_requiref(L, "tidepool.io", luaopen_io, 0); /* the stock io, kept private */
	for (size_t i = 0; i < 2; i++) {
		char full[16];
		snprintf(full, sizeof full, "io.%s", fns[i]);
		lua_getfield(L, -1, fns[i]);
		lua_pushstring(L, full);
		lua_pushcclosure(L, file_shim, 2);
		lua_setfield(L, -3, fns[i]);
	}
	lua_pop(L, 1);
}

static void watch(lua_State *L, const char *lib, const char *fn)
{
	char full[64];
	if (strcmp(lib, "_G") == 0)
		lua_pushglobaltable(L);
	else
		lua_getglobal(L, lib);
	if (!lua_istable(L, -1)) {
		lua_pop(L, 1);
		return;
	}
	full_name(full, sizeof full, lib, fn);
	lua_getfield(L, -1, fn);
	lua_pushstring(L, full);
	lua_pushcclosure(L, kernel_watch, 2);
	lua_setfield(L, -2, fn);
	lua_pop(L, 1);
}

/* The whole standard library; only what keeps the limits is ours: output goes
 * to the capped buffer, pcall/xpcall cannot catch a limit, coroutines are
 * hooked, tostring shows no address. The kernel layer is the only wall. */
static int open_everything(lua_State *L)
{
	static const luaL_Reg base[] = { { "print", l_print },
					 { "tostring", l_tostring },
					 { "pcall", l_pcall },
					 { "xpcall", l_xpcall },
					 { NULL, NULL } };
	static const luaL_Reg co[] = { { "create", co_create },
				       { "resume", co_resume },
				       { "wrap", co_wrap },
				       { NULL, NULL } };
	static const char *const watched[][2] = {
		{ "io", "open" },    { "io", "lines" },   { "io", "popen" },    { "io", "input" },
		{ "io", "output" },  { "os", "execute" }, { "os", "remove" },   { "os", "rename" },
		{ "os", "tmpname" }, { "_G", "dofile" },  { "_G", "loadfile" }, { "_G", "require" },
	};

	luaL_openlibs(L);
	lua_getglobal(L, LUA_MATHLIBNAME);
	lua_getfield(L, -1, "randomseed");
	lua_setfield(L, LUA_REGISTRYINDEX, TP_LENV_SEED_KEY);
	lua_pop(L, 1);
	lua_pushglobaltable(L);
	lua_pushvalue(L, -1);
	luaL_setfuncs(L, base, 1);
	lua_getglobal(L, LUA_COLIBNAME);
	lua_pushvalue(L, -1);
	luaL_setfuncs(L, co, 1);
	lua_pop(L, 1);
	lua_getglobal(L, LUA_IOLIBNAME);
	lua_pushcfunction(L, l_io_write);
	lua_setfield(L, -2, "write");
	lua_pop(L, 1);
	lua_getglobal(L, LUA_OSLIBNAME);
	lua_pushcfunction(L, l_clock);
	lua_setfield(L, -2, "clock");
	lua_pop(L, 2);
	lua_createtable(L, 0, 3); /* json is tidepool's: every policy's */
	luaL_setfuncs(L, tp_ljson_lib, 0);
	lua_pushlightuserdata(L, NULL);
	lua_setfield(L, -2, "null");
	luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
	lua_pushvalue(L, -2);
	lua_setfield(L, -2, "json"); /* require("json") finds it too */
	lua_pop(L, 1);
	lua_setglobal(L, "json");
	for (size_t i = 0; i < sizeof watched / sizeof watched[0]; i++)
		watch(L, watched[i][0], watched[i][1]);
	new_ids(L); /* object ids */
	lua_setwarnf(L, warnf, NULL);
	return 0;
}

static int has_entries(lua_State *L)
{
	lua_pushnil(L);
	if (!lua_next(L, -2))
		return 0;
	lua_pop(L, 2);
	return 1;
}

/* Installs a fresh globals table holding exactly the allowlist. */
int tp_lenv_open(lua_State *L)
{
	const struct tp_policy *p = tp_sandbox_policy();
	if (p != NULL && !p->language_layer)
		return open_everything(L);
	S.memo_next = 0;
	lua_newtable(L); /* the snippet's _G */
	for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
		const struct lib *lib = &libs[i];
		int is_base = strcmp(lib->name, "_G") == 0;
		if (is_base)
			lua_pushvalue(L, -1);
		else
			lua_newtable(L);
		fill_lib(L, lib);
		if (strcmp(lib->name, LUA_IOLIBNAME) == 0)
			open_file_shims(L);
		if (strcmp(lib->name, "json") == 0 && !has_entries(L)) {
			lua_pop(L, 1); /* json, none of it allowed: no global, a refusal */
			continue;
		}
		luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
		lua_pushvalue(L, -2);
		lua_setfield(L, -2, lib->name); /* _LOADED holds what the snippet sees */
		lua_pop(L, 1);
		set_refusals(L, lib->name);
		if (is_base)
			lua_pop(L, 1);
		else
			lua_setfield(L, -2, lib->name);
	}
	lua_pushvalue(L, -1);
	lua_setfield(L, -2, "_G");
	lua_rawseti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
	lock_string_metatable(L);
	new_ids(L); /* object ids */
	lua_setwarnf(L, warnf, NULL);
	/* Every answer fitted: the next build reads them back (else it asks). */
	S.memo_done = S.memo_len < sizeof S.memo;
	return 0;
}
