/*
 * test_jsonio.c — common/jsonio.c when memory runs out: every allocation of a
 * load or a dump failed in turn (and every one from it on), over every line of
 * tests/cases/protocol and documents aimed at jansson's lexer. Each must be
 * refused whole as out of memory, corrupt no block and crash nothing; without
 * the reserve, jansson 2.14 drops a byte and overruns its buffers or asserts
 * (docs/robustness.md §6).
 *
 * The allocator under jsonio's hooks is this file's (installed before jsonio's
 * first call, which layers its hooks over it): it counts, fails the chosen
 * allocation, and puts a canary after every block that its free checks.
 */
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "jsonio.h"
#include "utf8.h"
#include "cases.h"
#include "tap.h"

/* Every lexer path that saves bytes (docs/robustness.md §6): long strings (with
 * escapes, a control byte or invalid UTF-8 past the growth), numbers, words, and
 * members whose own allocations have the size of the next growth. */
static const char *const lexer_docs[] = {
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"no/such/method\"}",
	"[\"0123456789abcdefghijklmnopqrstuvwxyz0123456789\"]",
	"[\"\\u00e9\\u00e8\\ud83d\\ude00\\n\\t\\\"\\\\\\/0123456789abcdef\"]",
	"[\"0123456789abcdef\\u12\"]",
	"[\"0123456789abcdefghij\x01\"]",
	"[\"0123456789abcdefghij\xff\"]",
	"{\"a\":123456789012345678,\"b\":-1.25e-300000000000000000000001}",
	"[1.0000000000000000000000000000001e10,1.0000000000000001]",
	"123456789012345678",
	"[truetruetruetruetrue]",
	"[true,false,null,true,false,null,true,false,null,true,false,null,true,false,null]",
	"{\"aaaaaaaaaaaaaaaaaaaaaaa\":0,\"kkkkkkk\":1,\"0123456789012345678901234567890123456789\":"
	"2}",
	"{\"aaaaaaaaaaaaaaaaaaaaaaa\":0,\"kkkkkkk\":1.000000000000000000000000001,"
	"\"0123456789012345678901234567890123456789\":2}",
	"{\"k\":\"0123456789abc\",\"l\":[\"0123456789abcdefghijklmnopqrstuvwxyz01234567\"]}",
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2}",
};

#define LOAD_FLAGS (JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL | JSON_DECODE_ANY)

/* ---- the allocator under jsonio ----------------------------------------------------- */

#define CANARY 32
#define MAGIC 0x7470636bu

struct hdr {
	size_t n;
	size_t magic;
};

static unsigned long t_count, t_fail_at, t_damaged;
static int t_fail_rest;

static void *t_malloc(size_t n)
{
	t_count++;
	if (t_fail_at != 0 && (t_count == t_fail_at || (t_fail_rest && t_count > t_fail_at)))
		return NULL;
	struct hdr *h = malloc(sizeof *h + n + CANARY);
	if (h == NULL)
		return NULL;
	h->n = n;
	h->magic = MAGIC;
	memset((char *)(h + 1) + n, 0xa5, CANARY);
	return h + 1;
}

static void t_free(void *p)
{
	struct hdr *h;
	const unsigned char *c;
	if (p == NULL)
		return;
	h = (struct hdr *)p - 1;
	if (h->magic != MAGIC) { /* not ours: never free it (it would abort the test) */
		t_damaged++;
		return;
	}
	c = (const unsigned char *)p + h->n;
	for (int i = 0; i < CANARY; i++)
		if (c[i] != 0xa5) {
			t_damaged++;
			break;
		}
	h->magic = 0;
	free(h);
}

static void arm(unsigned long at, int rest)
{
	t_count = 0;
	t_fail_at = at;
	t_fail_rest = rest;
}

/* ---- loads ----------------------------------------------------------------------------- */

/* One document: unarmed, then with each of its allocations failing. */
static void replay_load(const char *name, const char *doc, size_t len)
{
	struct tp_err err0 = { 0 };
	unsigned long n, damaged = t_damaged;
	int wrong = 0;

	arm(0, 0);
	json_t *want = tp_json_loadb(doc, len, LOAD_FLAGS, &err0);
	n = t_count;
	CHECK(!tp_err_is_oom(&err0));
	for (unsigned long k = 1; k <= n; k++)
		for (int rest = 0; rest <= 1; rest++) {
			struct tp_err err = { 0 };
			arm(k, rest);
			json_t *v = tp_json_loadb(doc, len, LOAD_FLAGS, &err);
			arm(0, 0);
			/* jansson needed the allocation: nothing but "out of memory" is right */
			if (v != NULL || !tp_err_is_oom(&err)) {
				if (!wrong++)
					fprintf(stderr, "FAIL %s: allocation %lu%s: %s\n", name, k,
						rest ? "+" : "", v ? "a value" : err.msg);
			}
			json_decref(v);
		}
	CHECK_EQ_INT(wrong, 0);
	CHECK_EQ_INT(t_damaged - damaged, 0);
	/* and afterwards, the same answer as before */
	struct tp_err err1 = { 0 };
	json_t *again = tp_json_loadb(doc, len, LOAD_FLAGS, &err1);
	CHECK(want ? json_equal(want, again) : again == NULL && strcmp(err0.msg, err1.msg) == 0);
	json_decref(want);
	json_decref(again);
}

