/*
 * ljsonlib.h — the snippet's json module (ljsonlib.c), which the environment
 * (lenv.c) opens. It calls down into the guard (lguard.h) and the converters
 * (ljson.h), never up into the environment or the exec.
 */
#ifndef TP_LJSONLIB_H
#define TP_LJSONLIB_H

#include <lauxlib.h>

/* json.encode and json.decode; json.null is the light userdata NULL. */
extern const luaL_Reg tp_ljson_lib[];

#endif
