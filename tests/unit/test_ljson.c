/*
 * test_ljson.c — every conversion rule between Lua values and JSON, both ways,
 * with the depth and size caps, cycles, UTF-8 repair and NUL bytes.
 */
#include "jsonio.h"
#include "ljson.h"
#include "utf8.h"

#include <lauxlib.h>
#include <lualib.h>
#include <stdlib.h>

#include "tap.h"

static lua_State *L;
static struct tp_ljson_out out;
static char text[4096];

/* Runs code, converts all its results; returns the compact JSON or
 * "FAIL:<n>:<used>", then ":<message>" when the converter gave one. */
static int nonfinite_mode; /* caps.nonfinite of conv() */

static const char *conv(const char *code, uint64_t depth, uint64_t bytes)
{
	struct tp_ljson_caps caps = { depth, bytes, nonfinite_mode };
	int top = lua_gettop(L);

	if (luaL_dostring(L, code) != LUA_OK) {
		snprintf(text, sizeof text, "LUAERR %s", lua_tostring(L, -1));
		lua_settop(L, top);
		return text;
	}
	tp_ljson_from_lua(L, lua_gettop(L) - top, &caps, &out);
	CHECK_EQ_INT(lua_gettop(L), top);
	if (out.fail != TP_LJSON_OK) {
		snprintf(text, sizeof text, "FAIL:%d:%llu%s%s", (int)out.fail,
			 (unsigned long long)out.used, out.message[0] ? ":" : "", out.message);
		return text;
	}
	char *s = json_dumps(out.value, JSON_COMPACT | JSON_ENCODE_ANY);
	char *m = out.nonfinite ? json_dumps(out.nonfinite, JSON_COMPACT) : NULL;
	snprintf(text, sizeof text, "%s%s%s", s, m ? " " : "", m ? m : "");
	free(s);
	free(m);
	json_decref(out.value);
	json_decref(out.nonfinite);
	return text;
}

static const char *c1(const char *code)
{
	return conv(code, 64, 1 << 20);
}

/* The exec's value (caps.nonfinite): null, named by its JSON pointer. */
static void test_nonfinite(void)
{
	nonfinite_mode = 1;
	CHECK_EQ_STR(c1("return 0/0"), "null {\"\":\"nan\"}");
	CHECK_EQ_STR(c1("return 1, -math.huge"), "[1,null] {\"/1\":\"-inf\"}");
	CHECK_EQ_STR(c1("return {1, {x = 1/0}, ['a/b~'] = 0/0}"),
		     "{\"1\":1,\"2\":{\"x\":null},\"a/b~\":null} "
		     "{\"/2/x\":\"inf\",\"/a~1b~0\":\"nan\"}");
	CHECK_EQ_STR(c1("return {1.5, 2}"), "[1.5,2]"); /* no map when there is none */
	/* The byte cap counts the map beside the value: [null] and "/0":"nan", past 10. */
	CHECK_EQ_STR(conv("return {0/0}", 64, 10), "FAIL:2:17");
	nonfinite_mode = 0;
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
	CHECK_EQ_STR(c1("return 0/0"), "FAIL:6:0:NaN is not a JSON number");
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
	CHECK_EQ_STR(c1("return {[0.1] = 1}"),
		     "{\"0.1\":1}"); /* the shortest text that reads back */
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
	/* Depth: the top table is depth 1; several returns are an array, a level
	 * as in the JSON sent (the host's decoder counts it). */
	CHECK_EQ_STR(conv("return {{{}}}", 3, 1000), "[[{}]]");
	CHECK_EQ_STR(conv("return {{{}}}", 2, 1000), "FAIL:1:3");
	CHECK_EQ_STR(conv("return {1}, {2}", 2, 1000), "[[1],[2]]");
	CHECK_EQ_STR(conv("return {1}, {2}", 1, 1000), "FAIL:1:2");
	CHECK_EQ_STR(conv("return 1, 2", 1, 1000), "[1,2]");
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
	struct tp_ljson_caps caps = { 5, 100, 0 };
	tp_ljson_from_lua(L, 1, &caps, &out);
	CHECK(json_equal(out.value, v));
	json_decref(out.value);
	json_decref(v);
}

