/*
 * lsandbox.c — the top of the Lua language layer: the pristine state (zygote),
 * the reseed (worker), and one exec under the memory, instruction, CPU and
 * output limits, which the guard below keeps (lguard.c: once a limit trips no
 * more snippet code runs, and the verdict comes from that sticky flag, never
 * from an error value). It calls down into the environment (lenv.c), the guard
 * and the converters (ljson.c); nothing in lua-sandbox/ but lmain.c calls it.
 */
#include "lsandbox.h"

#include "lenv.h"
#include "lguard.h"

#include <errno.h>
#include <lauxlib.h>
#include <lualib.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "jsonio.h"
#include "lalloc.h"
#include "ljson.h"
#include "utf8.h"
#include "verdict.h"
#include "lockdown.h"
#include "toolcall.h"

#define SEED_KEY TP_LENV_SEED_KEY
#define CHUNKNAME TP_LUA_CHUNKNAME
#define MAIN_CHUNK TP_LUA_MAIN_CHUNK

/* This file's state (S, not L: L is a lua_State throughout the Lua layer). The
 * exec's bookkeeping is lguard.c's tp_lua_x, rebuilt by begin() for every exec;
 * S.L and g_alloc are handed to the guard whenever the state is built. No
 * signal handler reads S. */
static struct {
	/* The pristine state: built in the zygote (tp_lua_zygote_init), before any
	 * worker, which inherits a copy; rebuilt in a state worker by tp_lua_reset()
	 * between execs. */
	lua_State *L;
	/* Per exec, by begin(): this process's state has served a session's exec,
	 * so the session's next execs keep its exec_env (lenv.c). */
	int session_begun;
} S;
/* The state's allocator: initialised with S.L; its limit and counters set per
 * exec by begin(), its counts moved by every allocation. A global of its own,
 * not a field of S: the CPU timer's SIGPROF handler reads its peak (through
 * lguard.c's tp_lua_guard_publish). */
static struct tp_lalloc g_alloc;

/* ---- one exec ------------------------------------------------------------------------ */

enum stage { ST_INPUTS, ST_LOAD, ST_RUN };

static void reseed(uint64_t seed)
{
	lua_getfield(S.L, LUA_REGISTRYINDEX, SEED_KEY);
	lua_pushinteger(S.L, (lua_Integer)seed);
	lua_pushinteger(S.L, 0);
	if (lua_pcall(S.L, 2, 0, 0) != LUA_OK)
		lua_pop(S.L, 1);
}

static int kernel_only(void)
{
	const struct tp_policy *p = tp_sandbox_policy();
	return p != NULL && !p->language_layer;
}

static void begin(const struct tp_request *req, struct tp_shm *shm)
{
	memset(&tp_lua_x, 0, sizeof tp_lua_x); /* the CPU timer is off: no handler reads it */
	tp_lua_x.shm = shm;
	tp_lua_x.lim = req->limits;
	tp_lua_x.running = S.L;
	tp_lua_x.err_line = -1;
	tp_lua_x.tb_ref = LUA_NOREF;
	tp_shm_begin(shm, req->limits.output_bytes);
	tp_lalloc_set_limit(&g_alloc, 0); /* until the exec's own: these must not fail */
	if (!req->session || !S.session_begun)
		tp_lenv_exec_reset(S.L); /* a state no exec used: nothing of another's */
	S.session_begun = req->session;
	if (req->has_seed)
		reseed(req->seed);
	/* Without a language layer the kernel holds memory_bytes (RLIMIT_AS,
	 * verdict.h): the heap only measures, and a malloc the kernel fails trips
	 * memory_limit at once, sticky even under the snippet's own pcall. */
	tp_lua_x.kernel = kernel_only();
	tp_lalloc_set_limit(&g_alloc, tp_lua_x.kernel ? 0 : req->limits.memory_bytes);
	g_alloc.on_fail = tp_lua_x.kernel ? tp_lua_guard_trip_memory : NULL;
	g_alloc.refusals = 0;
	g_alloc.refused_total = 0;
	tp_lalloc_reset_peak(&g_alloc);
	tp_lua_guard_publish(shm);
	tp_verdict_begin(shm, &req->limits, &tp_lua_verdict_ops);
}

