/*
 * lenv.h — the snippet's environment (lenv.c), for the exec above it
 * (lsandbox.c). The environment calls down into the guard (lguard.h) and the
 * json module (ljsonlib.h), never up into the exec.
 *
 * Usage:
 *   1. In the zygote: lua_pcall tp_lenv_open (a lua_CFunction) once; it installs
 *      the allowlisted globals and locks the string metatable.
 *   2. During an exec, the replaced functions (print, pcall, coroutine.resume...)
 *      call the guard's tp_lua_guard_* functions (lguard.c).
 */
#ifndef TP_LENV_H
#define TP_LENV_H

#include <lauxlib.h>
#include <lua.h>

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

/* Pushes the pointer-free text of the value at idx ("table: #3"); may call __tostring. */
const char *tp_lenv_tostring(lua_State *L, int idx, size_t *len);

#endif