/* NaN and the infinities have no JSON number: refused as the user's, wherever they are. */
static void test_numbers(void)
{
	CHECK_EQ_STR(c1("return 1/0"), "FAIL:6:0:inf is not a JSON number");
	CHECK_EQ_STR(c1("return -1/0"), "FAIL:6:0:-inf is not a JSON number");
	CHECK_EQ_STR(c1("return math.huge"), "FAIL:6:0:inf is not a JSON number");
	CHECK_EQ_STR(c1("return 1, {a = {b = {0/0}}}"), "FAIL:6:0:NaN is not a JSON number");
	CHECK_EQ_STR(c1("return {x = -math.huge}"), "FAIL:6:0:-inf is not a JSON number");
	CHECK_EQ_STR(c1("return 1e308, -0.0, 5e-324"), "[1e308,-0.0,4.9406564584124654e-324]");
}

/* Keys: their text, their order, and keys whose texts are one are refused. */
static void test_keys(void)
{
	/* Every collision the host met, at the top and deeper, with the exact message. */
	CHECK_EQ_STR(c1("return {[1] = 'a', ['1'] = 'b'}"),
		     "FAIL:5:0:keys 1 and \"1\" both become \"1\" in JSON");
	CHECK_EQ_STR(c1("return {[true] = 'a', ['true'] = 'b'}"),
		     "FAIL:5:0:keys true and \"true\" both become \"true\" in JSON");
	CHECK_EQ_STR(c1("return {[false] = 'a', ['false'] = 'b'}"),
		     "FAIL:5:0:keys false and \"false\" both become \"false\" in JSON");
	CHECK_EQ_STR(c1("return {[1.5] = 'a', ['1.5'] = 'b'}"),
		     "FAIL:5:0:keys 1.5 and \"1.5\" both become \"1.5\" in JSON");
	CHECK_EQ_STR(c1("return {[-7] = 'a', ['-7'] = 'b', c = 1}"),
		     "FAIL:5:0:keys -7 and \"-7\" both become \"-7\" in JSON");
	CHECK_EQ_STR(c1("return {[math.huge] = 1, inf = 2}"),
		     "FAIL:5:0:keys inf and \"inf\" both become \"inf\" in JSON");
	CHECK_EQ_STR(c1("return {x = {y = {[2] = 'a', ['2'] = 'b'}}}"),
		     "FAIL:5:0:keys 2 and \"2\" both become \"2\" in JSON");
	CHECK_EQ_STR(c1("return {[{}] = 1, [{}] = 2}"),
		     "FAIL:5:0:keys <table> and <table> both become \"<table>\" in JSON");
	CHECK_EQ_STR(
	    c1("return {['<function>'] = 1, [print] = 2}"),
	    "FAIL:5:0:keys <function> and \"<function>\" both become \"<function>\" in JSON");
	/* Bytes that are not UTF-8 are repaired to U+FFFD, which can collide too. */
	CHECK_EQ_STR(c1("return {['\\xff'] = 1, ['\\xfe'] = 2}"),
		     "FAIL:5:0:keys \"\\xFE\" and \"\\xFF\" both become \"\xef\xbf\xbd\" in JSON");
	CHECK_EQ_STR(
	    c1("return {['a\\xff'] = 1, ['a\\u{FFFD}'] = 2}"),
	    "FAIL:5:0:keys \"a\xef\xbf\xbd\" and \"a\\xFF\" both become \"a\xef\xbf\xbd\" in JSON");
	/* The keys are checked before any value: a NaN under one of them does not hide it. */
	CHECK_EQ_STR(c1("return {[1] = 0/0, ['1'] = 2}"),
		     "FAIL:5:0:keys 1 and \"1\" both become \"1\" in JSON");
	/* A long key is cut in the message, which stays short and UTF-8. */
	conv("return {[string.rep('\\0', 300) .. '\\xff'] = 1, [string.rep('\\0', 300) .. "
	     "'\\xfe'] = 2}",
	     64, 1 << 20);
	CHECK(out.fail == TP_LJSON_KEYS);
	CHECK(strlen(out.message) < 300 && strstr(out.message, "\\u0000\"...") != NULL);
	CHECK(tp_utf8_valid(out.message, strlen(out.message)));

	/* The text of a key: integers in decimal, floats by the shortest text that
	 * reads back (as Python's repr), booleans, other types by their type name. */
	CHECK_EQ_STR(c1("return {[1e300] = 1}"), "{\"1e+300\":1}");
	CHECK_EQ_STR(c1("return {[2^63] = 1}"), "{\"9.223372036854776e+18\":1}");
	CHECK_EQ_STR(c1("return {[-math.huge] = 1}"), "{\"-inf\":1}");
	CHECK_EQ_STR(c1("return {[1/3] = 1}"), "{\"0.3333333333333333\":1}");
	CHECK_EQ_STR(c1("return {[1.0] = 1, [2.0] = 2}"), "[1,2]"); /* Lua stores 2.0 as 2 */
	CHECK_EQ_STR(c1("return {[math.mininteger] = 1}"), "{\"-9223372036854775808\":1}");

	/* Order: integer keys by value, then the other keys by the bytes of their text. */
	CHECK_EQ_STR(c1("return {b = 1, a = 2, [10] = 3, [2] = 4, [true] = 5, [-1] = 6, "
			"[0.5] = 7, B = 8}"),
		     "{\"-1\":6,\"2\":4,\"10\":3,\"0.5\":7,\"B\":8,\"a\":2,\"b\":1,\"true\":5}");
	/* Sparse arrays (keys that are not exactly 1..n) are objects, nothing dropped. */
	CHECK_EQ_STR(c1("return {1, nil, 3}"), "{\"1\":1,\"3\":3}");
	CHECK_EQ_STR(c1("return {nil, 2}"), "{\"2\":2}");
	CHECK_EQ_STR(c1("return {[1] = 'a', [2] = 'b', [10] = 'j', [3] = 'c'}"),
		     "{\"1\":\"a\",\"2\":\"b\",\"3\":\"c\",\"10\":\"j\"}");
	CHECK_EQ_STR(c1("return {[0] = 0, 1, 2}"), "{\"0\":0,\"1\":1,\"2\":2}");
	CHECK_EQ_STR(c1("return {1, 2, n = 2}"), "{\"1\":1,\"2\":2,\"n\":2}");
	CHECK_EQ_STR(c1("local t = {1, 2, 3} t[2] = nil return t"), "{\"1\":1,\"3\":3}");
	CHECK_EQ_STR(c1("return {1, 2, 3, nil}"), "[1,2,3]"); /* a trailing nil is no key */
	/* The keys' bytes are counted before the values. */
	CHECK_EQ_STR(conv("return {a = 1, b = 2}", 64, 12), "FAIL:2:13");
	CHECK_EQ_STR(conv("return {a = 1, b = 2}", 64, 13), "{\"a\":1,\"b\":2}");
}

