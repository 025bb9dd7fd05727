/*
 * test_ljson.c — every conversion rule between Lua values and JSON, both ways,
 * with the depth and size caps, cycles, UTF-8 repair and NUL bytes.
 */
#include "ljson.h"
#include "utf8.h"

#include <lauxlib.h>
#include <lualib.h>
#include <stdlib.h>

#include "tap.h"

static lua_State *L;
static struct tp_ljson_out out;
static char text[4096];

/* Runs code, converts all its results; returns the compact JSON or "FAIL:<n>:<used>". */
static const char *conv(const char *code, uint64_t depth, uint64_t bytes)
{
	struct tp_ljson_caps caps = { depth, bytes };
	int top = lua_gettop(L);

	if (luaL_dostring(L, code) != LUA_OK) {
		snprintf(text, sizeof text, "LUAERR %s", lua_tostring(L, -1));
		lua_settop(L, top);
		return text;
	}
	tp_ljson_from_lua(L, lua_gettop(L) - top, &caps, &out);
	CHECK_EQ_INT(lua_gettop(L), top);
	if (out.fail != TP_LJSON_OK) {
		snprintf(text, sizeof text, "FAIL:%d:%llu", (int)out.fail,
			 (unsigned long long)out.used);
		return text;
	}
	char *s = json_dumps(out.value, JSON_COMPACT | JSON_ENCODE_ANY);
	snprintf(text, sizeof text, "%s", s);
	free(s);
	json_decref(out.value);
	return text;
}

static const char *c1(const char *code)
{
	return conv(code, 64, 1 << 20);
}

static void test_to_json(void)
{
	CHECK_EQ_STR(c1("return"), "null");
	CHECK_EQ_STR(c1("return nil"), "null");
	CHECK_EQ_STR(c1("return true"), "true");
	CHECK_EQ_STR(c1("return false"), "false");
	CHECK_EQ_STR(c1("return 42"), "42");
	CHECK_EQ_STR(c1("return -9223372036854775807 - 1"), "-9223372036854775808");
	CHECK_EQ_STR(c1("return 1.5"), "1.5");
	CHECK_EQ_STR(c1("return 0/0, 1/0, -1/0"), "[null,null,null]");
	CHECK_EQ_STR(c1("return 'a\\0b'"), "\"a\\u0000b\"");
	CHECK_EQ_STR(c1("return 'caf\\xc3\\xa9'"), "\"caf\xc3\xa9\"");
	CHECK_EQ_STR(c1("return 'x\\xffy\\xc3'"), "\"x\xef\xbf\xbdy\xef\xbf\xbd\"");
	CHECK_EQ_STR(c1("return '\\xed\\xa0\\x80'"),
		     "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\""); /* surrogate */
	CHECK_EQ_STR(c1("return {}"), "{}");
	CHECK_EQ_STR(c1("return {1, 'two', {3}}"), "[1,\"two\",[3]]");
	CHECK_EQ_STR(c1("return {[1] = 'a', [3] = 'c'}"), "{\"1\":\"a\",\"3\":\"c\"}");
	CHECK_EQ_STR(c1("return {[0] = 'z'}"), "{\"0\":\"z\"}");
	CHECK_EQ_STR(c1("return {a = 1}"), "{\"a\":1}");
	CHECK_EQ_STR(c1("return {[1.5] = 1}"), "{\"1.5\":1}");
	CHECK_EQ_STR(c1("return {[0.1] = 1}"), "{\"0.10000000000000001\":1}");
	CHECK_EQ_STR(c1("return {[true] = 1}"), "{\"true\":1}");
	CHECK_EQ_STR(c1("return {[{}] = 1}"), "{\"<table>\":1}");
	CHECK_EQ_STR(c1("return {[print] = 1}"), "{\"<function>\":1}");
	CHECK_EQ_STR(c1("return {['k\\xff'] = 1}"), "{\"k\xef\xbf\xbd\":1}");
	CHECK_EQ_STR(c1("return print, coroutine.create(print), io.stdout"),
		     "[\"<function>\",\"<thread>\",\"<userdata>\"]");
	CHECK_EQ_STR(c1("return 1, 'a', {}"), "[1,\"a\",{}]");
	CHECK_EQ_STR(c1("local t = {} return t, t"), "[{},{}]"); /* shared, not a cycle */
	CHECK_EQ_STR(c1("return setmetatable({}, {__index = function() error('no') end, "
			"__pairs = function() error('no') end, __len = function() return 5 end})"),
		     "{}");
	/* Cycles. */
	CHECK_EQ_STR(c1("local t = {} t[1] = t return t"), "FAIL:3:0");
	CHECK_EQ_STR(c1("local t = {a = {}} t.a.b = t return t"), "FAIL:3:0");
	/* Depth: the top table is depth 1; multiple returns add no level. */
	CHECK_EQ_STR(conv("return {{{}}}", 3, 1000), "[[{}]]");
	CHECK_EQ_STR(conv("return {{{}}}", 2, 1000), "FAIL:1:3");
	CHECK_EQ_STR(conv("return {1}, {2}", 1, 1000), "[[1],[2]]");
	CHECK_EQ_STR(conv("return 5", 0, 1000), "5");
	CHECK_EQ_STR(conv("return {}", 0, 1000), "FAIL:1:1");
	/* Size: counted as compact JSON text. */
	CHECK_EQ_STR(conv("return 'abc'", 64, 5), "\"abc\"");
	CHECK_EQ_STR(conv("return 'abcd'", 64, 5), "FAIL:2:6");
	CHECK_EQ_STR(conv("return {1, 2}", 64, 5), "[1,2]");
	CHECK_EQ_STR(conv("return {1, 22}", 64, 5), "FAIL:2:6");
	CHECK_EQ_STR(conv("return {a = 1}", 64, 7), "{\"a\":1}");
	CHECK_EQ_STR(conv("return {a = 1}", 64, 6), "FAIL:2:7");
	CHECK_EQ_STR(conv("return 'a\\n\"'", 64, 7), "\"a\\n\\\"\"");
	CHECK_EQ_STR(conv("return '\\1'", 64, 7), "FAIL:2:8");
	/* A wide DAG stops on size, not on time. */
	CHECK_EQ_STR(conv("local t = {} for i = 1, 40 do t = {t, t} end return t", 64, 1000),
		     "FAIL:2:1002");
}

