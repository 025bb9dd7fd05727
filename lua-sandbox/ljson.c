/*
 * ljson.c — conversion between Lua values and jansson values, both directions.
 * Invariants: only raw access (lua_next/lua_rawgeti), so no metamethod runs;
 * every json_t is attached to the result tree as soon as it exists, so a Lua
 * error inside the protected conversion leaks nothing (the caller frees the tree).
 */
#include "ljson.h"

#include "utf8.h"

#include <lauxlib.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PATH 256 /* tables on the current path; caps->depth is clamped below it */

/* ---- Lua -> JSON ----------------------------------------------------------- */

#define SHOWN_MAX 64 /* bytes of a key or of a JSON text quoted in a message */

/* One key of a table converted as an object. */
struct key {
	int kind;         /* enum key_kind */
	int is_int;       /* an integer key: sorted first, by value */
	lua_Integer i;    /* its value when is_int */
	lua_Integer slot; /* where its value waits in the scratch table */
	const char *str;  /* a string key's bytes (the table keeps the string alive) */
	size_t len;       /* bytes of the text before UTF-8 repair */
	char buf[32];     /* the text of a key that is not a string */
};

/* For keys of one text, the order they are named in: the one that is not a string first. */
enum key_kind { K_NUMBER, K_BOOLEAN, K_OTHER, K_STRING };

struct conv {
	const struct tp_ljson_caps *caps;
	uint64_t max_depth;
	uint64_t bytes;
	enum tp_ljson_fail fail;
	uint64_t used;
	char *message; /* out->message */
	json_t *root;  /* owns everything built so far */
	int npath;
	const void *path[MAX_PATH];
	struct key *keys[MAX_PATH]; /* each level's keys, freed by the caller after an error */
	/* Where the value being converted is: the returned value top_idx (-1:
	 * one value), then in table path[i] the item at index at_idx[i] (0-based,
	 * as JSON counts) or at the object key at_key[i] (at_klen bytes, the
	 * result's own key; NULL in an array). Recorded per item (no formatting),
	 * spelled as a JSON pointer only for a number JSON has none for
	 * (caps->nonfinite): {pointer: "nan"|"inf"|"-inf"}, which the value holds
	 * as null. */
	lua_Integer top_idx;
	lua_Integer at_idx[MAX_PATH];
	const char *at_key[MAX_PATH];
	size_t at_klen[MAX_PATH];
	json_t *nonfinite;
};

/* The JSON pointer (RFC 6901) of the value being converted, as a Lua string
 * on the stack (the caller pops it): a Lua error when out of memory. */
static const char *pointer(lua_State *L, const struct conv *c, size_t *len)
{
	luaL_Buffer b;
	char idx[24];
	luaL_checkstack(L, 4, "result nested too deep");
	luaL_buffinit(L, &b);
	if (c->top_idx >= 0) {
		snprintf(idx, sizeof idx, "/%lld", (long long)c->top_idx);
		luaL_addstring(&b, idx);
	}
	for (int i = 0; i < c->npath; i++) {
		if (c->at_key[i] == NULL) {
			snprintf(idx, sizeof idx, "/%lld", (long long)c->at_idx[i]);
			luaL_addstring(&b, idx);
			continue;
		}
		luaL_addchar(&b, '/');
		for (size_t j = 0; j < c->at_klen[i]; j++) {
			char k = c->at_key[i][j];
			if (k == '~' || k == '/') {
				luaL_addchar(&b, '~');
				luaL_addchar(&b, k == '~' ? '0' : '1');
			} else {
				luaL_addchar(&b, k);
			}
		}
	}
	luaL_pushresult(&b);
	return lua_tolstring(L, -1, len);
}

static int conv_value(lua_State *L, struct conv *c, int idx, uint64_t depth, json_t *parent,
		      void *slot);

static int add_bytes(struct conv *c, uint64_t n)
{
	c->bytes += n;
	if (c->bytes <= c->caps->bytes)
		return 0;
	c->fail = TP_LJSON_BYTES;
	c->used = c->bytes;
	return -1;
}

/* Hands v (stolen) to its parent (an array, or an object at the iterator slot),
 * or makes it the root, before anything else can fail. */
static void attach(lua_State *L, struct conv *c, json_t *parent, void *slot, json_t *v)
{
	int rc = 0;

	if (v == NULL)
		luaL_error(L, "out of memory building the result");
	if (parent == NULL)
		c->root = v;
	else if (json_is_array(parent))
		rc = json_array_append_new(parent, v);
	else
		rc = json_object_iter_set_new(parent, slot, v);
	if (rc != 0)
		luaL_error(L, "out of memory building the result");
}