/* Every line of every case of tests/cases/protocol (@FILL@: 100,000 bytes). */
static int replay_protocol_cases(void)
{
	struct dirent **names;
	int n = scandir(case_path("protocol"), &names, NULL, alphasort), lines = 0;
	CHECK(n > 0);
	for (int i = 0; i < n; i++) {
		char rel[512];
		size_t len;
		snprintf(rel, sizeof rel, "protocol/%s/input", names[i]->d_name);
		char *input = names[i]->d_name[0] == '.' ? NULL : case_read(case_path(rel), &len);
		free(names[i]);
		if (input == NULL)
			continue;
		char *fill = strstr(input, "@FILL@"), *text = input;
		if (fill != NULL) {
			size_t pad = 100000, head = (size_t)(fill - input);
			text = malloc(len - 6 + pad + 1);
			memcpy(text, input, head);
			memset(text + head, 'x', pad);
			memcpy(text + head + pad, fill + 6, len - head - 6 + 1);
			len = len - 6 + pad;
		}
		for (char *p = text, *nl; p < text + len; p = nl + 1) {
			nl = memchr(p, '\n', (size_t)(text + len - p));
			if (nl == NULL)
				nl = text + len;
			replay_load(rel, p, (size_t)(nl - p));
			lines++;
		}
		if (text != input)
			free(text);
		free(input);
	}
	free(names);
	return lines;
}

/* ---- dumps ----------------------------------------------------------------------------- */

/* A dump with any allocation failing is NULL (size: -1), never a partial document. */
static void replay_dump(const json_t *v)
{
	char *want;
	unsigned long n;
	int wrong = 0;

	arm(0, 0);
	want = tp_json_dumps(v, JSON_COMPACT);
	n = t_count;
	CHECK(want != NULL && n > 0);
	for (unsigned long k = 1; k <= n; k++) {
		arm(k, 0);
		char *s = tp_json_dumps(v, JSON_COMPACT);
		arm(0, 0);
		wrong += s != NULL;
		t_free(s);
	}
	CHECK_EQ_INT(wrong, 0);
	arm(0, 0);
	CHECK_EQ_INT(tp_json_size(v, JSON_COMPACT), strlen(want));
	n = t_count;
	for (unsigned long k = 1; k <= n; k++) {
		arm(k, 0);
		CHECK(tp_json_size(v, JSON_COMPACT) == (size_t)-1);
	}
	arm(0, 0);
	t_free(want);
}

/* tp_json_dumps_splice against tp_json_dumps (a differential test): for every
 * container of a reply-shaped document at most 3 levels down, splicing its own
 * dump gives the document's dump byte for byte; a node deeper, absent, a
 * scalar, or other flags give tp_json_dumps's. */
static void check_splice_at(const json_t *root, const json_t *node, int want_spliced)
{
	char *whole = tp_json_dumps(root, JSON_COMPACT);
	char *raw = tp_json_dumps(node, JSON_COMPACT | JSON_ENCODE_ANY);
	CHECK(whole != NULL && raw != NULL);
	struct tp_json_raw sp = { node, raw, strlen(raw), 0 };
	char *s = tp_json_dumps_splice(root, JSON_COMPACT, &sp, 1, 3);
	CHECK(s != NULL);
	if (whole != NULL && s != NULL)
		CHECK_EQ_STR(s, whole);
	t_free(s);
	/* A marker in place of the node's text shows where it went, and whether. */
	sp.raw = "[\"@@\"]", sp.n = 6;
	s = tp_json_dumps_splice(root, JSON_COMPACT, &sp, 1, 3);
	CHECK(s != NULL && (strstr(s, "[\"@@\"]") != NULL) == want_spliced);
	t_free(s);
	t_free(whole);
	t_free(raw);
}

