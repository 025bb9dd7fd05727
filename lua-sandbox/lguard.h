/*
 * lguard.h — the bottom of the Lua layer: one exec's bookkeeping and the guard
 * that owns its limits (lguard.c). Everything above calls it: the environment
 * (lenv.c), the json module (ljsonlib.c) and the exec (lsandbox.c). It calls
 * nothing of theirs: lsandbox.c hands it the pristine state and its allocator
 * (tp_lua_guard_init), and every C message handler it must let run after a
 * trip is its own.
 *
 * Usage:
 *   1. lsandbox.c: tp_lua_guard_init(L, alloc) whenever it builds the state;
 *      at each exec's start it fills tp_lua_x and starts the verdict with
 *      tp_lua_verdict_ops.
 *   2. During an exec, the replaced functions (print, pcall, coroutine.resume...)
 *      and the json module call the tp_lua_guard_* functions below.
 */
#ifndef TP_LGUARD_H
#define TP_LGUARD_H

#include "ljson.h"

#include <lauxlib.h>
#include <lua.h>

#include "lalloc.h"
#include "limit.h"
#include "shm.h"
#include "verdict.h"

#define TP_LUA_MAIN_CHUNK 1000 /* instructions charged per hook of the main thread */
#define TP_LUA_CHUNKNAME "=snippet"

/* One exec's bookkeeping, rebuilt by lsandbox.c's begin() for every exec (of
 * any isolation, a session's too): nothing of it passes from one exec to the
 * next. What the environment keeps for the exec's state is lenv.c's struct
 * exec_env (tostring's numbering, warn()'s switch, os.clock()'s origin),
 * rebuilt there; the rest of an exec's doing is in the state, which isolation
 * "state" replaces (lsandbox.c tp_lua_reset). */
struct tp_lua_exec {
	struct tp_shm *shm;          /* the request's page; NULL outside an exec */
	struct tp_limits lim;        /* the request's limits */
	lua_State *volatile running; /* the thread the SIGPROF handler hooks */
	volatile uint64_t charged;   /* instructions charged so far */
	int err_line;                /* snippet line of the first error the handler saw */
	int have_tb;                 /* a traceback was kept */
	int tb_ref;                  /* registry ref of that traceback, or LUA_NOREF */
	char refusal[512];           /* the message of a policy or kernel refusal */
	int kernel; /* no language layer: the kernel holds memory_bytes, the heap has no limit */
	char conv_message[TP_LJSON_MESSAGE_MAX]; /* a result error's message */
};
extern struct tp_lua_exec tp_lua_x;

/* The state's main thread (its hook charges the larger chunk) and the allocator
 * whose limit and peak are the exec's; again whenever the state is rebuilt. */
void tp_lua_guard_init(lua_State *main, struct tp_lalloc *alloc);
/* For tp_verdict_begin: the usage it publishes, the interrupt of the running thread. */
extern const struct tp_verdict_ops tp_lua_verdict_ops;

/* ---- for the exec (lsandbox.c) ---- */
/* Async-signal-safe: the usage so far into the page. */
void tp_lua_guard_publish(struct tp_shm *shm);
void tp_lua_guard_trip(enum tp_kind kind, enum tp_limit_id id, uint64_t limit, uint64_t used);
void tp_lua_guard_trip_memory(void);
/* Lends the heap 64 KiB above the limit (on) or takes them back (off): for
 * tracebacks and the result's conversion. */
void tp_lua_guard_lend(int on);
/* Precharges the next chunk of instructions and hooks L for it; 0 when nothing remains. */
int tp_lua_guard_charge(lua_State *L, uint64_t chunk);
/* The exec's message handler (index 1 for the whole exec): keeps the first
 * traceback and snippet line, leaves the error value as it is. */
int tp_lua_guard_msgh(lua_State *L);

/* ---- for the environment (lenv.c, ljsonlib.c) ---- */
/* A refusal (kind policy_violation or sandbox_violation): sticky like a limit,
 * msg is its message; never returns. */
/* rule: error.rule (docs/protocol.md), e.g. "lua.functions:os.execute", or
 * "RULE PATH" for a refused path. */
int tp_lua_guard_refuse(lua_State *L, enum tp_kind kind, const char *rule, const char *msg);
int tp_lua_guard_tripped(void);
/* Arms the stop-everything hook on L, stops the GC and raises; never returns. */
int tp_lua_guard_raise(lua_State *L);
/* After a protected call returned `status` with its error value on top of L:
 * records a memory limit on LUA_ERRMEM, and rethrows when a limit tripped or
 * status is LUA_ERRMEM/LUA_ERRERR. Returns only when the error may be caught. */
void tp_lua_guard_status(lua_State *L, int status);
/* Gives a new coroutine its own hook and precharged chunk; raises when tripped. */
void tp_lua_guard_thread(lua_State *L, lua_State *co);
/* Marks co as the running thread; returns the one it replaces. */
lua_State *tp_lua_guard_enter(lua_State *co);
void tp_lua_guard_leave(lua_State *prev);
/* The exec's result caps (result_depth, result_bytes): json.encode/decode's too. */
void tp_lua_guard_caps(struct tp_ljson_caps *caps);
/* Appends output. On overflow trips output_limit and, when L is not NULL, raises;
 * with L NULL (warnings, maybe inside the GC) the next hook event raises. */
void tp_lua_guard_write(lua_State *L, enum tp_stream s, const char *buf, size_t n);
/* The C message handler xpcall installs around the caller's handler (upvalue 1):
 * after a trip it runs nothing of the caller's. */
int tp_lua_guard_xpcall_msgh(lua_State *L);

#endif
