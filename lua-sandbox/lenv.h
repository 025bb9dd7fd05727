/*
 * lenv.h — the contract between the snippet's environment (lenv.c) and the
 * exec guard that owns the limits (lsandbox.c).
 *
 * Usage:
 *   1. In the zygote: lua_pcall tp_lenv_open (a lua_CFunction) once; it installs
 *      the allowlisted globals and locks the string metatable.
 *   2. During an exec, the replaced functions (print, pcall, coroutine.resume...)
 *      call the tp_lua_guard_* functions below, which lsandbox.c provides.
 */
#ifndef TP_LENV_H
#define TP_LENV_H

#include "ljson.h"

#include <lauxlib.h>
#include <lua.h>

#include "shm.h"

/* Registry key of the stock math.randomseed, for reseeding each worker. */
#define TP_LENV_SEED_KEY "tidepool.randomseed"

/* Environment (lenv.c). */
int tp_lenv_open(lua_State *L);
/* Flushes the files the snippet opened for writing and left open; 1 with msg
 * (the first that failed: a file cut at its size limit) or 0. */
int tp_lenv_flush_written(lua_State *L, char *msg, size_t len);

/* Rebuilds what the environment keeps outside L for it (lenv.c, struct
 * exec_env: tostring's numbering, warn()'s switch, os.clock()'s origin) as a
 * fresh state has it; when an exec starts on a state no exec used. Allocates
 * one table in L: call it with no memory limit set. */
void tp_lenv_exec_reset(lua_State *L);

/* json.encode and json.decode (ljsonlib.c); json.null is the light userdata NULL. */
extern const luaL_Reg tp_ljson_lib[];
/* The C message handler xpcall installs around the caller's handler. */
int tp_lenv_xpcall_msgh(lua_State *L);
/* Pushes the pointer-free text of the value at idx ("table: #3"); may call __tostring. */
const char *tp_lenv_tostring(lua_State *L, int idx, size_t *len);

/* Guard (lsandbox.c). */
/* A refusal (kind policy_violation or sandbox_violation): sticky like a limit,
 * msg is its message; never returns. */
int tp_lua_guard_refuse(lua_State *L, enum tp_kind kind, const char *msg);
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
/* Appends output. On overflow trips output_limit and, when L is not NULL, raises;
 * with L NULL (warnings, maybe inside the GC) the next hook event raises. */
/* The exec's result caps (result_depth, result_bytes): json.encode/decode's too. */
void tp_lua_guard_caps(struct tp_ljson_caps *caps);
void tp_lua_guard_write(lua_State *L, enum tp_stream s, const char *buf, size_t n);

#endif
