/*
 * fuzz_ljson.c — libFuzzer harness for lua-sandbox/ljson: Lua values to JSON
 * (the returned value, hostile) and JSON to Lua (inputs). The first byte picks:
 *   'L'  the rest is a Lua chunk, run under a counting allocator and an
 *        instruction budget; whatever it returns is converted;
 *   'J'  the rest is JSON text, read as the host reads inputs (tp_json_loadb):
 *        pushed as Lua (tp_ljson_push), then converted back;
 *   else the rest is a small program that builds values on the Lua stack
 *        (tables, shared and cyclic references, hostile metatables, every type).
 * Invariants: no metamethod or Lua function runs during a conversion; an accepted
 * value respects the depth and byte caps and reads back through the host's
 * parser to the same text; a refusal says why.
 */
#include <jansson.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jsonio.h"
#include "lalloc.h"
#include "limit.h"
#include "msg.h"
#include "ljson.h"
#include "utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c) ((c) ? (void)0 : abort())
#define MEM_LIMIT (8u << 20)
#define MAX_STACK 48
#define STEPS 200000

static int converting;

/* Any Lua function entered while converting is a metamethod or finalizer that ran. */
static void call_hook(lua_State *L, lua_Debug *ar)
{
	if (!converting)
		return;
	if (ar->event == LUA_HOOKCALL || ar->event == LUA_HOOKTAILCALL) {
		lua_getinfo(L, "S", ar);
		CHECK(strcmp(ar->what, "C") == 0);
	}
}

static void count_hook(lua_State *L, lua_Debug *ar)
{
	if (ar->event == LUA_HOOKCOUNT)
		luaL_error(L, "instruction budget");
	else
		call_hook(L, ar);
}

/* A metamethod must never run: raw access only. */
static int forbidden(lua_State *L)
{
	(void)L;
	if (converting)
		abort();
	return 0;
}

static size_t depth_of(const json_t *v)
{
	size_t d = 0, i;
	const char *k;
	json_t *c;
	if (json_is_array(v))
		json_array_foreach(v, i, c) { size_t e = depth_of(c); d = e > d ? e : d; }
	else if (json_is_object(v))
		json_object_foreach((json_t *)v, k, c) { size_t e = depth_of(c); d = e > d ? e : d; }
	else
		return 0;
	return d + 1;
}

static void convert(lua_State *L, int n, const struct tp_ljson_caps *caps)
{
	struct tp_ljson_out out;
	int top = lua_gettop(L) - n;

	lua_sethook(L, call_hook, LUA_MASKCALL, 0);
	converting = 1;
	tp_ljson_from_lua(L, n, caps, &out);
	converting = 0;
	CHECK(lua_gettop(L) == top);
	if (out.fail != TP_LJSON_OK) {
		CHECK(out.value == NULL);
		if (out.fail == TP_LJSON_BYTES)
			CHECK(out.used > caps->bytes);
		if (out.fail == TP_LJSON_LUAERR)
			CHECK(out.lua_status != LUA_OK);
		/* A refusal that is the user's names what: a short UTF-8 message. */
		if (out.fail == TP_LJSON_KEYS || out.fail == TP_LJSON_NUMBER)
			CHECK(out.message[0] != '\0' && strlen(out.message) < TP_LJSON_MESSAGE_MAX &&
			      tp_utf8_valid(out.message, strlen(out.message)));
		else
			CHECK(out.message[0] == '\0');
		return;
	}
	CHECK(out.value != NULL);
	char *text = json_dumps(out.value, JSON_COMPACT | JSON_ENCODE_ANY);
	CHECK(text != NULL);
	/* The worker's count must not undercount what the host measures again. */
	CHECK(strlen(text) <= caps->bytes);
	/* The host reads back every value the worker accepts (NUL in keys, no
	 * duplicate key), as common/msg.c does. */
	json_t *back = tp_json_loadb(text, strlen(text),
				     JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL);
	CHECK(back != NULL);
	char *again = json_dumps(back, JSON_COMPACT | JSON_ENCODE_ANY);
	CHECK(again != NULL && strcmp(again, text) == 0);
	free(again);
	json_decref(back);
	size_t d = depth_of(out.value) - (n > 1 && json_is_array(out.value) ? 1 : 0);
	CHECK(d <= caps->depth);
	free(text);
	/* NaN and the infinities (caps->nonfinite): each pointer names a null of the
	 * value, and the host takes the reply the worker would send, map and all. */
	if (out.nonfinite != NULL) {
		CHECK(caps->nonfinite && json_object_size(out.nonfinite) > 0);
		struct tp_reply r = { .ok = 1, .value = out.value, .nonfinite = out.nonfinite };
		struct tp_limits lim = { 0 };
		struct tp_reply rb;
		struct tp_err err = { 0 };
		size_t mlen;
		lim.result_bytes = caps->bytes;
		lim.result_depth = caps->depth + 1;
		lim.output_bytes = 1;
		char *msg = tp_msg_reply_encode(&r, &mlen);
		CHECK(msg != NULL);
		CHECK(tp_msg_reply_decode(msg, mlen, &lim, &rb, &err) == 0);
		/* Compared as text: jansson's json_equal stops a key at a NUL. */
		char *x = json_dumps(rb.nonfinite, JSON_COMPACT | JSON_SORT_KEYS);
		char *y = json_dumps(out.nonfinite, JSON_COMPACT | JSON_SORT_KEYS);
		CHECK(x != NULL && y != NULL && strcmp(x, y) == 0);
		free(x);
		free(y);
		tp_reply_free(&rb);
		free(msg);
	} else {
		CHECK(out.nonfinite == NULL);
	}
	json_decref(out.nonfinite);
	json_decref(out.value);
}

