/*
 * test_lua.c — the Lua layer end to end: each case forks a worker from a state
 * built once by tp_lua_zygote_init(), runs one exec, and sends the reply back as
 * JSON text through a pipe; output and the sticky verdict come through shared memory.
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
	run("print('hi') return 1+1");
	CHECK(json_is_true(json_object_get(R.reply, "ok")));
	CHECK_EQ_INT(json_integer_value(value()), 2);
	CHECK_EQ_STR(R.out, "hi\n");
	CHECK(json_is_null(json_object_get(R.reply, "error")));
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
	run("x = = 1");
	CHECK_EQ_STR(err_s("kind"), "syntax_error");
	CHECK_EQ_INT(err_i("line"), 1);
	CHECK_EQ_STR(err_s("message"), "unexpected symbol near '='");
	run("\n\nlocal = 3");
	CHECK_EQ_STR(err_s("kind"), "syntax_error");
	CHECK_EQ_INT(err_i("line"), 3);
	run("local x\n\nreturn x.y");
	CHECK_EQ_STR(err_s("kind"), "runtime_error");
	CHECK_EQ_STR(err_s("type"), "string");
	CHECK_EQ_INT(err_i("line"), 3);
	CHECK_EQ_STR(err_s("message"), "attempt to index a nil value (local 'x')");
	CHECK(err_s("traceback") && strstr(err_s("traceback"), "stack traceback") != NULL);
	run("error(setmetatable({}, {__tostring = function() return 'no' end}))");
	CHECK_EQ_STR(err_s("type"), "table");
	CHECK_EQ_STR(err_s("message"), "(error object is a table value)");
	CHECK_EQ_INT(err_i("line"), 1);
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
	run_lim("local s = string.rep('x', 1 << 30)", l);
	CHECK_EQ_STR(err_s("kind"), "memory_limit");
	CHECK(err_null("type")); /* a limit is no exception class */
	CHECK_EQ_STR(err_s("message"), "memory limit exceeded");
	CHECK_EQ_STR(lim_s("name"), "memory_bytes");
	CHECK_EQ_INT(lim_i("limit"), 4u << 20);
	CHECK(lim_i("used") > (4 << 20));
	run_lim("local t = {} for i = 1, 1e8 do t[i] = i end", l);
	CHECK_EQ_STR(err_s("kind"), "memory_limit");
	CHECK(lim_i("used") > (4 << 20));
	json_t *u = json_object_get(R.reply, "usage");
	CHECK(json_integer_value(json_object_get(u, "memory_peak_bytes")) <= (4 << 20));
	CHECK(json_integer_value(json_object_get(u, "memory_peak_bytes")) > (1 << 20));
	/* Caught by pcall: still the verdict. */
	run_lim("local ok = pcall(string.rep, 'x', 1 << 30) return ok", l);
	CHECK_EQ_STR(err_s("kind"), "memory_limit");
	run_lim("local parts = {} while true do parts[#parts + 1] = load('return ' .. "
		"string.rep('1 + ', 1000) .. '1') end",
		l);
	CHECK_EQ_STR(err_s("kind"), "memory_limit");
}

static const char *const swallow[] = {
	"while true do end",
	"while true do pcall(function() while true do end end) end",
	"while true do xpcall(function() while true do end end, "
	"function() while true do end end) end",
	"while true do pcall(coroutine.wrap(function() while true do end end)) end",
	"while true do coroutine.resume(coroutine.create(function() while true do end end)) end",
	"while true do pcall(load, function() while true do end end) end",
	"local t = setmetatable({}, {__gc = function() while true do end end}) t = nil "
	"while true do pcall(function() while true do end end) end",
	"do local x <close> = setmetatable({}, {__close = function() while true do end end}) "
	"while true do end end",
	"while true do pcall(function() local x <close> = setmetatable({}, "
	"{__close = function() while true do end end}) while true do end end) end",
	"while true do pcall(string.rep, 'x', 10) end",
};

static void test_instructions(void)
{
	struct tp_limits l = limits();

	l.instructions = 1000;
	run_lim("while true do end", l);
	CHECK_EQ_STR(err_s("kind"), "instruction_limit");
	CHECK_EQ_STR(lim_s("name"), "instructions");
	CHECK_EQ_INT(lim_i("limit"), 1000);
	CHECK_EQ_INT(lim_i("used"), 1000);
	CHECK_EQ_INT(
	    json_integer_value(json_object_get(json_object_get(R.reply, "usage"), "instructions")),
	    1000);
	CHECK_EQ_INT(err_i("line"), 1);
	l.instructions = 100000;
	for (size_t i = 0; i < sizeof swallow / sizeof swallow[0]; i++) {
		run_lim(swallow[i], l);
		CHECK_EQ_STR(err_s("kind"), "instruction_limit");
		CHECK_EQ_INT(lim_i("used"), 100000);
		if (strcmp(err_s("kind") ? err_s("kind") : "", "instruction_limit") != 0)
			fprintf(stderr, "  case: %s\n", swallow[i]);
	}
	run_lim("local n = 0 for i = 1, 10 do n = n + i end return n", l);
	CHECK_EQ_INT(json_integer_value(value()), 55);
	CHECK(json_integer_value(
		  json_object_get(json_object_get(R.reply, "usage"), "instructions")) > 0);
}

