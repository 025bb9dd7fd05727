/*
 * limit.c — default budgets and the "a request may only tighten" rule.
 * Pure: no syscalls. Every accepted value is a positive integer no larger than
 * the ceiling it replaces, so a request can never loosen a limit.
 */
#include "limit.h"

#include <string.h>

/* A refused limits object is the request's fault, seen by the host. */
#define refuse(err, ...) tp_err_set(err, TP_KIND_INPUT_ERROR, TP_LAYER_HOST, 0, __VA_ARGS__)

static const char *const limit_names[TP_LIMIT__COUNT] = {
#define NAME(id, name, ...) [TP_LIMIT_##id] = #name,
	TP_LIMITS(NAME)
#undef NAME
};

static const size_t limit_offsets[TP_LIMIT__COUNT] = {
#define OFFSET(id, name, ...) [TP_LIMIT_##id] = offsetof(struct tp_limits, name),
	TP_LIMITS(OFFSET)
#undef OFFSET
};

void tp_limits_default(struct tp_limits *out)
{
	*out = (struct tp_limits){
#define DEFAULT(id, name, def, ...) .name = def,
		TP_LIMITS(DEFAULT)
#undef DEFAULT
	};
}

const char *tp_limit_name(enum tp_limit_id id)
{
	return (unsigned)id < TP_LIMIT__COUNT ? limit_names[id] : "?";
}

static uint64_t *field(struct tp_limits *l, enum tp_limit_id id)
{
	return (unsigned)id < TP_LIMIT__COUNT ? (uint64_t *)((char *)l + limit_offsets[id]) : NULL;
}

void tp_limit_set(struct tp_limits *l, enum tp_limit_id id, uint64_t v)
{
	uint64_t *p = field(l, id);
	if (p != NULL)
		*p = v;
}

uint64_t tp_limit_get(const struct tp_limits *l, enum tp_limit_id id)
{
	const uint64_t *p = field((struct tp_limits *)l, id);
	return p ? *p : 0;
}

static int find(const char *key)
{
	for (int i = 0; i < TP_LIMIT__COUNT; i++)
		if (strcmp(limit_names[i], key) == 0)
			return i;
	return -1;
}

int tp_limits_tighten(struct tp_limits *l, const json_t *req, struct tp_err *err)
{
	struct tp_limits next = *l;
	const char *key;
	json_t *val;

	if (req == NULL || json_is_null(req))
		return 0;
	if (!json_is_object(req))
		return refuse(err, "limits must be an object");
	json_object_foreach((json_t *)req, key, val)
	{
		int id = find(key);
		if (id < 0)
			return refuse(err, "unknown limit '%.64s'", key);
		if (!json_is_integer(val) || json_integer_value(val) <= 0)
			return refuse(err, "limit '%s' must be a positive integer", key);
		uint64_t want = (uint64_t)json_integer_value(val);
		uint64_t *cur = field(&next, (enum tp_limit_id)id);
		/* instructions = 0 means "off", i.e. infinitely loose: any value tightens it. */
		if (*cur != 0 && want > *cur)
			return refuse(err, "limit '%s' may only be tightened: %llu > ceiling %llu",
				      key, (unsigned long long)want, (unsigned long long)*cur);
		*cur = want;
	}
	*l = next;
	return 0;
}

int tp_limits_from_array(struct tp_limits *out, const uint64_t v[TP_LIMIT__COUNT])
{
	struct tp_limits l;

	memset(&l, 0, sizeof l);
	for (int i = 0; i < TP_LIMIT__COUNT; i++)
		*field(&l, (enum tp_limit_id)i) = v[i];
	if (l.output_bytes > TP_MAX_OUTPUT_BYTES || l.result_bytes > TP_MAX_RESULT_BYTES ||
	    l.result_depth > TP_MAX_RESULT_DEPTH)
		return -1;
	*out = l;
	return 0;
}

const char *tp_limit_message(int id)
{
	static const char *const messages[TP_LIMIT__COUNT] = {
#define MESSAGE(id, name, def, lo, hi, off, message) [TP_LIMIT_##id] = message,
		TP_LIMITS(MESSAGE)
#undef MESSAGE
	};
	return id >= 0 && id < TP_LIMIT__COUNT ? messages[id] : "limit exceeded";
}