/* n > 0 when the keys are exactly 1..n, else 0 (an object); *count = the keys. */
static lua_Integer array_length(lua_State *L, int idx, lua_Integer *count)
{
	lua_Integer max = 0, n = 0;
	int seq = 1;

	lua_pushnil(L);
	while (lua_next(L, idx)) {
		lua_pop(L, 1);
		n++;
		if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1)
			seq = 0;
		else if (lua_tointeger(L, -1) > max)
			max = lua_tointeger(L, -1);
	}
	*count = n;
	return seq && max == n ? n : 0;
}

static int fill_array(lua_State *L, struct conv *c, int idx, uint64_t depth, json_t *arr,
		      lua_Integer n)
{
	for (lua_Integer i = 1; i <= n; i++) {
		if (i > 1 && add_bytes(c, 1))
			return -1;
		lua_rawgeti(L, idx, i);
		c->at_key[c->npath - 1] = NULL, c->at_idx[c->npath - 1] = i - 1;
		int rc = conv_value(L, c, lua_gettop(L), depth + 1, arr, NULL);
		lua_pop(L, 1);
		if (rc)
			return -1;
	}
	return 0;
}

/* The shortest "%.Ng" text that reads back as d (Python's repr gives the same). */
static size_t float_text(double d, char *buf, size_t size)
{
	int n = 0;

	for (int p = 1; p <= 17; p++) {
		n = snprintf(buf, size, "%.*g", p, d);
		if (!isfinite(d) || strtod(buf, NULL) == d)
			break;
	}
	return (size_t)n;
}

static const char *key_text(const struct key *k)
{
	return k->kind == K_STRING ? k->str : k->buf;
}

/* Reads the key at idx: strings as they are, integers in decimal, floats by
 * float_text, true/false, other types "<table>", "<function>"... */
static void key_init(lua_State *L, int idx, struct key *k)
{
	memset(k, 0, offsetof(struct key, buf));
	switch (lua_type(L, idx)) {
	case LUA_TSTRING:
		k->kind = K_STRING;
		k->str = lua_tolstring(L, idx, &k->len);
		return;
	case LUA_TNUMBER:
		k->kind = K_NUMBER;
		if (lua_isinteger(L, idx)) {
			k->is_int = 1;
			k->i = lua_tointeger(L, idx);
			k->len = (size_t)snprintf(k->buf, sizeof k->buf, "%lld", (long long)k->i);
		} else {
			k->len = float_text((double)lua_tonumber(L, idx), k->buf, sizeof k->buf);
		}
		return;
	case LUA_TBOOLEAN:
		k->kind = K_BOOLEAN;
		k->len = (size_t)snprintf(k->buf, sizeof k->buf, "%s",
					  lua_toboolean(L, idx) ? "true" : "false");
		return;
	default:
		k->kind = K_OTHER;
		k->len = (size_t)snprintf(k->buf, sizeof k->buf, "<%s>",
					  lua_typename(L, lua_type(L, idx)));
	}
}

/* Integer keys first by value, then every other key by the bytes of its text;
 * keys of one text (they collide) by kind. */
static int key_cmp(const struct key *x, const struct key *y)
{
	int r;

	if (x->is_int != y->is_int)
		return x->is_int ? -1 : 1;
	if (x->is_int)
		return (x->i > y->i) - (x->i < y->i);
	r = memcmp(key_text(x), key_text(y), x->len < y->len ? x->len : y->len);
	if (r != 0)
		return r;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	return x->kind - y->kind;
}

static void sift_down(struct key *k, size_t root, size_t n)
{
	for (size_t child; (child = 2 * root + 1) < n; root = child) {
		if (child + 1 < n && key_cmp(&k[child], &k[child + 1]) < 0)
			child++;
		if (key_cmp(&k[root], &k[child]) >= 0)
			return;
		struct key t = k[root];
		k[root] = k[child], k[child] = t;
	}
}

/* Heapsort: in place and without a system call (glibc's qsort may call sysinfo,
 * which the worker's filter refuses). */
static void sort_keys(struct key *k, size_t n)
{
	for (size_t i = n / 2; i-- > 0;)
		sift_down(k, i, n);
	while (n-- > 1) {
		struct key t = k[0];
		k[0] = k[n], k[n] = t;
		sift_down(k, 0, n);
	}
}

/* The JSON text of k: its bytes, or a repaired copy in *fixed (free it). */
static const char *json_key(const struct key *k, char **fixed, size_t *len)
{
	*fixed = NULL;
	*len = k->len;
	if (tp_utf8_valid(key_text(k), k->len))
		return key_text(k);
	*fixed = malloc(3 * k->len);
	if (*fixed != NULL)
		*len = tp_utf8_fix(key_text(k), k->len, *fixed);
	return *fixed;
}