static void test_splice(void)
{
	static const char doc[] =
	    "{\"jsonrpc\":\"2.0\",\"id\":{\"n\":[1,null]},\"result\":{\"ok\":true,"
	    "\"value\":[{\"id\":1,\"p\":0.1,\"s\":\"x\\\"\\u00e9\\n\"},{\"k\":[]},{}],"
	    "\"text\":\"[1]\",\"usage\":{\"cpu_ms\":20.354,\"deep\":{\"d\":[[1.5]]}},"
	    "\"e\":{},\"a\":[]}}";
	struct tp_err err = { 0 };
	json_t *root = tp_json_loadb(doc, strlen(doc), JSON_REJECT_DUPLICATES, &err);
	CHECK(root != NULL);
	if (root == NULL)
		return;
	json_t *result = json_object_get(root, "result");
	json_t *value = json_object_get(result, "value");
	json_t *usage = json_object_get(result, "usage");
	check_splice_at(root, result, 1);
	check_splice_at(root, value, 1);
	check_splice_at(root, json_object_get(root, "id"), 1);
	check_splice_at(root, json_object_get(result, "e"), 1);
	check_splice_at(root, json_object_get(result, "a"), 1);
	check_splice_at(root, json_array_get(value, 1), 1); /* 3 levels down */
	check_splice_at(root, json_object_get(json_object_get(usage, "deep"), "d"), 0); /* 4 */
	check_splice_at(root, json_object_get(result, "ok"), 0); /* a scalar */
	json_t *other = json_array();
	check_splice_at(root, other, 0); /* not in the document */
	json_decref(other);
	/* A string node written from its bytes, quoted: the dump byte for byte,
	 * with the value spliced beside it; content other than the bytes given,
	 * or a control character, and the node is dumped. */
	static const char vtext[] = "[{\"a\\\"b\":\"\\\\\u00e9\\u0001/\"},1.5]";
	json_t *text = json_stringn(vtext, strlen(vtext));
	json_object_set_new(result, "text", text);
	char *whole = tp_json_dumps(root, JSON_COMPACT);
	char *vraw = tp_json_dumps(value, JSON_COMPACT);
	struct tp_json_raw two[2] = { { value, vraw, strlen(vraw), 0 },
				      { text, vtext, strlen(vtext), 1 } };
	char *s = tp_json_dumps_splice(root, JSON_COMPACT, two, 2, 3);
	CHECK(whole != NULL && s != NULL && strcmp(s, whole) == 0);
	CHECK(s != NULL && strstr(s, "\"text\":\"[{\\\"a\\\\\\\"b\\\":") != NULL);
	t_free(s);
	two[1].raw = "[{}]", two[1].n = 4; /* not the node's content */
	s = tp_json_dumps_splice(root, JSON_COMPACT, two, 2, 3);
	CHECK(whole != NULL && s != NULL && strcmp(s, whole) == 0 && strstr(s, "[{}]") == NULL);
	t_free(s);
	json_t *ctl = json_stringn("[\"\x01\"]", 5); /* no JSON text: dumped as \u0001 */
	json_object_set_new(result, "text", ctl);
	t_free(whole);
	whole = tp_json_dumps(root, JSON_COMPACT);
	two[1] = (struct tp_json_raw){ ctl, "[\"\x01\"]", 5, 1 };
	s = tp_json_dumps_splice(root, JSON_COMPACT, two, 2, 3);
	CHECK(whole != NULL && s != NULL && strcmp(s, whole) == 0 && strstr(s, "\\u0001") != NULL);
	t_free(s);
	t_free(whole);
	t_free(vraw);
	/* Other flags: the plain dump. */
	char *a = tp_json_dumps(root, JSON_INDENT(2));
	struct tp_json_raw sp = { value, "[]", 2, 0 };
	char *b = tp_json_dumps_splice(root, JSON_INDENT(2), &sp, 1, 3);
	CHECK(a != NULL && b != NULL && strcmp(a, b) == 0);
	t_free(a);
	t_free(b);
	json_decref(root);
}

/* tp_json_scalar_bytes against json_dumpb (a differential test): reals from
 * bit patterns and whole numbers, integers at the edges, strings of every
 * kind of character jansson escapes. */
static uint64_t rng = 88172645463325252ull;
static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void same_size(json_t *v)
{
	size_t want = json_dumpb(v, NULL, 0, JSON_COMPACT | JSON_ENCODE_ANY);
	uint64_t got = tp_json_scalar_bytes(v);
	if (got != want) {
		char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		fprintf(stderr, "scalar %s: %llu bytes, jansson %zu\n", s ? s : "?",
			(unsigned long long)got, want);
		t_free(s);
	}
	CHECK(got == want);
	json_decref(v);
}

