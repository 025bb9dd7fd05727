/*
 * test_lua.c — the Lua layer end to end: each case forks a worker from a state
 * built once by tp_lua_zygote_init(), runs one exec, and sends the reply back as
 * JSON text through a pipe; output and the sticky verdict come through shared memory.
 * What every language does alike (limits, results, inputs, seeds) is the table of
 * tests/cases/conformance.json, run by harness_conformance(); this file keeps Lua's own.
 */
#include "lsandbox.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lang_harness.h"

static void test_ok(void)
{
	run("print(1, 'a', nil, true) io.write('x', 2, '\\n')");
	CHECK_EQ_STR(R.out, "1\ta\tnil\ttrue\nx2\n");
	CHECK(json_is_null(value()));
	run("return 1, 'a', nil");
	CHECK_EQ_STR(value_text(), "[1,\"a\",null]");
	run("warn('@on') warn('hel', 'lo') return 0");
	CHECK_EQ_STR(R.err, "Lua warning: hello\n");
	run("warn('quiet') return 0");
	CHECK_EQ_STR(R.err, "");
	run("return ('x'):rep(3), #'abc'");
	CHECK_EQ_STR(value_text(), "[\"xxx\",3]");
	run("return pcall(error, 'x')");
	CHECK_EQ_STR(value_text(), "[false,\"x\"]");
	run("local co = coroutine.wrap(function() pcall(function() coroutine.yield(1) end) "
	    "return 2 end) return co(), co()");
	CHECK_EQ_STR(value_text(), "[1,2]");
	run("return os.date('!%Y', 0), os.time{year=2000, month=1, day=1, hour=0}");
	CHECK_EQ_STR(value_text(), "[\"1970\",946684800]");
}

static void test_errors(void)
{
	run("local x\n\nreturn x.y");
	CHECK_EQ_STR(err_s("kind"), "runtime_error");
	CHECK_EQ_STR(err_s("type"), "string");
	CHECK_EQ_INT(err_i("line"), 3);
	CHECK_EQ_STR(err_s("message"), "attempt to index a nil value (local 'x')");
	CHECK(err_s("traceback") && strstr(err_s("traceback"), "stack traceback") != NULL);
	run("error(setmetatable({}, {__tostring = function() return 'no' end}))");
	CHECK_EQ_STR(err_s("type"), "table");
	CHECK_EQ_STR(err_s("message"), "{}"); /* its JSON text; __tostring never runs */
	CHECK_EQ_INT(err_i("line"), 1);
	run("error({code = 42, message = 'bad input'})");
	CHECK_EQ_STR(err_s("type"), "table");
	CHECK_EQ_STR(err_s("message"), "bad input");
	run("local t = {}\nt.t = t\nerror(t)");
	CHECK_EQ_STR(err_s("message"), "(error object is a table value: cycle in value)");
	CHECK_EQ_INT(err_i("line"), 3);
	run("\nerror('boom', 0)");
	CHECK_EQ_STR(err_s("message"), "boom");
	CHECK_EQ_INT(err_i("line"), 2);
	run("error(42)");
	CHECK_EQ_STR(err_s("type"), "number");
	CHECK_EQ_STR(err_s("message"), "42");
}

static void test_memory(void)
{
	struct tp_limits l = limits();

	l.memory_bytes = 4u << 20;
	run_lim("local parts = {} while true do parts[#parts + 1] = load('return ' .. "
		"string.rep('1 + ', 1000) .. '1') end",
		l);
	CHECK_EQ_STR(err_s("kind"), "memory_limit");
}

/* Values are read raw: no metamethod runs while one becomes JSON. */
static void test_result(void)
{
	run("return setmetatable({a = 1}, {__index = function() error('x') end, "
	    "__pairs = function() error('y') end})");
	CHECK_EQ_STR(value_text(), "{\"a\":1}");
}

