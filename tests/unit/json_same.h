/*
 * json_same.h — the strictest equality of two jansson trees, for tests: the
 * same types (an integer is no real), reals bit for bit (-0.0 is not 0.0),
 * strings and keys byte for byte with their lengths (U+0000 included, which
 * json_equal cannot see past), members in the same order.
 */
#ifndef TP_JSON_SAME_H
#define TP_JSON_SAME_H

#include <jansson.h>
#include <string.h>

/* The same tree: types, values (reals bit for bit), keys with their lengths,
 * in the same order. */
static int json_same(const json_t *a, const json_t *b)
{
	if (json_typeof(a) != json_typeof(b))
		return 0;
	switch (json_typeof(a)) {
	case JSON_INTEGER: return json_integer_value(a) == json_integer_value(b);
	case JSON_REAL: {
		double x = json_real_value(a), y = json_real_value(b);
		return memcmp(&x, &y, sizeof x) == 0;
	}
	case JSON_STRING:
		return json_string_length(a) == json_string_length(b) &&
		       memcmp(json_string_value(a), json_string_value(b), json_string_length(a)) ==
			   0;
	case JSON_ARRAY:
		if (json_array_size(a) != json_array_size(b))
			return 0;
		for (size_t i = 0; i < json_array_size(a); i++)
			if (!json_same(json_array_get(a, i), json_array_get(b, i)))
				return 0;
		return 1;
	case JSON_OBJECT: {
		if (json_object_size(a) != json_object_size(b))
			return 0;
		void *i = json_object_iter((json_t *)a), *j = json_object_iter((json_t *)b);
		for (; i != NULL && j != NULL; i = json_object_iter_next((json_t *)a, i),
					       j = json_object_iter_next((json_t *)b, j)) {
			size_t n = json_object_iter_key_len(i);
			if (n != json_object_iter_key_len(j) ||
			    memcmp(json_object_iter_key(i), json_object_iter_key(j), n) != 0 ||
			    !json_same(json_object_iter_value(i), json_object_iter_value(j)))
				return 0;
		}
		return i == NULL && j == NULL;
	}
	default: return 1;
	}
}

#endif