static void show_key(const struct key *k, char *out)
{
	if (k->kind == K_STRING)
		tp_utf8_quote(k->str, k->len, out, SHOWN_MAX);
	else
		snprintf(out, SHOWN_MAX + 16, "%s", k->buf);
}

/* keys[i], whose JSON text is s, collides with an earlier key: name both. */
static int collision(struct conv *c, const struct key *keys, lua_Integer i, const char *s, size_t n)
{
	char a[SHOWN_MAX + 16] = "?", b[SHOWN_MAX + 16], t[SHOWN_MAX + 16];

	for (lua_Integer j = 0; j < i; j++) {
		char *fixed;
		size_t len;
		const char *k = json_key(&keys[j], &fixed, &len);
		int same = k != NULL && len == n && memcmp(k, s, n) == 0;
		free(fixed);
		if (same) {
			show_key(&keys[j], a);
			break;
		}
	}
	show_key(&keys[i], b);
	tp_utf8_quote(s, n, t, SHOWN_MAX);
	snprintf(c->message, TP_LJSON_MESSAGE_MAX, "keys %s and %s both become %s in JSON", a, b,
		 t);
	c->fail = TP_LJSON_KEYS;
	return -1;
}

/* Every key of the object, in order, with a null for now: a collision is found
 * before any value is converted, so the verdict does not depend on the values. */
static int put_keys(lua_State *L, struct conv *c, json_t *obj, const struct key *keys,
		    lua_Integer n)
{
	for (lua_Integer i = 0; i < n; i++) {
		char *fixed;
		size_t len;
		const char *s = json_key(&keys[i], &fixed, &len);
		int rc = -1;

		if (s != NULL && json_object_getn(obj, s, len) != NULL) {
			collision(c, keys, i, s, len);
			free(fixed);
			return -1;
		}
		if (s != NULL)
			rc = json_object_setn_new(obj, s, len, json_null());
		free(fixed);
		if (rc != 0)
			luaL_error(L, "out of memory building the result");
	}
	return 0;
}

/* A table as an object: its keys are read and sorted (a Lua table has no order,
 * and its traversal order changes with the string hash seed), checked, then the
 * values converted in that order. */
static int fill_object(lua_State *L, struct conv *c, int idx, uint64_t depth, json_t *obj,
		       lua_Integer count)
{
	struct key *keys;
	lua_Integer n = 0;
	void *slot;
	int vals;

	if (count == 0)
		return 0;
	keys = malloc((size_t)count * sizeof *keys);
	if (keys == NULL)
		luaL_error(L, "out of memory building the result");
	c->keys[c->npath - 1] = keys;
	lua_createtable(L, count < INT_MAX ? (int)count : INT_MAX, 0); /* the values, by slot */
	vals = lua_gettop(L);
	lua_pushnil(L);
	while (lua_next(L, idx)) {
		if (n == count) { /* cannot happen: no code runs while converting */
			lua_pop(L, 2);
			break;
		}
		key_init(L, vals + 1, &keys[n]);
		keys[n].slot = n + 1;
		lua_rawseti(L, vals, ++n);
		/* A comma, the key and a colon. */
		if (add_bytes(c, (n > 1 ? 1 : 0) +
				     tp_utf8_json_bytes(key_text(&keys[n - 1]), keys[n - 1].len) +
				     1)) {
			lua_pop(L, 2);
			return -1;
		}
	}
	sort_keys(keys, (size_t)n);
	if (put_keys(L, c, obj, keys, n)) {
		lua_pop(L, 1);
		return -1;
	}
	slot = json_object_iter(obj);
	for (lua_Integer i = 0; i < n; i++, slot = json_object_iter_next(obj, slot)) {
		lua_rawgeti(L, vals, keys[i].slot);
		c->at_key[c->npath - 1] = json_object_iter_key(slot);
		c->at_klen[c->npath - 1] = json_object_iter_key_len(slot);
		int rc = conv_value(L, c, lua_gettop(L), depth + 1, obj, slot);
		lua_pop(L, 1);
		if (rc) {
			lua_pop(L, 1);
			return -1;
		}
	}
	lua_pop(L, 1);
	return 0;
}