static void test_environment(void)
{
	/* Absent: not in the tables at all (rawget), and a read names the refusal. */
	run("local names = {'dofile', 'loadfile', 'debug', 'package', 'module'} "
	    "local out = {} for _, n in ipairs(names) do if rawget(_G, n) ~= nil then "
	    "out[#out+1] = n end end "
	    "if rawget(string, 'dump') or rawget(coroutine, 'close') or rawget(io, 'read') or "
	    "rawget(io, 'popen') or rawget(io, 'output') or rawget(os, 'execute') or "
	    "rawget(os, 'getenv') or rawget(os, 'exit') or rawget(os, 'remove') then "
	    "out[#out+1] = 'lib' end "
	    "return table.concat(out, ',')");
	CHECK_EQ_STR(json_string_value(value()), "");
	static const char *const refused[][2] = {
		{ "return dofile",
		  "dofile is not available in the sandbox (policy standard: no files)" },
		{ "return require('lpeg')",
		  "require('lpeg') is not available in the sandbox (policy standard: no modules; "
		  "its libraries are globals: string, table, math, utf8, coroutine, os, io, "
		  "json)" },
		{ "return debug",
		  "debug is not available in the sandbox (policy standard: no debug library)" },
		/* standard's sessions have a workspace: io.open is the file shim, and
		 * an exec without one has no file to open */
		{ "return io.open('/etc/passwd')",
		  "io.open('/etc/passwd') is refused: files are in a session's workspace, and "
		  "this exec has none (policy standard: open a session)" },
		{ "return io.popen",
		  "io.popen is not available in the sandbox (policy standard: no processes)" },
		{ "return os.execute",
		  "os.execute is not available in the sandbox (policy standard: no processes)" },
		{ "return os.getenv",
		  "os.getenv is not available in the sandbox (policy standard: no environment)" },
		{ "return ('').dump",
		  "string.dump is not available in the sandbox (policy standard: no bytecode)" },
		{ "return coroutine.close",
		  "coroutine.close is not available in the sandbox (policy standard)" },
		/* caught or not, a refusal ends the exec */
		{ "pcall(function() return os.exit end) return 1",
		  "os.exit is not available in the sandbox (policy standard: no processes)" },
	};
	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
		run(refused[i][0]);
		CHECK_EQ_STR(err_s("kind"), "policy_violation");
		CHECK_EQ_STR(err_s("message"), refused[i][1]);
	}
	/* Names plain Lua lacks read as nil, as in plain Lua. */
	run("x = x or 1 return x, os.nothing == nil, undefinedname == nil");
	CHECK_EQ_STR(value_text(), "[1,true,true]");
	run("local ok = pcall(collectgarbage, 'collect') return ok, pcall(collectgarbage), "
	    "type(collectgarbage('count'))");
	CHECK_EQ_STR(value_text(), "[false,false,\"number\"]");
	run("local f, e = load('\\27Lua\\84\\0') return f == nil, e");
	CHECK_EQ_STR(value_text(), "[true,\"attempt to load a binary chunk (mode is 't')\"]");
	run("local f = load('return 1 + x', 'c', 'b', {x = 2}) return f()");
	CHECK_EQ_INT(json_integer_value(value()), 3);
	run("return getmetatable('')");
	CHECK(json_is_false(value()));
	run("local ok = pcall(setmetatable, '', {}) return ok");
	CHECK(json_is_false(value()));
	run("print({}, print) return tostring({}), tostring(coroutine.create(print))");
	CHECK(strstr(R.out, "0x") == NULL);
	CHECK_EQ_STR(R.out, "table: #1\tfunction: #2\n");
	CHECK_EQ_STR(value_text(), "[\"table: #3\",\"thread: #4\"]");
	run("local t = {} return tostring(t) == tostring(t), "
	    "tostring(setmetatable({}, {__name = 'Point'}))");
	CHECK_EQ_STR(value_text(), "[true,\"Point: #2\"]");
	run("return pcall(string.format, '%p', {})");
	CHECK(json_is_false(json_array_get(value(), 0)));
	run("return string.format('%5.1f %s|%s|%d', 1.25, {}, 'z', 3), ('%s'):format(print)");
	CHECK_EQ_STR(value_text(), "[\"  1.2 table: #1|z|3\",\"function: #2\"]");
	run("return select('#', string.format('%%p'))");
	CHECK_EQ_INT(json_integer_value(value()), 1);
}

/* A worker's rehearsal (worker.c) leaves nothing an exec can see: the same
 * reply (globals, random stream, output, memory peak, errors) with or without
 * it. */
