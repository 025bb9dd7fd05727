/*
 * ljson.c — conversion between Lua values and jansson values, both directions.
 * Invariants: only raw access (lua_next/lua_rawgeti), so no metamethod runs;
 * every json_t is attached to the result tree as soon as it exists, so a Lua
 * error inside the protected conversion leaks nothing (the caller frees the tree).
 */
#include "ljson.h"

#include "utf8.h"

#include <lauxlib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PATH 256 /* tables on the current path; caps->depth is clamped below it */

/* Bytes of the compact JSON text of s once repaired, quotes included. */
static uint64_t string_bytes(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	uint64_t b = 2;

	for (size_t i = 0, k; i < n; i += k) {
		k = tp_utf8_seq_len(p + i, n - i);
		if (k == 0)
			b += 3, k = 1;
		else if (p[i] == '"' || p[i] == '\\')
			b += 2;
		else if (p[i] < 0x20)
			b += strchr("\b\f\n\r\t", p[i]) && p[i] ? 2 : 6;
		else
			b += k;
	}
	return b;
}

/* ---- Lua -> JSON ----------------------------------------------------------- */

struct conv {
	const struct tp_ljson_caps *caps;
	uint64_t max_depth;
	uint64_t bytes;
	enum tp_ljson_fail fail;
	uint64_t used;
	json_t *root; /* owns everything built so far */
	int npath;
	const void *path[MAX_PATH];
};

static int conv_value(lua_State *L, struct conv *c, int idx, uint64_t depth, json_t *parent,
		      const char *key, size_t klen);

static int add_bytes(struct conv *c, uint64_t n)
{
	c->bytes += n;
	if (c->bytes <= c->caps->bytes)
		return 0;
	c->fail = TP_LJSON_BYTES;
	c->used = c->bytes;
	return -1;
}

/* Steals v. The key is repaired in a temporary that dies before any Lua call. */
static int set_key(json_t *obj, const char *key, size_t klen, json_t *v)
{
	char *buf;
	int rc;

	if (tp_utf8_valid(key, klen))
		return json_object_setn_new(obj, key, klen, v);
	buf = malloc(3 * klen);
	if (buf == NULL) {
		json_decref(v);
		return -1;
	}
	rc = json_object_setn_new(obj, buf, tp_utf8_fix(key, klen, buf), v);
	free(buf);
	return rc;
}

/* Hands v (stolen) to its parent, or makes it the root, before anything else can fail. */
static void attach(lua_State *L, struct conv *c, json_t *parent, const char *key, size_t klen,
		   json_t *v)
{
	int rc = 0;

	if (v == NULL)
		luaL_error(L, "out of memory building the result");
	if (parent == NULL)
		c->root = v;
	else if (json_is_array(parent))
		rc = json_array_append_new(parent, v);
	else
		rc = set_key(parent, key, klen, v);
	if (rc != 0)
		luaL_error(L, "out of memory building the result");
}

/* n > 0 when the keys are exactly 1..n, else 0 (an object). */
static lua_Integer array_length(lua_State *L, int idx)
{
	lua_Integer count = 0, max = 0;

	lua_pushnil(L);
	while (lua_next(L, idx)) {
		lua_pop(L, 1);
		if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1) {
			lua_pop(L, 1);
			return 0;
		}
		count++;
		if (lua_tointeger(L, -1) > max)
			max = lua_tointeger(L, -1);
	}
	return max == count ? count : 0;
}

static int fill_array(lua_State *L, struct conv *c, int idx, uint64_t depth, json_t *arr,
		      lua_Integer n)
{
	for (lua_Integer i = 1; i <= n; i++) {
		if (i > 1 && add_bytes(c, 1))
			return -1;
		lua_rawgeti(L, idx, i);
		int rc = conv_value(L, c, lua_gettop(L), depth + 1, arr, NULL, 0);
		lua_pop(L, 1);
		if (rc)
			return -1;
	}
	return 0;
}