/* Protected: [1] = the request. Each key of inputs becomes a global. */
static int inputs_main(lua_State *L)
{
	const struct tp_request *req = lua_touserdata(L, 1);
	json_t *obj = (json_t *)req->inputs;

	if (obj == NULL || json_is_null(obj))
		return 0;
	if (!json_is_object(obj))
		return luaL_error(L, "inputs must be an object");
	lua_pushglobaltable(L);
	for (void *it = json_object_iter(obj); it; it = json_object_iter_next(obj, it)) {
		lua_pushlstring(L, json_object_iter_key(it), json_object_iter_key_len(it));
		tp_ljson_push(L, json_object_iter_value(it), tp_lua_x.lim.result_depth);
		lua_rawset(L, -3);
	}
	return 0;
}

static int set_inputs(lua_State *L, const struct tp_request *req)
{
	lua_pushcfunction(L, inputs_main);
	lua_pushlightuserdata(L, (void *)req);
	return lua_pcall(L, 1, 0, 0);
}

static int run(lua_State *L)
{
	if (tp_lua_x.lim.instructions != 0)
		tp_lua_guard_charge(L,
				    MAIN_CHUNK); /* the hook is on before any snippet instruction */
	/* end_run stopped the collector after a session's last exec: it runs again
	 * only now, under this exec's limits (finalizers the last exec left are
	 * this one's work). */
	lua_gc(L, LUA_GCRESTART);
	return lua_pcall(L, 0, LUA_MULTRET, 1);
}

/* After the top-level call: no GC, no finalizer, no hook, no timer from here on. */
static void end_run(lua_State *L, int status)
{
	lua_gc(L, LUA_GCSTOP);
	tp_verdict_end();
	lua_sethook(L, NULL, 0, 0);
	tp_lua_x.running = NULL;
	g_alloc.on_fail = NULL; /* the reply's allocations are not the snippet's */
	if (status == LUA_ERRMEM)
		tp_lua_guard_trip_memory();
}

/* ---- the reply ----------------------------------------------------------------------- */

/* Error text is for people: a multi-megabyte message is cut, so the reply stays
 * far below the host's frame cap (which refuses the whole reply otherwise). */
#define MAX_ERROR_TEXT (8u << 10)

static json_t *capped_string(const char *s, size_t n)
{
	char tail[64];
	if (n <= MAX_ERROR_TEXT)
		return tp_utf8_json(s, n);
	json_t *j = tp_utf8_json(s, MAX_ERROR_TEXT);
	snprintf(tail, sizeof tail, "... (%zu bytes cut)", n - MAX_ERROR_TEXT);
	if (j != NULL) {
		char *joined = NULL;
		if (asprintf(&joined, "%s%s", json_string_value(j), tail) >= 0) {
			json_string_set(j, joined);
			free(joined);
		}
	}
	return j;
}

static json_t *traceback(lua_State *L)
{
	size_t n;
	const char *s;
	json_t *v;

	if (tp_lua_x.tb_ref == LUA_NOREF || tp_lua_x.tb_ref == LUA_REFNIL)
		return NULL;
	lua_rawgeti(L, LUA_REGISTRYINDEX, tp_lua_x.tb_ref);
	s = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &n) : NULL;
	v = s ? capped_string(s, n) : NULL;
	lua_pop(L, 1);
	return v;
}

static int limit_failure(lua_State *L, struct tp_failure *f)
{
	json_t *tb = traceback(L);
	int rc = tp_verdict_tripped_failure(f, tp_lua_x.refusal, tb, tp_lua_x.err_line);

	json_decref(tb);
	return rc;
}

/* "snippet:12: msg" -> "msg", line 12; other text is left as it is. */
static void strip_position(const char **s, size_t *n, int *line)
{
	const char *p = *s, *end = *s + *n;
	size_t pre = strlen(CHUNKNAME) - 1;
	int v = 0;

	if (*n <= pre || memcmp(p, CHUNKNAME + 1, pre) != 0 || p[pre] != ':')
		return;
	for (p += pre + 1; p < end && *p >= '0' && *p <= '9' && v < 100000000; p++)
		v = v * 10 + (*p - '0');
	if (p + 1 >= end || p[0] != ':' || p[1] != ' ' || v == 0)
		return;
	*line = v;
	*n = (size_t)(end - (p + 2));
	*s = p + 2;
}