static void test_rehearsal(void)
{
	static const char *const codes[] = {
		"local n = 0 for k in pairs(_G) do n = n + 1 end return n",
		"return {math.random(1, 1000000), math.random()}",
		"print('x') return #{1, 2, 3}",
		"return t",
		"local s = {} for i = 1, 1000 do s[i] = i end return #s",
		"return 1+1",
		"x = 1 return x",
		"error('boom')",
	};
	for (size_t i = 0; i < sizeof codes / sizeof *codes; i++) {
		json_t *plain;
		char out[sizeof R.out];
		run(codes[i]);
		plain = json_deep_copy(R.reply);
		memcpy(out, R.out, sizeof out);
		harness_rehearse = 1;
		run(codes[i]);
		harness_rehearse = 0;
		json_object_del(json_object_get(plain, "usage"), "cpu_ms");
		json_object_del(json_object_get(R.reply, "usage"), "cpu_ms");
		/* The one difference: the interpreter keeps the CallInfo records of
		 * the rehearsal's nested calls (64 bytes each; Lua frees them lazily),
		 * which an exec that nests as deep allocates itself anyway. The peak
		 * counts the whole heap, so it may show them: at most 256 bytes. */
		json_t *pu = json_object_get(plain, "usage"),
		       *ru = json_object_get(R.reply, "usage");
		json_int_t p0 = json_integer_value(json_object_get(pu, "memory_peak_bytes"));
		json_int_t r0 = json_integer_value(json_object_get(ru, "memory_peak_bytes"));
		CHECK(p0 > 0 && r0 >= p0 && r0 - p0 <= 256);
		json_object_del(pu, "memory_peak_bytes");
		json_object_del(ru, "memory_peak_bytes");
		int same = json_equal(plain, R.reply);
		CHECK(same);
		if (!same) {
			char *a = json_dumps(plain, 0), *b = json_dumps(R.reply, 0);
			fprintf(stderr, "# %s\n#   plain:     %s\n#   rehearsed: %s\n", codes[i], a,
				b);
			free(a), free(b);
		}
		CHECK_EQ_STR(R.out, out);
		json_decref(plain);
	}
}

/* Isolation "state": after an exec that dirties all it can reach and the reset,
 * a probe reads what it reads in a worker that ran nothing before (but usage). */
static void test_state_reset(void)
{
	static const char *const dirty =
	    "warn('@on') warn('dirty') x = 1 string.upper = nil math.random() "
	    "local t = {} for i = 1, 1000 do t[i] = tostring({}) end "
	    "local co = coroutine.wrap(function() coroutine.yield(tostring(print)) end) co() "
	    "local c = os.clock() while os.clock() - c < 0.1 do end";
	static const char *const probes[] = {
		"return tostring({}), tostring({})",
		"return tostring(print), tostring(coroutine.create(print))",
		"print({}) return string.format('%s', {})",
		"warn('x') return 1",
		"return os.clock() < 0.05",
		"return x, type(string.upper)",
	};
	for (size_t i = 0; i < sizeof probes / sizeof *probes; i++) {
		char out[sizeof R.out], err[sizeof R.err];
		run(probes[i]);
		json_t *plain = json_deep_copy(R.reply);
		memcpy(out, R.out, sizeof out);
		memcpy(err, R.err, sizeof err);
		harness_before = dirty;
		run(probes[i]);
		harness_before = NULL;
		CHECK(plain != NULL && R.reply != NULL);
		if (plain == NULL || R.reply == NULL)
			continue;
		json_object_del(plain, "usage");
		json_object_del(R.reply, "usage");
		int same = json_equal(plain, R.reply);
		CHECK(same);
		if (!same) {
			char *a = json_dumps(plain, 0), *b = json_dumps(R.reply, 0);
			fprintf(stderr, "# %s\n#   fresh:  %s\n#   reused: %s\n", probes[i], a, b);
			free(a), free(b);
		}
		CHECK_EQ_STR(R.out, out);
		CHECK_EQ_STR(R.err, err);
		json_decref(plain);
	}
}

int main(void)
{
	if (harness_setup(&tp_lang_lua) != 0)
		return 1;
	test_rehearsal();
	CHECK_EQ_STR(tp_langs[tp_lang_lua.id].name, "lua");
	test_ok();
	test_errors();
	test_memory();
	test_result();
	test_environment();
	test_state_reset();
	harness_conformance();
	json_decref(R.reply);
	return tp_test_done("test_lua");
}
