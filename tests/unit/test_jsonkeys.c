/*
 * test_jsonkeys.c — tp_json_loadb with JSON_ALLOW_NUL reads U+0000 in object keys
 * (json_loadb refuses it under any flag): at any depth, next to U+0001 (the
 * escape it is rewritten with), with duplicates still found, values untouched,
 * and errors still at their own column.
 */
#include "jsonio.h"

#include <stdlib.h>

#include "tap.h"

#define FLAGS (JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL)

static char text[1024];

/* Loads json; returns its compact dump, or "ERR <message>". */
static const char *load(const char *json, size_t flags)
{
	struct tp_err err = { 0 };
	json_t *v = tp_json_loadb(json, strlen(json), flags, &err);

	if (v == NULL) {
		snprintf(text, sizeof text, "ERR %s", err.msg);
		return text;
	}
	char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	snprintf(text, sizeof text, "%s", s);
	free(s);
	json_decref(v);
	return text;
}

/* The key of v's only entry, with its length. */
static size_t only_key(const json_t *v, const char **key)
{
	void *it = json_object_iter((json_t *)v);

	CHECK(it != NULL && json_object_size(v) == 1);
	*key = it ? json_object_iter_key(it) : "";
	return it ? json_object_iter_key_len(it) : 0;
}

static void test_keys(void)
{
	const char *k;
	json_t *v;

	/* Depth 1 and 3, keys read back with their length. */
	CHECK_EQ_STR(load("{\"a\\u0000b\":1}", FLAGS), "{\"a\\u0000b\":1}");
	v = tp_json_loadb("{\"a\\u0000b\":1}", 14, FLAGS, NULL);
	CHECK(v != NULL && only_key(v, &k) == 3 && memcmp(k, "a\0b", 3) == 0);
	CHECK(json_integer_value(json_object_getn(v, "a\0b", 3)) == 1);
	json_decref(v);
	CHECK_EQ_STR(load("{\"x\":[{\"y\":{\"\\u0000\":\"\\u0000\"}}]}", FLAGS),
		     "{\"x\":[{\"y\":{\"\\u0000\":\"\\u0000\"}}]}");
	/* U+0001, the rewrite's escape character, keeps its meaning in keys and values. */
	CHECK_EQ_STR(load("{\"\\u0000\":1,\"\\u0001\":2,\"\\u0001\\u0001\":3,\"\\u0001\\u0002\":4,"
			  "\"\\u0000\\u0001\":\"\\u0001\\u0000\"}",
			  FLAGS),
		     "{\"\\u0000\":1,\"\\u0001\":2,\"\\u0001\\u0001\":3,\"\\u0001\\u0002\":4,"
		     "\"\\u0000\\u0001\":\"\\u0001\\u0000\"}");
	const char *nested = "{\"\\u0001\\u0001\":{\"\\u0000\":0}}";
	v = tp_json_loadb(nested, strlen(nested), FLAGS, NULL);
	CHECK(v != NULL && only_key(v, &k) == 2 && memcmp(k, "\1\1", 2) == 0);
	json_decref(v);
	/* Order kept; whitespace before the colon; an escaped backslash is no escape. */
	CHECK_EQ_STR(load("{\"b\\u0000\" \n\t: 1, \"a\":2, \"\\\\u0000\":3}", FLAGS),
		     "{\"b\\u0000\":1,\"a\":2,\"\\\\u0000\":3}");
	CHECK_EQ_STR(load("[\"\\u0000\", {\"k\": \"\\u0000:\"}]", FLAGS),
		     "[\"\\u0000\",{\"k\":\"\\u0000:\"}]");
	/* Duplicates are still refused, and only real ones. */
	CHECK_EQ_STR(load("{\"a\\u0000\":1,\"a\\u0000\":2}", FLAGS),
		     "ERR duplicate object key near '\"a\\u0000\"' at column 22");
	CHECK_EQ_STR(load("{\"\\u0000\":1,\"\\u0001\\u0001\":2}", FLAGS),
		     "{\"\\u0000\":1,\"\\u0001\\u0001\":2}");
	/* Without JSON_ALLOW_NUL, jansson's own refusal. */
	CHECK(strncmp(load("{\"a\\u0000\":1}", JSON_DECODE_ANY), "ERR NUL byte in object key",
		      26) == 0);
	CHECK(strncmp(load("\"a\\u0000\"", JSON_DECODE_ANY), "ERR \\u0000 is not allowed", 25) ==
	      0);
}

/* An error in a text that was rewritten is reported at its column in the text sent. */
static void test_errors(void)
{
	char plain[64];

	snprintf(plain, sizeof plain, "%s", load("{\"xxxxxx\":1,\"yyyyyy\":2,,}", FLAGS));
	CHECK(strncmp(plain, "ERR ", 4) == 0);
	CHECK_EQ_STR(load("{\"\\u0000\":1,\"\\u0001\":2,,}", FLAGS), plain);
	snprintf(plain, sizeof plain, "%s", load("{\"xxxxxx\":\n{\"é\":1,]", FLAGS));
	CHECK_EQ_STR(load("{\"\\u0000\":\n{\"é\":1,]", FLAGS), plain);
	snprintf(plain, sizeof plain, "%s", load("{\"xxxxxx\":1,\"a", FLAGS));
	CHECK_EQ_STR(load("{\"\\u0000\":1,\"a", FLAGS), plain);
}

int main(void)
{
	test_keys();
	test_errors();
	return tp_test_done("test_jsonkeys");
}