static int conv_table(lua_State *L, struct conv *c, int idx, uint64_t depth, json_t *parent,
		      void *slot)
{
	const void *p = lua_topointer(L, idx);
	lua_Integer n, count;
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
	n = array_length(L, idx, &count);
	v = n > 0 ? json_array() : json_object(); /* an empty table is {} */
	attach(L, c, parent, slot, v);
	c->path[c->npath++] = p;
	rc = n > 0 ? fill_array(L, c, idx, depth, v, n) : fill_object(L, c, idx, depth, v, count);
	c->npath--;
	free(c->keys[c->npath]);
	c->keys[c->npath] = NULL;
	return rc;
}

static json_t *number_json(lua_State *L, struct conv *c, int idx, uint64_t *bytes)
{
	char buf[64];

	if (lua_isinteger(L, idx)) {
		long long i = (long long)lua_tointeger(L, idx);
		*bytes = (uint64_t)snprintf(buf, sizeof buf, "%lld", i);
		return json_integer((json_int_t)i);
	}
	double d = (double)lua_tonumber(L, idx);
	if (!isfinite(d) && c->caps->nonfinite) {
		/* null in the value, its name in the map: both count (the map's
		 * "ptr":"name" and its comma or brackets). */
		const char *name = isnan(d) ? "nan" : d > 0 ? "inf" : "-inf";
		size_t len;
		const char *ptr = pointer(L, c, &len);
		if (c->nonfinite == NULL && (c->nonfinite = json_object()) == NULL)
			luaL_error(L, "out of memory building the result");
		if (json_object_setn_new(c->nonfinite, ptr, len, json_string(name)) != 0)
			luaL_error(L, "out of memory building the result");
		lua_pop(L, 1);
		*bytes = 4 + len + strlen(name) + 6;
		return json_null();
	}
	if (!isfinite(d)) { /* JSON has no NaN or infinity */
		snprintf(c->message, TP_LJSON_MESSAGE_MAX, "%s is not a JSON number",
			 isnan(d) ? "NaN"
			 : d > 0  ? "inf"
				  : "-inf");
		c->fail = TP_LJSON_NUMBER;
		return NULL;
	}
	*bytes = (uint64_t)snprintf(buf, sizeof buf, "%.17g", d) + 2; /* jansson may add ".0" */
	return json_real(d);
}

static int conv_value(lua_State *L, struct conv *c, int idx, uint64_t depth, json_t *parent,
		      void *slot)
{
	uint64_t bytes = 4;
	json_t *v;
	const char *s;
	size_t n;
	char buf[32];

	switch (lua_type(L, idx)) {
	case LUA_TTABLE: return conv_table(L, c, idx, depth, parent, slot);
	case LUA_TNIL: v = json_null(); break;
	case LUA_TBOOLEAN:
		v = json_boolean(lua_toboolean(L, idx));
		bytes = lua_toboolean(L, idx) ? 4 : 5;
		break;
	case LUA_TNUMBER:
		v = number_json(L, c, idx, &bytes);
		if (c->fail != TP_LJSON_OK)
			return -1;
		break;
	case LUA_TSTRING:
		s = lua_tolstring(L, idx, &n);
		if (add_bytes(c, tp_utf8_json_bytes(s, n)))
			return -1;
		attach(L, c, parent, slot, tp_utf8_json(s, n));
		return 0;
	case LUA_TLIGHTUSERDATA:
		if (lua_touserdata(L, idx) == NULL) { /* json.null */
			v = json_null();
			break;
		}
		/* fall through */
	default: /* functions, threads, userdata: their type name, never an address */
		snprintf(buf, sizeof buf, "<%s>", lua_typename(L, lua_type(L, idx)));
		v = json_string(buf);
		bytes = strlen(buf) + 2;
	}
	if (add_bytes(c, bytes)) {
		json_decref(v);
		return -1;
	}
	attach(L, c, parent, slot, v);
	return 0;
}

/* The protected body: [1] = struct conv *, [2..] = the values. */
static int conv_main(lua_State *L)
{
	struct conv *c = lua_touserdata(L, 1);
	int n = lua_gettop(L) - 1;
	json_t *arr;

	if (n == 1)
		return conv_value(L, c, 2, 1, NULL, NULL), 0;
	if (n == 0) {
		if (add_bytes(c, 4) == 0)
			attach(L, c, NULL, NULL, json_null());
		return 0;
	}
	if (add_bytes(c, 2 + (uint64_t)(n - 1)))
		return 0;
	arr = json_array();
	attach(L, c, NULL, NULL, arr);
	/* The array is a level of depth, as in the JSON the client gets (the
	 * host's decoder counts it: a value at the cap inside it would be refused
	 * there as the worker's error, not the snippet's). */
	for (int i = 2; i <= n + 1; i++) {
		c->top_idx = i - 2;
		if (conv_value(L, c, i, 2, arr, NULL))
			break;
	}
	return 0;
}

