/*
 * lguard.c — the bottom of the Lua layer: one exec's bookkeeping, the sticky
 * verdict, the instruction hook and the guard the environment calls (lguard.h).
 * Invariant: once a limit trips (a sticky C flag, first one wins) no more snippet
 * code runs — the hook raises at every step, the wrappers rethrow, the GC stops —
 * and the verdict comes from that flag, never from an error value. It calls
 * only sandbox/, common/, lalloc.c and Lua: nothing above it in lua-sandbox/.
 */
#include "lguard.h"

#include <stdio.h>
#include <string.h>

#define HOOK_ALL (LUA_MASKCOUNT | LUA_MASKCALL | LUA_MASKRET | LUA_MASKLINE)
#define MAIN_CHUNK TP_LUA_MAIN_CHUNK
#define CO_CHUNK 100        /* per hook of a coroutine (its rest is lost at death) */
#define RESERVE (64u << 10) /* heap lent to tracebacks and the result conversion */

/* This file's state. tp_lua_x is the exec's bookkeeping, rebuilt per exec by
 * lsandbox.c's begin(); its running and charged fields are the SIGPROF
 * handler's (volatile, lguard.h). g_L and g_alloc are written by
 * tp_lua_guard_init() whenever the state is built (in the zygote before any
 * worker; in a state worker between execs), and only read otherwise. They stay
 * globals, not a struct: the handler reads g_alloc (tp_lua_guard_publish), and
 * g_L alone would be a struct of one. */
struct tp_lua_exec tp_lua_x;
static lua_State *g_L;            /* the pristine state's main thread (lsandbox.c's) */
static struct tp_lalloc *g_alloc; /* its allocator (lsandbox.c's) */

void tp_lua_guard_init(lua_State *main, struct tp_lalloc *alloc)
{
	g_L = main;
	g_alloc = alloc;
}

/* ---- the sticky verdict -------------------------------------------------------- */

static void hook(lua_State *L, lua_Debug *ar);

/* Async-signal-safe (tp_verdict calls it from the CPU timer's handler). */
void tp_lua_guard_publish(struct tp_shm *shm)
{
	shm->instructions = tp_lua_x.charged;
	shm->mem_peak = g_alloc->peak;
	shm->cpu_us = tp_verdict_cpu_us();
}

/* Async-signal-safe: every further step of the running thread raises. */
static void interrupt(void)
{
	lua_State *T = tp_lua_x.running;
	if (T != NULL)
		lua_sethook(T, hook, HOOK_ALL, 1); /* lua_sethook is signal-safe */
}

const struct tp_verdict_ops tp_lua_verdict_ops = { tp_lua_guard_publish, interrupt };

static int tripped(void)
{
	return tp_verdict_kind() != TP_KIND_NONE;
}

void tp_lua_guard_trip(enum tp_kind kind, enum tp_limit_id id, uint64_t limit, uint64_t used)
{
	tp_verdict_trip(kind, (int)id, limit, used);
}

void tp_lua_guard_trip_memory(void)
{
	uint64_t used = g_alloc->refused_total ? g_alloc->refused_total : g_alloc->current;

	/* kernel-only: malloc failed at the worker's RLIMIT_AS, which counts the
	 * address space (more than the Lua heap): at least the limit was used. */
	if (tp_lua_x.kernel && used < tp_lua_x.lim.memory_bytes)
		used = tp_lua_x.lim.memory_bytes;
	tp_lua_guard_trip(TP_KIND_MEMORY_LIMIT, TP_LIMIT_MEMORY_BYTES, tp_lua_x.lim.memory_bytes,
			  used);
}

void tp_lua_guard_lend(int on)
{
	if (tp_lua_x.lim.memory_bytes != 0 && !tp_lua_x.kernel)
		tp_lalloc_set_limit(g_alloc, tp_lua_x.lim.memory_bytes + (on ? RESERVE : 0));
}

/* ---- instruction hook --------------------------------------------------------- */

int tp_lua_guard_charge(lua_State *L, uint64_t chunk)
{
	uint64_t left = tp_lua_x.lim.instructions - tp_lua_x.charged;

	if (left == 0)
		return 0;
	if (chunk > left)
		chunk = left;
	tp_lua_x.charged += chunk;
	tp_lua_guard_publish(tp_lua_x.shm);
	lua_sethook(L, hook, LUA_MASKCOUNT, (int)chunk);
	return 1;
}

static void trip_instructions(void)
{
	tp_lua_guard_trip(TP_KIND_INSTRUCTION_LIMIT, TP_LIMIT_INSTRUCTIONS,
			  tp_lua_x.lim.instructions, tp_lua_x.charged);
}

/* Our C message handlers must run after a trip: they only read the stack. */
static int calls_handler(lua_State *L, lua_Debug *ar)
{
	lua_CFunction f;

	if (!lua_getinfo(L, "f", ar))
		return 0;
	f = lua_tocfunction(L, -1);
	lua_pop(L, 1);
	return f == tp_lua_guard_msgh || f == tp_lua_guard_xpcall_msgh;
}