/* JSON text -> Lua (as inputs go) -> JSON: the same text, NUL bytes in keys included
 * (keys in byte order, so the text is the input's). */
static void round_trip(const char *json)
{
	struct tp_err err = { 0 };
	json_t *v = tp_json_loadb(json, strlen(json), JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
	struct tp_ljson_caps caps = { 64, 1 << 20, 0 };

	CHECK(v != NULL);
	if (v == NULL)
		return;
	lua_pushcfunction(L, push_main);
	lua_pushlightuserdata(L, v);
	lua_pushinteger(L, 64);
	CHECK_EQ_INT(lua_pcall(L, 2, 1, 0), LUA_OK);
	tp_ljson_from_lua(L, 1, &caps, &out);
	CHECK_EQ_INT(out.fail, TP_LJSON_OK);
	/* Compared as text: json_equal reads keys as C strings. */
	char *s = json_dumps(out.value, JSON_COMPACT | JSON_ENCODE_ANY);
	CHECK_EQ_STR(s, json);
	free(s);
	json_decref(out.value);
	json_decref(v);
}

static void test_nul(void)
{
	CHECK_EQ_STR(c1("return {['a\\0b'] = 1}"), "{\"a\\u0000b\":1}");
	CHECK_EQ_STR(c1("return {x = {y = {['\\0'] = 'v\\0'}}}"),
		     "{\"x\":{\"y\":{\"\\u0000\":\"v\\u0000\"}}}");
	CHECK_EQ_STR(c1("return {['a\\0'] = 1, ['a'] = 2, ['a\\1'] = 3}"),
		     "{\"a\":2,\"a\\u0000\":1,\"a\\u0001\":3}");
	round_trip("{\"a\\u0000b\":1}");
	round_trip("{\"k\":{\"l\":{\"\\u0000\":\"\\u0000\",\"\\u0001\":2,\"\\u0001\\u0001\":3}}}");
	round_trip("[{\"\\u0000x\":[true]},\"a\\u0000\"]");
}

/* A Lua table has no order and its traversal order follows the string hash
 * seed, which each state draws anew: the JSON text must not follow it. */
static void test_deterministic(void)
{
	const char *code = "local t = {} for i = 1, 300 do t['k' .. i] = i t[i * 7] = i end "
			   "t[true] = 0 t[0.25] = 1 return t";
	char first[sizeof text];
	lua_State *saved = L;

	snprintf(first, sizeof first, "%s", conv(code, 64, 1 << 20));
	CHECK(strncmp(first, "{\"7\":1,\"14\":2,", 14) == 0);
	CHECK(strstr(first, "\"2100\":300,\"0.25\":1,\"k1\":1,\"k10\":10,\"k100\":100,") != NULL);
	for (int i = 0; i < 4; i++) {
		L = luaL_newstate();
		luaL_openlibs(L);
		CHECK_EQ_STR(conv(code, 64, 1 << 20), first);
		lua_close(L);
	}
	L = saved;
}

static void test_strings(void)
{
	char buf[32];

	CHECK_EQ_INT(tp_utf8_fix("ab", 2, buf), 2);
	CHECK_EQ_INT(tp_utf8_fix("\xc0\xaf", 2, buf), 6); /* overlong: two bytes, two U+FFFD */
	CHECK(memcmp(buf, "\xef\xbf\xbd\xef\xbf\xbd", 6) == 0);
	CHECK_EQ_INT(tp_utf8_fix("\xf4\x90\x80\x80", 4, buf), 12); /* past U+10FFFF */
	CHECK_EQ_INT(tp_utf8_fix("\xf0\x9f\x98\x80", 4, buf), 4);  /* U+1F600 is fine */
	char q[64 + 16];
	CHECK_EQ_INT(tp_utf8_quote("a\"\\\n\0\x7f\xff\xc3\xa9", 9, q, 64), 27);
	CHECK_EQ_STR(q, "\"a\\\"\\\\\\n\\u0000\\u007F\\xFF\xc3\xa9\"");
	char long_s[200];
	memset(long_s, '\n', sizeof long_s);
	tp_utf8_quote(long_s, sizeof long_s, q, 64); /* cut after 64 bytes, "..." after */
	CHECK(strlen(q) <= 64 + 11 && strcmp(q + strlen(q) - 4, "\"...") == 0);
	json_t *s = tp_utf8_json("\xff", 1);
	CHECK_EQ_STR(json_string_value(s), "\xef\xbf\xbd");
	json_decref(s);
}

/* A stream repaired in pieces, each cut where tp_utf8_complete says, is the
 * whole repaired at once: for every byte string of an alphabet of leads,
 * continuations and ASCII, arriving in random pieces. */
static void test_utf8_pieces(void)
{
	static const unsigned char alpha[] = { 'a',  0xC3, 0xA9, 0xE2, 0x82, 0xAC, 0xF0,
					       0x9F, 0x98, 0x80, 0xE0, 0xED, 0xA0, 0xF4,
					       0x90, 0xFF, 0xC0, 0xBF, 0x0A, 0x00 };
	unsigned seed = 12345;
	int bad = 0;
	for (int round = 0; round < 20000; round++) {
		char s[24], whole[3 * 24], pieces[3 * 24];
		size_t n = (size_t)(seed = seed * 1103515245u + 12345u) % 24, sent = 0, avail = 0,
		       o = 0;
		for (size_t i = 0; i < n; i++) {
			seed = seed * 1103515245u + 12345u;
			s[i] = (char)alpha[(seed >> 16) % sizeof alpha];
		}
		size_t wn = tp_utf8_fix(s, n, whole);
		while (avail < n) { /* bytes arrive 1 to 4 at a time */
			seed = seed * 1103515245u + 12345u;
			avail += 1 + (seed >> 16) % 4;
			avail = avail < n ? avail : n;
			size_t k = tp_utf8_complete(s + sent, avail - sent);
			o += tp_utf8_fix(s + sent, k, pieces + o);
			sent += k;
		}
		o += tp_utf8_fix(s + sent, n - sent, pieces + o); /* the end: the rest */
		bad += o != wn || memcmp(whole, pieces, wn) != 0;
	}
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_INT(tp_utf8_complete("ab\xe2\x82", 4), 2);     /* held: a euro sign's start */
	CHECK_EQ_INT(tp_utf8_complete("ab\xe2\x82\xac", 5), 5); /* whole */
	CHECK_EQ_INT(tp_utf8_complete("ab\xe2\x41", 4), 4);     /* broken already: not held */
	CHECK_EQ_INT(tp_utf8_complete("\xf0\x9f\x98", 3), 0);   /* 3 of 4 */
	CHECK_EQ_INT(tp_utf8_complete("\xff", 1), 1);           /* never a lead */
}

int main(void)
{
	L = luaL_newstate();
	luaL_openlibs(L); /* a test state, not a sandbox */
	test_to_json();
	test_nonfinite();
	test_to_lua();
	test_numbers();
	test_keys();
	test_nul();
	test_deterministic();
	test_strings();
	test_utf8_pieces();
	lua_close(L);
	return tp_test_done("test_ljson");
}