static void hostile_metatable(lua_State *L)
{
	static const char *const events[] = {"__index", "__newindex", "__pairs", "__len",
					     "__tostring", "__name", "__eq", "__lt", "__le",
					     "__concat", "__call", "__close", "__mode"};
	lua_createtable(L, 0, 16);
	for (size_t i = 0; i < sizeof events / sizeof events[0]; i++) {
		if (strcmp(events[i], "__mode") == 0 || strcmp(events[i], "__name") == 0)
			continue; /* weak tables would change what the program built */
		lua_pushcfunction(L, forbidden);
		lua_setfield(L, -2, events[i]);
	}
}

struct reader {
	const uint8_t *p;
	size_t n;
};

static int take(struct reader *r, void *out, size_t n)
{
	if (r->n < n)
		return -1;
	memcpy(out, r->p, n);
	r->p += n, r->n -= n;
	return 0;
}

/* One step of the value-building program. Stack indices are relative to base. */
static int step(lua_State *L, struct reader *r, int base)
{
	uint8_t op, b = 0;
	int top = lua_gettop(L) - base;

	if (take(r, &op, 1) != 0 || !lua_checkstack(L, 4))
		return -1; /* a C function owns only LUA_MINSTACK slots unless it asks */
	if (top >= MAX_STACK && (op % 16) <= 6)
		op = 7;
	switch (op % 16) {
	case 0: lua_pushnil(L); break;
	case 1: lua_pushboolean(L, op & 0x10); break;
	case 2: { int64_t i = 0; take(r, &i, sizeof i); lua_pushinteger(L, (lua_Integer)i); break; }
	case 3: { double d = 0; take(r, &d, sizeof d); lua_pushnumber(L, (lua_Number)d); break; }
	case 4: {
		take(r, &b, 1);
		size_t n = b < r->n ? b : r->n;
		lua_pushlstring(L, (const char *)r->p, n);
		r->p += n, r->n -= n;
		break;
	}
	case 5: lua_createtable(L, 0, 0); break;
	case 6: /* a copy of an earlier slot: shared references and cycles */
		if (top == 0)
			return 0;
		take(r, &b, 1);
		lua_pushvalue(L, base + 1 + b % top);
		break;
	case 7: /* t[k] = v, t below k and v */
		if (top < 3 || !lua_istable(L, -3))
			return lua_pop(L, top > 0), 0;
		if (lua_isnil(L, -2) || (lua_type(L, -2) == LUA_TNUMBER && lua_tonumber(L, -2) != lua_tonumber(L, -2))) {
			lua_pop(L, 2);
			return 0;
		}
		lua_rawset(L, -3);
		break;
	case 8: /* t[#t + 1] = v */
		if (top < 2 || !lua_istable(L, -2))
			return 0;
		lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
		break;
	case 9: { /* t[i] = v for a chosen integer i (holes, 0, negatives) */
		if (top < 2 || !lua_istable(L, -2))
			return 0;
		int8_t i = 0;
		take(r, &i, 1);
		lua_rawseti(L, -2, i);
		break;
	}
	case 10: /* functions, threads, userdata */
		if (op & 0x10)
			lua_pushcfunction(L, forbidden);
		else if (op & 0x20)
			lua_newthread(L);
		else
			lua_newuserdatauv(L, 8, 0);
		break;
	case 11: /* a hostile metatable on the top table or userdata */
		if (top < 1 || (!lua_istable(L, -1) && !lua_isuserdata(L, -1)))
			return 0;
		hostile_metatable(L);
		lua_setmetatable(L, -2);
		break;
	case 12: /* wrap the top n values in nested tables */
		take(r, &b, 1);
		for (int i = 0; i < b % 80 && lua_checkstack(L, 2); i++) {
			lua_createtable(L, 1, 0);
			lua_insert(L, -2);
			lua_rawseti(L, -2, 1);
		}
		break;
	case 13: /* pop */
		if (top > 0)
			lua_pop(L, 1);
		break;
	default: /* a small integer or string key, common in real tables */
		if (op & 0x10)
			lua_pushinteger(L, op >> 5);
		else
			lua_pushfstring(L, "k%d", op >> 5);
	}
	return 0;
}