static void test_scalar_bytes(void)
{
	static const double reals[] = { 0.0,
					-0.0,
					1.0,
					-1.5,
					0.1,
					1e16,
					1e17,
					1e300,
					1e-300,
					5e-324,
					1e-7,
					1e21,
					123456789012345678.0,
					1.7976931348623157e308,
					2.2250738585072014e-308,
					100.0,
					1e22,
					0.30000000000000004 };
	for (size_t i = 0; i < sizeof reals / sizeof reals[0]; i++)
		same_size(json_real(reals[i]));
	for (int i = 0; i < 200000; i++) {
		uint64_t b = next();
		double d;
		memcpy(&d, &b, sizeof d);
		if (isfinite(d))
			same_size(json_real(d));
		same_size(json_real((double)(int64_t)(next() >> (next() % 64))));
	}
	static const json_int_t ints[] = { 0, -1, 7, INT64_MAX, INT64_MIN, 1000000 };
	for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
		same_size(json_integer(ints[i]));
	same_size(json_true());
	same_size(json_false());
	same_size(json_null());
	/* strings: code points from every class, valid UTF-8, NUL included */
	static const uint32_t cps[] = { 0,      1,       8,        9,     10,    12,
					13,     0x1f,    ' ',      '"',   '\\',  '/',
					'a',    0x7f,    0x80,     0x7ff, 0x800, 0xfffd,
					0xffff, 0x10000, 0x10ffff, 0x2028 };
	for (int i = 0; i < 20000; i++) {
		char buf[256];
		size_t n = 0;
		int len = (int)(next() % 40);
		for (int k = 0; k < len; k++) {
			uint32_t c = cps[next() % (sizeof cps / sizeof cps[0])];
			if (c < 0x80) {
				buf[n++] = (char)c;
			} else if (c < 0x800) {
				buf[n++] = (char)(0xc0 | c >> 6);
				buf[n++] = (char)(0x80 | (c & 0x3f));
			} else if (c < 0x10000) {
				buf[n++] = (char)(0xe0 | c >> 12);
				buf[n++] = (char)(0x80 | (c >> 6 & 0x3f));
				buf[n++] = (char)(0x80 | (c & 0x3f));
			} else {
				buf[n++] = (char)(0xf0 | c >> 18);
				buf[n++] = (char)(0x80 | (c >> 12 & 0x3f));
				buf[n++] = (char)(0x80 | (c >> 6 & 0x3f));
				buf[n++] = (char)(0x80 | (c & 0x3f));
			}
		}
		/* and the text tp_utf8_json_put writes is jansson's, byte for byte */
		json_t *v = json_stringn(buf, n);
		char *want = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		char out[256 * 6 + 2];
		size_t m = tp_utf8_json_put(buf, n, out);
		CHECK(want != NULL && m == strlen(want) && memcmp(out, want, m) == 0);
		t_free(want);
		same_size(v);
	}
}

int main(void)
{
	/* Before anything else uses jansson: jsonio's hooks go over this allocator. */
	json_set_alloc_funcs(t_malloc, t_free);

	/* The lexer's growth is recognized on this build, so the reserve is used. */
	CHECK_EQ_INT(tp_json_lexer_guarded(), 1);
	CHECK_EQ_INT(tp_json_reserve(8u << 20), 0);

	for (size_t i = 0; i < sizeof lexer_docs / sizeof lexer_docs[0]; i++) {
		char name[32];
		snprintf(name, sizeof name, "lexer_docs[%zu]", i);
		replay_load(name, lexer_docs[i], strlen(lexer_docs[i]));
	}
	/* A token that doubles the buffer from 16 bytes to 256 KiB. */
	size_t big = 200000;
	char *s = malloc(big + 3);
	s[0] = '"';
	memset(s + 1, 'y', big);
	memcpy(s + 1 + big, "\"", 2);
	replay_load("200,000-byte string", s, big + 2);
	free(s);

	int lines = replay_protocol_cases();
	CHECK(lines >= 38);

	struct tp_err err = { 0 };
	static const char doc[] =
	    "{\"k\":\"0123456789abc\",\"l\":[1,2.5,null,{\"m\":\"\\u00e9\"}]}";
	json_t *v = tp_json_loadb(doc, strlen(doc), LOAD_FLAGS, &err);
	CHECK(v != NULL);
	replay_dump(v);
	json_decref(v);

	test_splice();
	test_scalar_bytes();

	CHECK_EQ_INT(t_damaged, 0);
	return tp_test_done("test_jsonio");
}