/* The error value's text without running any of its metamethods. */
static json_t *error_message(lua_State *L, int idx, int *line)
{
	char buf[64];
	size_t n;
	const char *s;

	switch (lua_type(L, idx)) {
	case LUA_TSTRING:
		s = lua_tolstring(L, idx, &n);
		strip_position(&s, &n, line);
		return capped_string(s, n);
	case LUA_TNUMBER:
		if (lua_isinteger(L, idx))
			snprintf(buf, sizeof buf, "%lld", (long long)lua_tointeger(L, idx));
		else
			snprintf(buf, sizeof buf, "%.14g", (double)lua_tonumber(L, idx));
		return json_string(buf);
	default:
		snprintf(buf, sizeof buf, "(error object is a %s value)",
			 lua_typename(L, lua_type(L, idx)));
		return json_string(buf);
	}
}

/* A table error value (error({code = 42, message = "..."})) as JSON, under the
 * result caps, raw access only; its message is its "message" field when that is
 * a string, else its JSON text. NULL data when it cannot become JSON: the
 * message then says why. */
static json_t *table_error(lua_State *L, json_t **msg)
{
	struct tp_ljson_caps caps = { tp_lua_x.lim.result_depth, tp_lua_x.lim.result_bytes, 0 };
	struct tp_ljson_out out;
	char buf[TP_LJSON_MESSAGE_MAX + 64], cap[64];
	const char *why = NULL;
	int has_message = 0;

	tp_lua_guard_lend(1); /* like the returned value's conversion */
	if (!lua_checkstack(L, 4)) {
		tp_lua_guard_lend(0);
		return NULL;
	}
	lua_pushliteral(L, "message");
	if (lua_rawget(L, -2) == LUA_TSTRING) {
		size_t n;
		const char *s = lua_tolstring(L, -1, &n);
		json_decref(*msg);
		*msg = capped_string(s, n);
		has_message = 1;
	}
	lua_pop(L, 1);
	lua_pushvalue(L, -1);
	tp_ljson_from_lua(L, 1, &caps, &out); /* pops the copy */
	tp_lua_guard_lend(0);
	switch (out.fail) {
	case TP_LJSON_OK: break;
	case TP_LJSON_DEPTH:
		snprintf(cap, sizeof cap, "nested deeper than result_depth (%llu)",
			 (unsigned long long)caps.depth);
		why = cap;
		break;
	case TP_LJSON_BYTES:
		snprintf(cap, sizeof cap, "longer than result_bytes (%llu)",
			 (unsigned long long)caps.bytes);
		why = cap;
		break;
	case TP_LJSON_CYCLE: why = "cycle in value"; break;
	case TP_LJSON_KEYS:
	case TP_LJSON_NUMBER: why = out.message; break;
	case TP_LJSON_LUAERR: why = "out of memory"; break;
	}
	if (why != NULL) {
		if (!has_message) {
			snprintf(buf, sizeof buf, "(error object is a table value: %s)", why);
			json_decref(*msg);
			*msg = json_string(buf);
		}
		return NULL;
	}
	if (!has_message) {
		char *text = tp_json_dumps(out.value, JSON_COMPACT | JSON_ENCODE_ANY);
		if (text != NULL) {
			json_decref(*msg);
			*msg = capped_string(text, strlen(text));
			free(text);
		}
	}
	return out.value;
}

/* The error value on top of the stack as the reply's failure. */
static int error_failure(lua_State *L, enum stage stage, struct tp_failure *f)
{
	int line = -1, rc;
	json_t *msg = error_message(L, -1, &line), *tb = NULL, *data = NULL;
	const char *type = luaL_typename(L, -1);

	if (stage == ST_RUN && lua_type(L, -1) == LUA_TTABLE)
		data = table_error(L, &msg);

	if (stage == ST_INPUTS)
		rc = tp_verdict_failure(f, TP_KIND_INPUT_ERROR, NULL, msg, NULL, line);
	else if (stage == ST_LOAD)
		rc = tp_verdict_failure(f, TP_KIND_SYNTAX_ERROR, type, msg, NULL, line);
	else {
		tb = traceback(L);
		rc = tp_verdict_failure(f, TP_KIND_RUNTIME_ERROR, type, msg, tb,
					line > 0 ? line : tp_lua_x.err_line);
		if (rc == 0)
			f->data = json_incref(data);
	}
	json_decref(data);
	json_decref(msg);
	json_decref(tb);
	return rc;
}

static int result_failure(struct tp_failure *f, const char *message)
{
	json_t *m = json_string(message);
	int rc = tp_verdict_failure(f, TP_KIND_RESULT_ERROR, NULL, m, NULL, -1);

	json_decref(m);
	return rc;
}

