/*
 * ljson.h — Lua values to JSON (the returned value) and JSON to Lua (inputs),
 * both under a depth cap, with raw access only: no metamethod ever runs.
 *
 * Usage:
 *   1. Lua -> JSON: push the n values, then tp_ljson_from_lua(L, n, &caps, &out).
 *      It pops them, converts inside a protected call and fills out.
 *   2. JSON -> Lua: tp_ljson_push(L, v, max_depth) inside a protected call; it
 *      raises a Lua error ("input nested deeper than N") or a memory error.
 *   3. tp_ljson_string() makes a JSON string of any bytes (invalid UTF-8 -> U+FFFD).
 */
#ifndef TP_LJSON_H
#define TP_LJSON_H

/* The Makefile's -Ihost makes <limits.h> name host/limits.h, hiding the C
 * library's from luaconf.h (it then refuses to build). Until the Makefile uses
 * -iquote, give luaconf.h the limits it reads, from the compiler's own macros. */
#ifndef INT_MAX
#define INT_MAX __INT_MAX__
#define UINT_MAX (INT_MAX * 2U + 1U)
#define LLONG_MAX __LONG_LONG_MAX__
#define LLONG_MIN (-LLONG_MAX - 1LL)
#define ULLONG_MAX (LLONG_MAX * 2ULL + 1ULL)
#endif
#include <jansson.h>
#include <lua.h>
#include <stddef.h>
#include <stdint.h>

struct tp_ljson_caps {
	uint64_t depth; /* tables nested deeper than this are refused; the top table is depth 1 */
	uint64_t bytes; /* compact JSON text longer than this is refused */
};

enum tp_ljson_fail {
	TP_LJSON_OK = 0,
	TP_LJSON_DEPTH, /* used = depth reached (depth cap + 1) */
	TP_LJSON_BYTES, /* used = JSON bytes counted when the conversion stopped */
	TP_LJSON_CYCLE, /* a table contains itself */
	TP_LJSON_LUAERR /* a Lua error (memory) inside the conversion; status in lua_status */
};

struct tp_ljson_out {
	json_t *value; /* new reference, set only when fail == TP_LJSON_OK */
	enum tp_ljson_fail fail;
	uint64_t used;
	int lua_status; /* status of the protected call (LUA_OK unless TP_LJSON_LUAERR) */
};

/* Pops the n top values. None -> null, one -> its JSON, several -> an array
 * (the array does not count as a level of depth, its bytes do count). */
void tp_ljson_from_lua(lua_State *L, int n, const struct tp_ljson_caps *caps, struct tp_ljson_out *out);

/* Pushes the Lua form of v: null -> nil, arrays -> tables 1..n, objects -> tables. */
void tp_ljson_push(lua_State *L, const json_t *v, uint64_t max_depth);

/* A JSON string of n bytes (NUL allowed); each byte that does not begin a valid
 * UTF-8 sequence becomes U+FFFD. NULL only when out of C memory. */
json_t *tp_ljson_string(const char *s, size_t n);

/* Bytes s[0..n) repaired into out (room for 3*n bytes); returns the new length. */
size_t tp_ljson_utf8_fix(const char *s, size_t n, char *out);

#endif