/* The text of a key that is not a string; strings are used as they are. */
static const char *key_text(lua_State *L, int idx, char *buf, size_t size, size_t *len)
{
	switch (lua_type(L, idx)) {
	case LUA_TSTRING: return lua_tolstring(L, idx, len);
	case LUA_TNUMBER:
		if (lua_isinteger(L, idx))
			snprintf(buf, size, "%lld", (long long)lua_tointeger(L, idx));
		else
			snprintf(buf, size, "%.17g", (double)lua_tonumber(L, idx));
		break;
	case LUA_TBOOLEAN:
		snprintf(buf, size, "%s", lua_toboolean(L, idx) ? "true" : "false");
		break;
	default: snprintf(buf, size, "<%s>", lua_typename(L, lua_type(L, idx)));
	}
	*len = strlen(buf);
	return buf;
}

static int fill_object(lua_State *L, struct conv *c, int idx, uint64_t depth, json_t *obj)
{
	int first = 1;

	lua_pushnil(L);
	while (lua_next(L, idx)) {
		char buf[64];
		size_t klen;
		const char *key = key_text(L, -2, buf, sizeof buf, &klen);
		/* A comma, the key and a colon. */
		if (add_bytes(c, (first ? 0 : 1) + string_bytes(key, klen) + 1) ||
		    conv_value(L, c, lua_gettop(L), depth + 1, obj, key, klen)) {
			lua_pop(L, 2);
			return -1;
		}
		first = 0;
		lua_pop(L, 1);
	}
	return 0;
}

static int conv_table(lua_State *L, struct conv *c, int idx, uint64_t depth, json_t *parent,
		      const char *key, size_t klen)
{
	const void *p = lua_topointer(L, idx);
	lua_Integer n;
	json_t *v;
	int rc;

	for (int i = 0; i < c->npath; i++)
		if (c->path[i] == p) {
			c->fail = TP_LJSON_CYCLE;
			return -1;
		}
	if (depth > c->max_depth) {
		c->fail = TP_LJSON_DEPTH;
		c->used = depth;
		return -1;
	}
	if (add_bytes(c, 2))
		return -1;
	luaL_checkstack(L, 6, "result nested too deep");
	n = array_length(L, idx);
	v = n > 0 ? json_array() : json_object(); /* an empty table is {} */
	attach(L, c, parent, key, klen, v);
	c->path[c->npath++] = p;
	rc = n > 0 ? fill_array(L, c, idx, depth, v, n) : fill_object(L, c, idx, depth, v);
	c->npath--;
	return rc;
}

static json_t *number_json(lua_State *L, int idx, uint64_t *bytes)
{
	char buf[64];

	if (lua_isinteger(L, idx)) {
		long long i = (long long)lua_tointeger(L, idx);
		*bytes = (uint64_t)snprintf(buf, sizeof buf, "%lld", i);
		return json_integer((json_int_t)i);
	}
	double d = (double)lua_tonumber(L, idx);
	if (!isfinite(d)) { /* JSON has no NaN or infinity */
		*bytes = 4;
		return json_null();
	}
	*bytes = (uint64_t)snprintf(buf, sizeof buf, "%.17g", d) + 2; /* jansson may add ".0" */
	return json_real(d);
}

static int conv_value(lua_State *L, struct conv *c, int idx, uint64_t depth, json_t *parent,
		      const char *key, size_t klen)
{
	uint64_t bytes = 4;
	json_t *v;
	const char *s;
	size_t n;
	char buf[32];

	switch (lua_type(L, idx)) {
	case LUA_TTABLE: return conv_table(L, c, idx, depth, parent, key, klen);
	case LUA_TNIL: v = json_null(); break;
	case LUA_TBOOLEAN:
		v = json_boolean(lua_toboolean(L, idx));
		bytes = lua_toboolean(L, idx) ? 4 : 5;
		break;
	case LUA_TNUMBER: v = number_json(L, idx, &bytes); break;
	case LUA_TSTRING:
		s = lua_tolstring(L, idx, &n);
		if (add_bytes(c, string_bytes(s, n)))
			return -1;
		attach(L, c, parent, key, klen, tp_utf8_json(s, n));
		return 0;
	default: /* functions, threads, userdata: their type name, never an address */
		snprintf(buf, sizeof buf, "<%s>", lua_typename(L, lua_type(L, idx)));
		v = json_string(buf);
		bytes = strlen(buf) + 2;
	}
	if (add_bytes(c, bytes)) {
		json_decref(v);
		return -1;
	}
	attach(L, c, parent, key, klen, v);
	return 0;
}