/* The values above the message handler, as JSON; NULL with *fail set (a cycle,
 * keys that collide, NaN, a value that cannot be converted) or a trip. */
static json_t *convert_result(lua_State *L, const char **fail, json_t **nonfinite)
{
	char *message = tp_lua_x.conv_message;
	struct tp_ljson_caps caps = { tp_lua_x.lim.result_depth, tp_lua_x.lim.result_bytes, 1 };
	struct tp_ljson_out out;

	tp_lua_guard_lend(1);
	if (!lua_checkstack(L, 4)) {
		tp_lua_guard_lend(0);
		tp_lua_guard_trip_memory();
		return NULL;
	}
	tp_ljson_from_lua(L, lua_gettop(L) - 1, &caps, &out);
	tp_lua_guard_lend(0);
	switch (out.fail) {
	case TP_LJSON_OK: *nonfinite = out.nonfinite; return out.value;
	case TP_LJSON_DEPTH:
		tp_lua_guard_trip(TP_KIND_OUTPUT_LIMIT, TP_LIMIT_RESULT_DEPTH, caps.depth,
				  out.used);
		break;
	case TP_LJSON_BYTES:
		tp_lua_guard_trip(TP_KIND_OUTPUT_LIMIT, TP_LIMIT_RESULT_BYTES, caps.bytes,
				  out.used);
		break;
	case TP_LJSON_CYCLE: *fail = "cycle in returned value"; break;
	case TP_LJSON_KEYS:
	case TP_LJSON_NUMBER:
		memcpy(message, out.message, sizeof tp_lua_x.conv_message);
		*fail = message;
		break;
	case TP_LJSON_LUAERR:
		if (out.lua_status == LUA_ERRMEM)
			tp_lua_guard_trip_memory();
		else
			*fail = "the returned value could not be converted";
	}
	return NULL;
}

/* One returned value as lua5.4's interactive interpreter prints it, from its
 * JSON form: a string as it is, a number as tostring writes it (LUA_NUMBER_FMT, "%.14g", a
 * float that looks whole gets ".0"), nil, true, false; a table as its JSON
 * text (the interpreter would print an address, which tidepool hides); a
 * function, thread or userdata as its JSON string ("<function>"). No
 * metamethod runs: __tostring and __name are not asked. */
static int put_text(char **buf, size_t *len, const json_t *v, const char *nonfinite)
{
	char num[64], *s = num, *more;
	size_t n;
	int own = 0;

	if (nonfinite != NULL) { /* NaN (whatever its sign bit), inf, -inf */
		s = (char *)nonfinite;
		n = strlen(s);
	} else if (json_is_string(v)) {
		s = (char *)json_string_value(v);
		n = json_string_length(v);
	} else if (json_is_integer(v)) {
		n = (size_t)snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT,
				     json_integer_value(v));
	} else if (json_is_real(v)) {
		n = (size_t)snprintf(num, sizeof num, LUA_NUMBER_FMT, json_real_value(v));
		if (num[strspn(num, "-0123456789")] == '\0')
			n += (size_t)snprintf(num + n, sizeof num - n, ".0");
	} else if (json_is_null(v) || json_is_boolean(v)) {
		s = json_is_null(v) ? "nil" : json_is_true(v) ? "true" : "false";
		n = strlen(s);
	} else {
		s = tp_json_dumps(v, JSON_COMPACT);
		if (s == NULL)
			return -1;
		n = strlen(s);
		own = 1;
	}
	more = realloc(*buf, *len + n + 2);
	if (more != NULL) {
		if (*len > 0)
			more[(*len)++] = '\t'; /* print()'s separator, as the interpreter's */
		memcpy(more + *len, s, n);
		*len += n;
		more[*len] = '\0';
		*buf = more;
	}
	if (own)
		free(s);
	return more != NULL ? 0 : -1;
}

/* The returned values (nvals of them, as value holds them) as the
 * interpreter prints them, tab-separated, cut to result_bytes at a character
 * boundary; absent when nothing was returned. -1 out of memory. */