/* Protected: [1] = json_t *, [2] = max depth; leaves the converted value. */
static int push_main(lua_State *l)
{
	tp_ljson_push(l, lua_touserdata(l, 1), (uint64_t)lua_tointeger(l, 2));
	return 1;
}

/* JSON text -> Lua value -> describe() in Lua, which prints types and contents. */
static const char *to_lua(const char *json, uint64_t depth)
{
	json_t *v = json_loads(json, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	int top = lua_gettop(L);

	CHECK(v != NULL);
	lua_getglobal(L, "describe");
	lua_pushcfunction(L, push_main);
	lua_pushlightuserdata(L, v);
	lua_pushinteger(L, (lua_Integer)depth);
	if (lua_pcall(L, 2, 1, 0) != LUA_OK) {
		snprintf(text, sizeof text, "ERR %s", lua_tostring(L, -1));
	} else {
		lua_call(L, 1, 1);
		snprintf(text, sizeof text, "%s", lua_tostring(L, -1));
	}
	lua_settop(L, top);
	json_decref(v);
	return text;
}

static void test_to_lua(void)
{
	(void)!luaL_dostring(
	    L,
	    "function describe(v) "
	    "  if type(v) ~= 'table' then return math.type(v) or type(v) .. ':' .. tostring(v) end "
	    "  local keys = {} for k in pairs(v) do keys[#keys + 1] = k end "
	    "  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end) "
	    "  local parts = {} for _, k in ipairs(keys) do "
	    "    parts[#parts + 1] = type(k) .. ':' .. tostring(k) .. '=' .. describe(v[k]) end "
	    "  return '{' .. table.concat(parts, ',') .. '}' end");
	CHECK_EQ_STR(to_lua("null", 5), "nil:nil");
	CHECK_EQ_STR(to_lua("true", 5), "boolean:true");
	CHECK_EQ_STR(to_lua("false", 5), "boolean:false");
	CHECK_EQ_STR(to_lua("7", 5), "integer");
	CHECK_EQ_STR(to_lua("7.5", 5), "float");
	CHECK_EQ_STR(to_lua("\"a\\u0000b\"", 5), "string:a"); /* the C side reads up to the NUL */
	CHECK_EQ_STR(to_lua("[1, \"x\", null, 2.5]", 5),
		     "{number:1=integer,number:2=string:x,number:4=float}");
	CHECK_EQ_STR(to_lua("{\"a\": 1, \"b\": null, \"1\": true}", 5),
		     "{string:1=boolean:true,string:a=integer}");
	CHECK_EQ_STR(to_lua("[]", 5), "{}");
	CHECK_EQ_STR(to_lua("[[[]]]", 3), "{number:1={number:1={}}}");
	CHECK_EQ_STR(to_lua("[[[[]]]]", 3), "ERR input nested deeper than 3");
	CHECK_EQ_STR(to_lua("{\"a\": {\"b\": {}}}", 2), "ERR input nested deeper than 2");

	/* NUL survives both ways. */
	json_t *v = json_stringn("a\0b", 3);
	lua_pushcfunction(L, push_main);
	lua_pushlightuserdata(L, v);
	lua_pushinteger(L, 5);
	CHECK_EQ_INT(lua_pcall(L, 2, 1, 0), LUA_OK);
	CHECK_EQ_INT(lua_rawlen(L, -1), 3);
	struct tp_ljson_caps caps = { 5, 100 };
	tp_ljson_from_lua(L, 1, &caps, &out);
	CHECK(json_equal(out.value, v));
	json_decref(out.value);
	json_decref(v);
}

static void test_strings(void)
{
	char buf[32];

	CHECK_EQ_INT(tp_utf8_fix("ab", 2, buf), 2);
	CHECK_EQ_INT(tp_utf8_fix("\xc0\xaf", 2, buf), 6); /* overlong: two bytes, two U+FFFD */
	CHECK(memcmp(buf, "\xef\xbf\xbd\xef\xbf\xbd", 6) == 0);
	CHECK_EQ_INT(tp_utf8_fix("\xf4\x90\x80\x80", 4, buf), 12); /* past U+10FFFF */
	CHECK_EQ_INT(tp_utf8_fix("\xf0\x9f\x98\x80", 4, buf), 4);  /* U+1F600 is fine */
	json_t *s = tp_utf8_json("\xff", 1);
	CHECK_EQ_STR(json_string_value(s), "\xef\xbf\xbd");
	json_decref(s);
}

int main(void)
{
	L = luaL_newstate();
	luaL_openlibs(L); /* a test state, not a sandbox */
	test_to_json();
	test_to_lua();
	test_strings();
	lua_close(L);
	return tp_test_done("test_ljson");
}