void tp_ljson_from_lua(lua_State *L, int n, const struct tp_ljson_caps *caps,
		       struct tp_ljson_out *out)
{
	struct conv c = { .caps = caps, .message = out->message, .top_idx = -1 };
	int status, gc_was_running;

	out->message[0] = '\0';
	c.max_depth = caps->depth < MAX_PATH - 1 ? caps->depth : MAX_PATH - 1;
	/* Two pushes below: after a call that returned all its results there may be
	 * no free slot (API rule: the caller reserves). */
	if (!lua_checkstack(L, 2)) {
		lua_pop(L, n);
		out->value = NULL, out->fail = TP_LJSON_LUAERR, out->used = 0;
		out->lua_status = LUA_ERRMEM;
		return;
	}
	/* No collection step, so no finalizer (snippet code) runs while converting. */
	gc_was_running = lua_gc(L, LUA_GCISRUNNING);
	lua_gc(L, LUA_GCSTOP);
	lua_pushcfunction(L, conv_main);
	lua_insert(L, -(n + 1));
	lua_pushlightuserdata(L, &c);
	lua_insert(L, -(n + 1));
	status = lua_pcall(L, n + 1, 0, 0);
	if (gc_was_running)
		lua_gc(L, LUA_GCRESTART);
	for (int i = 0; i < MAX_PATH; i++)
		free(c.keys[i]); /* left by a Lua error */
	out->nonfinite = NULL;
	out->value = NULL, out->lua_status = status, out->fail = c.fail, out->used = c.used;
	if (status != LUA_OK) {
		lua_pop(L, 1);
		out->fail = TP_LJSON_LUAERR;
		out->message[0] = '\0';
	}
	if (out->fail != TP_LJSON_OK) {
		json_decref(c.root);
		json_decref(c.nonfinite);
		return;
	}
	out->value = c.root;
	out->nonfinite = c.nonfinite;
}

/* ---- JSON -> Lua ----------------------------------------------------------- */

struct push {
	uint64_t max;
	int nulls;         /* null inside a table -> json.null (else a hole) */
	const char *where; /* for the depth error: "input" or "json.decode: value" */
};

static void push_value(lua_State *L, const json_t *v, uint64_t depth, const struct push *p);

static void enter_table(lua_State *L, uint64_t depth, const struct push *p)
{
	if (depth > p->max) {
		if (p->nulls)
			luaL_error(L, "%s nested deeper than result_depth (%d)", p->where,
				   (int)p->max);
		luaL_error(L, "%s nested deeper than %d", p->where, (int)p->max);
	}
	luaL_checkstack(L, 4, "input nested too deep");
}

static void push_member(lua_State *L, const json_t *v, uint64_t depth, const struct push *p)
{
	if (p->nulls && json_is_null(v))
		lua_pushlightuserdata(L, NULL); /* json.null */
	else
		push_value(L, v, depth, p);
}

static void push_array(lua_State *L, const json_t *v, uint64_t depth, const struct push *p)
{
	size_t n = json_array_size(v);

	enter_table(L, depth, p);
	lua_createtable(L, n < INT32_MAX ? (int)n : 0, 0);
	for (size_t i = 0; i < n; i++) {
		push_member(L, json_array_get(v, i), depth + 1, p);
		lua_rawseti(L, -2, (lua_Integer)i + 1); /* null leaves a hole */
	}
}

static void push_object(lua_State *L, const json_t *v, uint64_t depth, const struct push *p)
{
	json_t *obj = (json_t *)v;

	enter_table(L, depth, p);
	lua_createtable(L, 0, (int)(json_object_size(obj) & 0x7fffffff));
	for (void *it = json_object_iter(obj); it; it = json_object_iter_next(obj, it)) {
		lua_pushlstring(L, json_object_iter_key(it), json_object_iter_key_len(it));
		push_member(L, json_object_iter_value(it), depth + 1, p);
		lua_rawset(L, -3); /* null leaves no entry */
	}
}

static void push_value(lua_State *L, const json_t *v, uint64_t depth, const struct push *p)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: push_object(L, v, depth, p); break;
	case JSON_ARRAY: push_array(L, v, depth, p); break;
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
	struct push p = { max_depth, 0, "input" };

	luaL_checkstack(L, 4, "input nested too deep");
	push_value(L, v, 1, &p);
}

void tp_ljson_push_decoded(lua_State *L, const json_t *v, uint64_t max_depth)
{
	struct push p = { max_depth, 1, "json.decode: value" };

	luaL_checkstack(L, 4, "input nested too deep");
	push_value(L, v, 1, &p);
}