static int value_text(const json_t *value, int nvals, const json_t *nonfinite, struct tp_reply *out)
{
	char *buf = NULL, ptr[24];
	size_t len = 0;

	/* One table: its text is the value's own JSON text, which the reply
	 * carries once (text_is_value: the host makes the text from it). */
	if (nvals == 1 && (json_is_object(value) || json_is_array(value))) {
		out->text_is_value = 1;
		return 0;
	}
	for (int i = 0; i < nvals; i++) {
		/* A returned NaN or infinity is null in value: its pointer names it. */
		snprintf(ptr, sizeof ptr, nvals == 1 ? "" : "/%d", i);
		if (put_text(&buf, &len, nvals == 1 ? value : json_array_get(value, (size_t)i),
			     json_string_value(json_object_get(nonfinite, ptr))) != 0) {
			free(buf);
			return -1;
		}
	}
	if (buf == NULL)
		return 0;
	if (len > tp_lua_x.lim.result_bytes) {
		len = (size_t)tp_lua_x.lim.result_bytes;
		while (len > 0 && ((unsigned char)buf[len] & 0xc0) == 0x80)
			len--;
		buf[len] = '\0';
		out->text_cut = 1;
	}
	out->text.s = buf;
	out->text.n = len;
	return 0;
}

static void usage(struct tp_usage *u)
{
	u->instructions = tp_lua_x.lim.instructions ? tp_lua_x.charged : 0;
	u->memory_peak_bytes = g_alloc.peak;
	u->cpu_us = tp_verdict_cpu_us();
}

static int reply(lua_State *L, enum stage stage, int status, struct tp_reply *out)
{
	const char *fail = NULL;
	json_t *value = NULL, *nonfinite = NULL;
	int nvals = lua_gettop(L) - 1; /* above the message handler */

	memset(out, 0, sizeof *out);
	if (!tp_lua_guard_tripped() && status == LUA_OK)
		value = convert_result(L, &fail, &nonfinite);
	if (value == NULL || fail != NULL || tp_lua_guard_tripped() || status != LUA_OK) {
		json_decref(nonfinite);
		nonfinite = NULL;
	}
	tp_lua_guard_publish(tp_lua_x.shm);
	usage(&out->usage);
	if (tp_lua_guard_tripped()) {
		json_decref(value);
		return limit_failure(L, &out->error);
	}
	if (status != LUA_OK)
		return error_failure(L, stage, &out->error);
	char cut[512];
	if (stage == ST_RUN && tp_lenv_flush_written(L, cut, sizeof cut)) {
		json_t *m = json_string(cut);
		json_decref(value);
		json_decref(nonfinite);
		int rc =
		    tp_verdict_failure(&out->error, TP_KIND_RUNTIME_ERROR, "string", m, NULL, -1);
		json_decref(m);
		return rc;
	}
	if (fail != NULL)
		return result_failure(&out->error, fail);
	out->ok = 1;
	out->value = value;
	out->nonfinite = nonfinite;
	nonfinite = NULL;
	if (value != NULL && value_text(value, nvals, out->nonfinite, out) != 0) {
		tp_lua_guard_trip_memory();
		json_decref(value);
		json_decref(out->nonfinite);
		out->nonfinite = NULL;
		out->ok = 0;
		out->value = NULL;
		return limit_failure(L, &out->error);
	}
	return value != NULL ? 0 : -1;
}

int tp_lua_exec(const struct tp_request *req, struct tp_shm *shm, struct tp_reply *out)
{
	lua_State *L = S.L;
	enum stage stage = ST_INPUTS;
	int status;

	if (L == NULL)
		return -1;
	begin(req, shm);
	lua_settop(L, 0);
	lua_pushcfunction(L, tp_lua_guard_msgh); /* index 1 for the whole exec */
	status = set_inputs(L, req);
	if (status == LUA_OK) {
		stage = ST_LOAD;
		/* Text only: untrusted bytecode breaks the VM's memory safety. */
		status = luaL_loadbufferx(L, req->code, req->code_len, CHUNKNAME, "t");
	}
	if (status == LUA_OK) {
		stage = ST_RUN;
		status = run(L);
	}
	end_run(L, status);
	int rc = reply(L, stage, status, out);
	if (req->rehearsal) {
		/* Its garbage goes now, so the real exec finds the heap as the zygote
		 * left it (the same memory figures); the heap is a few pages. */
		lua_settop(L, 0);
		lua_gc(L, LUA_GCCOLLECT);
		tp_lua_x.shm = NULL;
	}
	return rc;
}

/* ---- tools.call: the client's tools ------------------------------------------------------ */