static void test_cpu(void)
{
	struct tp_limits l = limits();

	l.cpu_ms = 100;
	for (size_t i = 0; i < sizeof swallow / sizeof swallow[0]; i++) {
		run_lim(swallow[i], l);
		CHECK_EQ_STR(err_s("kind"), "cpu_limit");
		CHECK_EQ_STR(lim_s("name"), "cpu_ms");
		CHECK(lim_i("used") >= 100);
		if (strcmp(err_s("kind") ? err_s("kind") : "", "cpu_limit") != 0)
			fprintf(stderr, "  case: %s\n", swallow[i]);
	}
	/* Stuck inside one C call: the grace period ends the worker. */
	run_lim("return string.find(string.rep('a', 30000), '.-.-.-.-b$')", l);
	CHECK(R.reply == NULL);
	CHECK_EQ_INT(R.exit_code, 158);
	CHECK_EQ_INT(shm->tripped, TP_KIND_CPU_LIMIT);
}

static void test_output(void)
{
	struct tp_limits l = limits();

	l.output_bytes = 100;
	run_lim("while true do io.write('abcdefg') end", l);
	CHECK_EQ_STR(err_s("kind"), "output_limit");
	CHECK_EQ_STR(lim_s("name"), "output_bytes");
	CHECK_EQ_INT(lim_i("limit"), 100);
	CHECK_EQ_INT(lim_i("used"), 105);
	CHECK_EQ_INT(strlen(R.out), 100);
	CHECK(strncmp(R.out, "abcdefgabc", 10) == 0);
	run_lim("while true do pcall(print, 'flood') end", l);
	CHECK_EQ_STR(err_s("kind"), "output_limit");
	CHECK_EQ_INT(strlen(R.out), 100);
}

static void test_result(void)
{
	struct tp_limits l = limits();

	l.result_depth = 5;
	run_lim("local t = {} local c = t for i = 1, 10 do c[1] = {} c = c[1] end return t", l);
	CHECK_EQ_STR(err_s("kind"), "output_limit");
	CHECK_EQ_STR(lim_s("name"), "result_depth");
	CHECK_EQ_INT(lim_i("limit"), 5);
	CHECK_EQ_INT(lim_i("used"), 6);
	run_lim("return {{{{{1}}}}}", l);
	CHECK_EQ_STR(value_text(), "[[[[[1]]]]]");
	l = limits();
	l.result_bytes = 100;
	run_lim("return string.rep('x', 1000)", l);
	CHECK_EQ_STR(err_s("kind"), "output_limit");
	CHECK_EQ_STR(lim_s("name"), "result_bytes");
	CHECK_EQ_INT(lim_i("limit"), 100);
	CHECK_EQ_INT(lim_i("used"), 1002);
	run("local t = {} t.self = t return t");
	CHECK_EQ_STR(err_s("kind"), "result_error");
	CHECK(err_null("type"));
	CHECK_EQ_STR(err_s("message"), "cycle in returned value");
	run("return setmetatable({a = 1}, {__index = function() error('x') end, "
	    "__pairs = function() error('y') end})");
	CHECK_EQ_STR(value_text(), "{\"a\":1}");
}

static void test_environment(void)
{
	run("local names = {'dofile', 'loadfile', 'require', 'debug', 'package', 'module'} "
	    "local out = {} for _, n in ipairs(names) do if _G[n] ~= nil then out[#out+1] = n end "
	    "end "
	    "if string.dump or coroutine.close or io.read or io.open or io.lines or os.execute "
	    "or os.getenv or os.exit or os.remove or ('').dump then out[#out+1] = 'lib' end "
	    "return table.concat(out, ',')");
	CHECK_EQ_STR(json_string_value(value()), "");
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

static void test_inputs_and_seed(void)
{
	struct tp_request req = { .code = "return {x, y[3].z, n == nil, y[2] == nil}",
				  .limits = limits() };
	json_t *in =
	    json_loads("{\"x\": 1.5, \"y\": [1, null, {\"z\": \"w\"}], \"n\": null}", 0, NULL);

	req.code_len = strlen(req.code);
	req.inputs = in;
	json_decref(R.reply);
	run_req(&R, &req, 1);
	CHECK_EQ_STR(value_text(), "[1.5,\"w\",true,true]");
	req.limits.result_depth = 1;
	json_decref(R.reply);
	run_req(&R, &req, 1);
	CHECK_EQ_STR(err_s("kind"), "input_error");
	CHECK(err_null("type"));
	json_decref(in);

	char a[256], b[256];
	req = (struct tp_request){ .code = "return {math.random(1 << 40), math.random(1 << 40)}",
				   .limits = limits(),
				   .has_seed = 1,
				   .seed = 42 };
	req.code_len = strlen(req.code);
	json_decref(R.reply);
	run_req(&R, &req, 1);
	snprintf(a, sizeof a, "%s", value_text());
	json_decref(R.reply);
	run_req(&R, &req, 2);
	snprintf(b, sizeof b, "%s", value_text());
	CHECK_EQ_STR(a, b);
	req.has_seed = 0;
	json_decref(R.reply);
	run_req(&R, &req, 1);
	snprintf(a, sizeof a, "%s", value_text());
	json_decref(R.reply);
	run_req(&R, &req, 2);
	snprintf(b, sizeof b, "%s", value_text());
	CHECK(strcmp(a, b) != 0);
}

int main(void)
{
	if (harness_setup(&tp_lang_lua) != 0)
		return 1;
	CHECK_EQ_STR(tp_langs[tp_lang_lua.id].name, "lua");
	test_ok();
	test_errors();
	test_memory();
	test_instructions();
	test_cpu();
	test_output();
	test_result();
	test_environment();
	test_inputs_and_seed();
	json_decref(R.reply);
	return tp_test_done("test_lua");
}