static void hook(lua_State *L, lua_Debug *ar)
{
	if (!tripped()) {
		if (ar->event != LUA_HOOKCOUNT)
			return;
		if (tp_lua_guard_charge(L, L == g_L ? MAIN_CHUNK : CO_CHUNK))
			return;
		trip_instructions();
	}
	if (ar->event == LUA_HOOKCALL && calls_handler(L, ar))
		return;
	tp_lua_guard_raise(L);
}

/* ---- the guard the environment calls ------------------------------------------- */

int tp_lua_guard_tripped(void)
{
	return tripped();
}

int tp_lua_guard_raise(lua_State *L)
{
	/* Every further step of this thread raises again, and no finalizer runs. */
	lua_sethook(L, hook, HOOK_ALL, 1);
	lua_gc(L, LUA_GCSTOP);
	if (tp_verdict_kind() == TP_KIND_POLICY_VIOLATION ||
	    tp_verdict_kind() == TP_KIND_SANDBOX_VIOLATION)
		lua_pushstring(L, tp_lua_x.refusal);
	else
		lua_pushstring(L, tp_limit_message((int)tp_lua_x.shm->tripped_limit));
	return lua_error(L);
}

int tp_lua_guard_refuse(lua_State *L, enum tp_kind kind, const char *rule, const char *msg)
{
	if (tp_lua_x.shm == NULL) /* in the zygote: a bug, not a snippet */
		return luaL_error(L, "%s", msg);
	if (!tripped()) {
		tp_shm_rule(tp_lua_x.shm, rule);
		snprintf(tp_lua_x.refusal, sizeof tp_lua_x.refusal, "%s", msg);
		tp_shm_note(tp_lua_x.shm, msg);
		tp_lua_guard_trip(kind, (enum tp_limit_id) - 1, 0, 0);
	}
	return tp_lua_guard_raise(L);
}

void tp_lua_guard_status(lua_State *L, int status)
{
	if (status == LUA_ERRMEM)
		tp_lua_guard_trip_memory(); /* sticky even when a pcall would have caught it */
	if (tripped())
		tp_lua_guard_raise(L);
	if (status == LUA_ERRERR)
		lua_error(L);
}

void tp_lua_guard_caps(struct tp_ljson_caps *caps)
{
	caps->depth = tp_lua_x.lim.result_depth;
	caps->bytes = tp_lua_x.lim.result_bytes;
	caps->nonfinite = 0; /* json.encode refuses them, as JSON has none */
}

void tp_lua_guard_thread(lua_State *L, lua_State *co)
{
	if (tripped())
		tp_lua_guard_raise(L);
	/* A new thread copies its creator's hook; give it its own precharged chunk
	 * so the count stays an upper bound whatever the thread leaves unused. */
	if (tp_lua_x.lim.instructions != 0 && !tp_lua_guard_charge(co, CO_CHUNK)) {
		trip_instructions();
		tp_lua_guard_raise(L);
	}
}

lua_State *tp_lua_guard_enter(lua_State *co)
{
	lua_State *prev = tp_lua_x.running;

	tp_lua_x.running = co;
	return prev;
}

void tp_lua_guard_leave(lua_State *prev)
{
	tp_lua_x.running = prev;
}

void tp_lua_guard_write(lua_State *L, enum tp_stream s, const char *buf, size_t n)
{
	lua_State *T = tp_lua_x.running;

	if (tp_lua_x.shm == NULL || tripped()) /* nothing is written after a limit */
		return;
	if (tp_shm_write(tp_lua_x.shm, s, buf, n) == 0)
		return;
	tp_lua_guard_trip(TP_KIND_OUTPUT_LIMIT, TP_LIMIT_OUTPUT_BYTES, tp_lua_x.lim.output_bytes,
			  tp_lua_x.shm->wanted);
	if (L != NULL)
		tp_lua_guard_raise(L);
	else if (T != NULL)
		lua_sethook(T, hook, HOOK_ALL, 1); /* maybe inside the GC: raise at the next step */
}

/* ---- message handlers ---------------------------------------------------------------- */

/* The line of the innermost frame of the snippet's own chunk, or -1. */
static int snippet_line(lua_State *L)
{
	lua_Debug ar;

	for (int level = 1; lua_getstack(L, level, &ar); level++)
		if (lua_getinfo(L, "Sl", &ar) && ar.currentline > 0 &&
		    strcmp(ar.source, TP_LUA_CHUNKNAME) == 0)
			return ar.currentline;
	return -1;
}

/* Keeps the first traceback and line; leaves the error value as it is. */
int tp_lua_guard_msgh(lua_State *L)
{
	if (tp_lua_x.err_line < 0)
		tp_lua_x.err_line = snippet_line(L);
	if (!tp_lua_x.have_tb) {
		tp_lua_x.have_tb = 1;
		tp_lua_guard_lend(1);
		luaL_traceback(L, L, NULL, 1);
		tp_lua_x.tb_ref = luaL_ref(L, LUA_REGISTRYINDEX); /* read back without allocating */
		tp_lua_guard_lend(0);
	}
	return 1;
}

int tp_lua_guard_xpcall_msgh(lua_State *L)
{
	if (tp_lua_guard_tripped())
		return 1;
	lua_pushvalue(L, lua_upvalueindex(1));
	lua_insert(L, 1);
	lua_call(L, lua_gettop(L) - 1, 1);
	return 1;
}
