/*
 * cases.h — reading the data-driven cases of tests/cases/ (format: its README.md)
 * from the C unit tests: where the directory is, a file's bytes, and the pattern
 * match the Python readers use too (tests/cases/protocol_cases.py).
 */
#ifndef TP_CASES_H
#define TP_CASES_H

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* tests/cases/<rel>: $TP_CASES/<rel>, else found from this header's own path. */
static inline const char *case_path(const char *rel)
{
	static char path[4096];
	const char *dir = getenv("TP_CASES");
	if (dir != NULL) {
		snprintf(path, sizeof path, "%s/%s", dir, rel);
	} else {
		const char *f = __FILE__, *slash = strrchr(f, '/');
		int n = slash ? (int)(slash - f + 1) : 0;
		snprintf(path, sizeof path, "%.*s../cases/%s", n, f, rel);
	}
	return path;
}

/* The whole file, NUL-terminated (malloc'd), or NULL. */
static inline char *case_read(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *s = NULL;
	long n;
	if (f != NULL && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (s = malloc((size_t)n + 1)) != NULL) {
		*len = fread(s, 1, (size_t)n, f);
		s[*len] = '\0';
	}
	if (f != NULL)
		fclose(f);
	return s;
}

/* got has every member of the pattern want: objects member by member (extra
 * members allowed), a "message" by substring, anything else by json_equal. */
static inline int case_matches(const json_t *want, const json_t *got)
{
	const char *key;
	json_t *w;
	if (!json_is_object(want))
		return json_equal(want, got);
	if (!json_is_object(got))
		return 0;
	json_object_foreach((json_t *)want, key, w)
	{
		json_t *g = json_object_get(got, key);
		if (json_is_string(w) && strcmp(json_string_value(w), "@ABSENT@") == 0) {
			if (g != NULL) /* a member that must not be in the reply */
				return 0;
			continue;
		}
		if (g == NULL)
			return 0;
		if (strcmp(key, "message") == 0 && json_is_string(w)) {
			if (!json_is_string(g) ||
			    strstr(json_string_value(g), json_string_value(w)) == NULL)
				return 0;
		} else if (!case_matches(w, g)) {
			return 0;
		}
	}
	return 1;
}

#endif
