/*
 * ljsonlib.c — the snippet's json module: json.encode, json.decode, json.null.
 * Built on ljson.c's converters under the exec's result caps (result_bytes,
 * result_depth): raw access only (no metamethod, __index, __pairs or
 * __tostring runs), the collector stopped while converting, and every refusal
 * an ordinary error the snippet can catch with pcall. A memory error is the
 * memory limit, as everywhere (tp_lua_guard_status). It calls down into the
 * guard (lguard.c) and ljson.c only; the environment (lenv.c) opens it.
 */
#include "ljsonlib.h"

#include <lauxlib.h>
#include <stdlib.h>

#include "err.h"
#include "jsonio.h"
#include "lguard.h"

/* Protected: [1] = a NUL-terminated malloc'd text, pushed as a string. */
static int push_text(lua_State *L)
{
	lua_pushstring(L, lua_touserdata(L, 1));
	return 1;
}

/* Protected: [1] = a json_t, pushed as Lua (null inside tables -> json.null). */
static int push_json(lua_State *L)
{
	struct tp_ljson_caps caps;

	tp_lua_guard_caps(&caps);
	tp_ljson_push_decoded(L, lua_touserdata(L, 1), caps.depth);
	return 1;
}

/* Runs f(p) protected so p is always freed by the caller; rethrows its error. */
static int call_protected(lua_State *L, lua_CFunction f, void *p)
{
	lua_pushcfunction(L, f);
	lua_pushlightuserdata(L, p);
	return lua_pcall(L, 1, 1, 0);
}

static int rethrow(lua_State *L, int status)
{
	tp_lua_guard_status(L, status); /* a memory error is the memory limit */
	return lua_error(L);
}

/* json.encode(value): its compact JSON text, as a returned value would be sent. */
static int l_encode(lua_State *L)
{
	struct tp_ljson_caps caps;
	struct tp_ljson_out out;
	char *text;
	int status;

	luaL_checkany(L, 1);
	lua_settop(L, 1);
	tp_lua_guard_caps(&caps);
	tp_ljson_from_lua(L, 1, &caps, &out);
	switch (out.fail) {
	case TP_LJSON_OK: break;
	case TP_LJSON_DEPTH:
		return luaL_error(L, "json.encode: value nested deeper than result_depth (%I)",
				  (LUAI_UACINT)caps.depth);
	case TP_LJSON_BYTES:
		return luaL_error(L, "json.encode: text longer than result_bytes (%I)",
				  (LUAI_UACINT)caps.bytes);
	case TP_LJSON_CYCLE: return luaL_error(L, "json.encode: cycle in value");
	case TP_LJSON_KEYS:
	case TP_LJSON_NUMBER: return luaL_error(L, "json.encode: %s", out.message);
	case TP_LJSON_LUAERR:
		tp_lua_guard_status(L, out.lua_status);
		return luaL_error(L, "json.encode: not enough memory");
	}
	text = tp_json_dumps(out.value, JSON_COMPACT | JSON_ENCODE_ANY);
	json_decref(out.value);
	if (text == NULL)
		return luaL_error(L, "json.encode: not enough memory");
	status = call_protected(L, push_text, text);
	free(text);
	return status == LUA_OK ? 1 : rethrow(L, status);
}

/* The deepest nesting of arrays and objects in a JSON text (brackets outside
 * strings), so a text nested past the cap is refused before jansson's parser
 * recurses into it. */
static size_t text_depth(const char *s, size_t n)
{
	size_t depth = 0, max = 0;
	int in_string = 0;

	for (size_t i = 0; i < n; i++) {
		if (in_string) {
			if (s[i] == '\\')
				i++;
			else if (s[i] == '"')
				in_string = 0;
		} else if (s[i] == '"') {
			in_string = 1;
		} else if (s[i] == '[' || s[i] == '{') {
			if (++depth > max)
				max = depth;
		} else if ((s[i] == ']' || s[i] == '}') && depth > 0) {
			depth--;
		}
	}
	return max;
}

/* json.decode(text): the Lua value of a JSON text of at most result_bytes,
 * nested at most result_depth; null inside an array or object is json.null. */
static int l_decode(lua_State *L)
{
	struct tp_ljson_caps caps;
	struct tp_err err = { 0 };
	size_t n;
	const char *s;
	json_t *v;
	int status;

	luaL_checktype(L, 1, LUA_TSTRING);
	s = lua_tolstring(L, 1, &n);
	tp_lua_guard_caps(&caps);
	if (n > caps.bytes)
		return luaL_error(L,
				  "json.decode: text of %I bytes is longer than result_bytes (%I)",
				  (LUAI_UACINT)n, (LUAI_UACINT)caps.bytes);
	if (text_depth(s, n) > caps.depth)
		return luaL_error(L, "json.decode: value nested deeper than result_depth (%I)",
				  (LUAI_UACINT)caps.depth);
	v = tp_json_loadb(s, n, JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES, &err);
	if (v == NULL) {
		if (tp_err_is_oom(&err))
			return luaL_error(L, "json.decode: not enough memory");
		return luaL_error(L, "json.decode: %s", err.msg);
	}
	lua_settop(L, 1);
	status = call_protected(L, push_json, v);
	json_decref(v);
	return status == LUA_OK ? 1 : rethrow(L, status);
}

const luaL_Reg tp_ljson_lib[] = { { "encode", l_encode }, { "decode", l_decode }, { NULL, NULL } };