/* tools.call(name [, args]): args a table with string keys (or nil); the
 * client's result as a Lua value, or an ordinary error with its message. The
 * host decides whether the call is allowed (policy tools, tool_calls). */
static int l_tools_call(lua_State *L)
{
	const char *name = luaL_checkstring(L, 1);
	struct tp_ljson_caps caps = { tp_lua_x.lim.result_depth, tp_lua_x.lim.result_bytes, 0 };
	struct tp_ljson_out conv;
	struct tp_tool_result res;
	json_t *args;

	if (lua_isnoneornil(L, 2)) {
		args = json_object();
	} else {
		luaL_checktype(L, 2, LUA_TTABLE);
		lua_settop(L, 2);
		tp_ljson_from_lua(L, 1, &caps, &conv);
		if (conv.fail == TP_LJSON_LUAERR)
			return luaL_error(L, "not enough memory");
		if (conv.fail == TP_LJSON_BYTES)
			return luaL_error(L,
					  "tools.call: arguments cannot become JSON: they are "
					  "more than %I bytes of JSON (result_bytes)",
					  (lua_Integer)tp_lua_x.lim.result_bytes);
		if (conv.fail == TP_LJSON_DEPTH)
			return luaL_error(L,
					  "tools.call: arguments cannot become JSON: they are "
					  "nested deeper than result_depth (%I)",
					  (lua_Integer)tp_lua_x.lim.result_depth);
		if (conv.fail == TP_LJSON_CYCLE)
			return luaL_error(L, "tools.call: arguments cannot become JSON: a table "
					     "contains itself");
		if (conv.fail != TP_LJSON_OK)
			return luaL_error(L, "tools.call: arguments cannot become JSON%s%s",
					  conv.message[0] ? ": " : "", conv.message);
		args = conv.value;
		if (json_is_array(args) && json_array_size(args) == 0) {
			json_decref(args); /* {} reads as an empty array: it is no arguments */
			args = json_object();
		}
		if (!json_is_object(args)) {
			json_decref(args);
			return luaL_error(L, "tools.call: arguments must be a table with string "
					     "keys");
		}
	}
	if (args == NULL)
		return luaL_error(L, "not enough memory");
	int rc = tp_tool_invoke(name, args, &tp_lua_x.lim, &res);
	json_decref(args);
	if (rc != 0)
		_exit(TP_EXIT_FATAL); /* the channel is gone: so is the host */
	if (res.status == TP_TOOL_OK) {
		tp_ljson_push(L, res.value, tp_lua_x.lim.result_depth);
		tp_tool_result_free(&res);
		return 1;
	}
	lua_pushlstring(L, res.message.s, res.message.n);
	tp_tool_result_free(&res);
	return lua_error(L);
}

static void open_tools(lua_State *L)
{
	lua_createtable(L, 0, 1);
	lua_pushcfunction(L, l_tools_call);
	lua_setfield(L, -2, "call");
	lua_setglobal(L, "tools");
}

/* ---- zygote and worker --------------------------------------------------------------- */

/* An error outside any protected call is our bug: end the worker, run nothing. */
static int on_panic(lua_State *L)
{
	(void)L;
	_exit(TP_EXIT_FATAL);
}

/* Isolation "state": setmetatable refuses a metatable with __gc. A finalizer
 * is code that runs after its exec (when the state is collected or closed),
 * where the next exec's request may already wait: nothing of an exec may. */
static int setmetatable_no_gc(lua_State *L)
{
	if (lua_type(L, 2) == LUA_TTABLE) {
		lua_pushliteral(L, "__gc");
		if (lua_rawget(L, 2) != LUA_TNIL) {
			char msg[256];
			const struct tp_policy *p = tp_sandbox_policy();
			snprintf(msg, sizeof msg,
				 "a __gc metamethod is not available under isolation \"state\" "
				 "(policy %s): nothing of an exec may run after it",
				 p ? p->name : "?");
			return tp_lua_guard_refuse(L, TP_KIND_POLICY_VIOLATION, "isolation", msg);
		}
		lua_pop(L, 1);
	}
	lua_pushvalue(L, lua_upvalueindex(1));
	lua_insert(L, 1);
	lua_call(L, lua_gettop(L) - 1, 1);
	return 1;
}