/* The protected body: [1] = struct conv *, [2..] = the values. */
static int conv_main(lua_State *L)
{
	struct conv *c = lua_touserdata(L, 1);
	int n = lua_gettop(L) - 1;
	json_t *arr;

	if (n == 1)
		return conv_value(L, c, 2, 1, NULL, NULL, 0), 0;
	if (n == 0) {
		if (add_bytes(c, 4) == 0)
			attach(L, c, NULL, NULL, 0, json_null());
		return 0;
	}
	if (add_bytes(c, 2 + (uint64_t)(n - 1)))
		return 0;
	arr = json_array();
	attach(L, c, NULL, NULL, 0, arr);
	for (int i = 2; i <= n + 1; i++)
		if (conv_value(L, c, i, 1, arr, NULL, 0))
			break;
	return 0;
}

void tp_ljson_from_lua(lua_State *L, int n, const struct tp_ljson_caps *caps,
		       struct tp_ljson_out *out)
{
	struct conv c = { .caps = caps };
	int status;

	c.max_depth = caps->depth < MAX_PATH - 1 ? caps->depth : MAX_PATH - 1;
	/* Two pushes below: after a call that returned all its results there may be
	 * no free slot (API rule: the caller reserves). */
	if (!lua_checkstack(L, 2)) {
		lua_pop(L, n);
		*out = (struct tp_ljson_out){ .lua_status = LUA_ERRMEM, .fail = TP_LJSON_LUAERR };
		return;
	}
	lua_pushcfunction(L, conv_main);
	lua_insert(L, -(n + 1));
	lua_pushlightuserdata(L, &c);
	lua_insert(L, -(n + 1));
	status = lua_pcall(L, n + 1, 0, 0);
	*out = (struct tp_ljson_out){ .lua_status = status, .fail = c.fail, .used = c.used };
	if (status != LUA_OK) {
		lua_pop(L, 1);
		out->fail = TP_LJSON_LUAERR;
	}
	if (out->fail != TP_LJSON_OK) {
		json_decref(c.root);
		return;
	}
	out->value = c.root;
}

/* ---- JSON -> Lua ----------------------------------------------------------- */

static void push_value(lua_State *L, const json_t *v, uint64_t depth, uint64_t max);

static void enter_table(lua_State *L, uint64_t depth, uint64_t max)
{
	if (depth > max)
		luaL_error(L, "input nested deeper than %d", (int)max);
	luaL_checkstack(L, 4, "input nested too deep");
}

static void push_array(lua_State *L, const json_t *v, uint64_t depth, uint64_t max)
{
	size_t n = json_array_size(v);

	enter_table(L, depth, max);
	lua_createtable(L, n < INT32_MAX ? (int)n : 0, 0);
	for (size_t i = 0; i < n; i++) {
		push_value(L, json_array_get(v, i), depth + 1, max);
		lua_rawseti(L, -2, (lua_Integer)i + 1); /* null leaves a hole */
	}
}

static void push_object(lua_State *L, const json_t *v, uint64_t depth, uint64_t max)
{
	json_t *obj = (json_t *)v;

	enter_table(L, depth, max);
	lua_createtable(L, 0, (int)(json_object_size(obj) & 0x7fffffff));
	for (void *it = json_object_iter(obj); it; it = json_object_iter_next(obj, it)) {
		lua_pushlstring(L, json_object_iter_key(it), json_object_iter_key_len(it));
		push_value(L, json_object_iter_value(it), depth + 1, max);
		lua_rawset(L, -3); /* null leaves no entry */
	}
}

static void push_value(lua_State *L, const json_t *v, uint64_t depth, uint64_t max)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: push_object(L, v, depth, max); break;
	case JSON_ARRAY: push_array(L, v, depth, max); break;
	case JSON_STRING: lua_pushlstring(L, json_string_value(v), json_string_length(v)); break;
	case JSON_INTEGER: lua_pushinteger(L, (lua_Integer)json_integer_value(v)); break;
	case JSON_REAL: lua_pushnumber(L, (lua_Number)json_real_value(v)); break;
	case JSON_TRUE:
	case JSON_FALSE: lua_pushboolean(L, json_is_true(v)); break;
	default: lua_pushnil(L);
	}
}

void tp_ljson_push(lua_State *L, const json_t *v, uint64_t max_depth)
{
	luaL_checkstack(L, 4, "input nested too deep");
	push_value(L, v, 1, max_depth);
}
