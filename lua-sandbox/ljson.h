/*
 * ljson.h — Lua values to JSON (the returned value) and JSON to Lua (inputs),
 * both under a depth cap, with raw access only: no metamethod ever runs.
 *
 * Usage:
 *   1. Lua -> JSON: push the n values, then tp_ljson_from_lua(L, n, &caps, &out).
 *      It pops them, converts inside a protected call (collector stopped) and
 *      fills out. Nothing is dropped: a table that is not exactly 1..n is an
 *      object whose keys are sorted (integers by value, then the others by the
 *      bytes of their text), so the text does not follow the hash seed; two keys
 *      with one JSON text (1 and "1") give TP_LJSON_KEYS, NaN and the
 *      infinities TP_LJSON_NUMBER, each with out.message for the user.
 *   2. JSON -> Lua: tp_ljson_push(L, v, max_depth) inside a protected call; it
 *      raises a Lua error ("input nested deeper than N") or a memory error.
 *   3. Strings go through common/utf8.h: invalid UTF-8 becomes U+FFFD.
 *   4. json.null, the light userdata NULL, is JSON null wherever it is (Lua ->
 *      JSON); tp_ljson_push_decoded gives it for a null inside an array or an
 *      object (json.decode), so arrays keep their length.
 */
#ifndef TP_LJSON_H
#define TP_LJSON_H

#include <jansson.h>
#include <lua.h>
#include <stddef.h>
#include <stdint.h>

struct tp_ljson_caps {
	uint64_t depth; /* tables nested deeper than this are refused; the top table is depth 1 */
	uint64_t bytes; /* compact JSON text longer than this is refused */
	int nonfinite;  /* NaN and the infinities become null, named in out.nonfinite
			 * (the exec's value); 0: refused as TP_LJSON_NUMBER */
};

enum tp_ljson_fail {
	TP_LJSON_OK = 0,
	TP_LJSON_DEPTH,  /* used = depth reached (depth cap + 1) */
	TP_LJSON_BYTES,  /* used = JSON bytes counted when the conversion stopped */
	TP_LJSON_CYCLE,  /* a table contains itself */
	TP_LJSON_LUAERR, /* a Lua error (memory) inside the conversion; status in lua_status */
	TP_LJSON_KEYS,   /* two keys of one table have one JSON text; message names them */
	TP_LJSON_NUMBER  /* NaN or an infinity, which JSON has no number for; message says which */
};

#define TP_LJSON_MESSAGE_MAX 320

struct tp_ljson_out {
	json_t *value; /* new reference, set only when fail == TP_LJSON_OK */
	enum tp_ljson_fail fail;
	uint64_t used;
	int lua_status; /* status of the protected call (LUA_OK unless TP_LJSON_LUAERR) */
	char message[TP_LJSON_MESSAGE_MAX]; /* for KEYS and NUMBER, UTF-8; else "" */
	json_t *nonfinite; /* new reference or NULL: {JSON pointer: "nan"|"inf"|"-inf"} */
};

/* Pops the n top values. None -> null, one -> its JSON, several -> an array
 * (the array does not count as a level of depth, its bytes do count). */
void tp_ljson_from_lua(lua_State *L, int n, const struct tp_ljson_caps *caps,
		       struct tp_ljson_out *out);

/* Pushes the Lua form of v: null -> nil, arrays -> tables 1..n, objects -> tables. */
void tp_ljson_push(lua_State *L, const json_t *v, uint64_t max_depth);
/* The same for json.decode: a null inside a table -> json.null (the top one is nil);
 * deeper than max_depth raises "json.decode: value nested deeper than result_depth (N)". */
void tp_ljson_push_decoded(lua_State *L, const json_t *v, uint64_t max_depth);

#endif