static int zygote_main(lua_State *L)
{
	const struct tp_policy *p = tp_sandbox_policy();
	tp_lenv_open(L); /* keeps the stock math.randomseed at SEED_KEY */
	open_tools(L);
	if (p != NULL && strcmp(p->isolation, "state") == 0) {
		lua_getglobal(L, "setmetatable");
		if (lua_isfunction(L, -1)) {
			lua_pushcclosure(L, setmetatable_no_gc, 1);
			lua_setglobal(L, "setmetatable");
		} else {
			lua_pop(L, 1);
		}
	}
	return 0;
}

/* The pristine state: the policy's environment, nothing of any exec. */
static int build_state(struct tp_err *err, int scrub, int collect)
{
	tp_lalloc_init(&g_alloc, 0);
	g_alloc.scrub = scrub;
	S.L = lua_newstate(tp_lalloc, &g_alloc);
	tp_lua_guard_init(S.L, &g_alloc);
	if (S.L == NULL)
		return tp_err_set(err, TP_KIND_INTERNAL, TP_LAYER_LANGUAGE, ENOMEM,
				  "lua_newstate: out of memory");
	lua_atpanic(S.L, on_panic);
	lua_pushcfunction(S.L, zygote_main);
	if (lua_pcall(S.L, 0, 0, 0) != LUA_OK) {
		tp_err_set(err, TP_KIND_INTERNAL, TP_LAYER_LANGUAGE, 0,
			   "building the Lua environment: %s", lua_tostring(S.L, -1));
		lua_close(S.L);
		S.L = NULL;
		return -1;
	}
	if (collect) /* the zygote's heap, compact before every fork */
		lua_gc(S.L, LUA_GCCOLLECT);
	return 0;
}

int tp_lua_zygote_init(struct tp_err *err)
{
	if (S.L != NULL)
		return 0;
	tzset(); /* reads TZ's zone file now: after lockdown no file can be opened */
	return build_state(err, 0, 1);
}

/* Any function the old state would run while it closes (a __gc or __close
 * the code left, Lua or C: print, tools.call) errors at its call instead. */
static void refuse_all(lua_State *L, lua_Debug *ar)
{
	(void)ar;
	luaL_error(L, "closed");
}

static void warn_nothing(void *ud, const char *msg, int tocont)
{
	(void)ud;
	(void)msg;
	(void)tocont;
}

/* Isolation "state": the exec's state goes, scrubbed block by block, without
 * running any of its code; a fresh one is built from the policy. */
static int tp_lua_reset(uint64_t entropy)
{
	struct tp_err err = { 0 };
	if (S.L == NULL)
		return -1;
	tp_lua_x.shm = NULL; /* no output from here on, whatever runs */
	g_alloc.limit = 0;   /* closing only frees; its errors must not fail for memory */
	g_alloc.scrub = 1;
	lua_sethook(S.L, refuse_all, LUA_MASKCALL | LUA_MASKCOUNT, 1);
	lua_setwarnf(S.L, warn_nothing, NULL);
	lua_close(S.L);
	S.L = NULL;
	explicit_bzero(tp_lua_x.refusal, sizeof tp_lua_x.refusal);
	explicit_bzero(tp_lua_x.conv_message, sizeof tp_lua_x.conv_message);
	if (g_alloc.current != 0)
		return -1; /* a block the scrub did not see: do not serve on it */
	if (build_state(&err, 1, 0) != 0)
		return -1;
	reseed(entropy);
	return 0;
}

void tp_lua_worker_init(uint64_t entropy)
{
	if (S.L != NULL)
		reseed(entropy); /* forked workers must never share a random stream */
}

/* The rehearsal (lang.h, worker.c): what most snippets do first, a value, a
 * loop filling a table, strings made and formatted, a function called. They
 * set no global, draw no random number and print nothing; what they leave is
 * garbage of a few hundred bytes, which no exec can tell from its own. */
static const char *const rehearsal[] = {
	"return 1+1",
	"local t = {} for i = 1, 20 do t[#t + 1] = string.format('%d:%s', i, tostring(i * 1.5)) "
	"end "
	"local function f(x) return x .. '!' end return f(table.concat(t, ',')):upper():len()",
	NULL,
};

const struct tp_lang tp_lang_lua = {
	.id = TP_LANG_LUA,
	.zygote_init = tp_lua_zygote_init,
	.worker_init = tp_lua_worker_init,
	.exec = tp_lua_exec,
	.reset = tp_lua_reset,
	.rehearsal = rehearsal,
};