static int run_program(lua_State *L)
{
	struct reader *r = lua_touserdata(L, 1);
	int base = lua_gettop(L);
	for (int i = 0; i < 4096 && r->n > 0; i++)
		if (step(L, r, base) != 0)
			break;
	return lua_gettop(L) - base;
}

static int push_json(lua_State *L)
{
	const json_t *v = lua_touserdata(L, 1);
	uint64_t depth = (uint64_t)lua_tointeger(L, 2);
	tp_ljson_push(L, v, depth);
	return 1;
}

static void open_safe_libs(lua_State *L)
{
	static const luaL_Reg libs[] = {{LUA_GNAME, luaopen_base},        {LUA_STRLIBNAME, luaopen_string},
					{LUA_TABLIBNAME, luaopen_table},  {LUA_MATHLIBNAME, luaopen_math},
					{LUA_UTF8LIBNAME, luaopen_utf8},  {LUA_COLIBNAME, luaopen_coroutine},
					{NULL, NULL}};
	static const char *const drop[] = {"print", "dofile", "loadfile", "require", "collectgarbage"};
	for (const luaL_Reg *l = libs; l->func; l++) {
		luaL_requiref(L, l->name, l->func, 1);
		lua_pop(L, 1);
	}
	for (size_t i = 0; i < sizeof drop / sizeof drop[0]; i++) {
		lua_pushnil(L);
		lua_setglobal(L, drop[i]);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tp_lalloc a;
	struct tp_ljson_caps caps;
	lua_State *L;

	if (size < 3)
		return 0;
	caps.depth = 1 + data[1] % 80;
	caps.bytes = data[2] & 0x80 ? (1u << 20) : 2 + (uint64_t)data[2] * 3;
	caps.nonfinite = (data[2] & 0x40) != 0;
	tp_lalloc_init(&a, MEM_LIMIT);
	L = lua_newstate(tp_lalloc, &a);
	CHECK(L != NULL);
	if (data[0] == 'L') {
		open_safe_libs(L);
		lua_sethook(L, count_hook, LUA_MASKCOUNT, STEPS);
		int base = lua_gettop(L);
		if (luaL_loadbufferx(L, (const char *)data + 3, size - 3, "=fuzz", "t") == LUA_OK &&
		    lua_pcall(L, 0, LUA_MULTRET, 0) == LUA_OK) {
			int n = lua_gettop(L) - base;
			if (lua_checkstack(L, 4))
				convert(L, n > 8 ? 8 : n, &caps);
		}
	} else if (data[0] == 'J') {
		/* Parsed as the host parses inputs (NUL in keys too). */
		json_t *v = tp_json_loadb((const char *)data + 3, size - 3,
					  JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES,
					  NULL);
		if (v != NULL) {
			lua_pushcfunction(L, push_json);
			lua_pushlightuserdata(L, v);
			lua_pushinteger(L, (lua_Integer)caps.depth);
			if (lua_pcall(L, 2, 1, 0) == LUA_OK && lua_checkstack(L, 4)) {
				CHECK(depth_of(v) <= caps.depth);
				convert(L, 1, &caps);
			}
			json_decref(v);
		}
	} else {
		struct reader r = {data + 3, size - 3};
		lua_pushcfunction(L, run_program);
		lua_pushlightuserdata(L, &r);
		if (lua_pcall(L, 1, LUA_MULTRET, 0) == LUA_OK && lua_checkstack(L, 4)) {
			int n = lua_gettop(L);
			convert(L, n > 8 ? 8 : n, &caps);
		}
	}
	lua_close(L);
	return 0;
}
