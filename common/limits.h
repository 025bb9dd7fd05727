/*
 * limits.h — the budgets of one exec, their built-in defaults, and tightening.
 *
 * Usage:
 *   1. tp_limits_default() gives the built-in ceiling (documented in README.md).
 *   2. tp_limits_tighten() applies a request's "limits" object: every value may
 *      only lower its ceiling; unknown keys and raises are refused.
 *   3. common/msg.h carries them to a worker; tp_limits_from_array() checks them there.
 */
#ifndef TP_LIMITS_H
#define TP_LIMITS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* A value of 0 means "off" (only instructions may be off). */
struct tp_limits {
	uint64_t memory_bytes; /* language allocator cap */
	uint64_t instructions; /* VM instructions (Lua) / line events (Python); 0 = off */
	uint64_t cpu_ms;       /* CPU time of the worker */
	uint64_t wall_ms;      /* wall clock, owned by the host */
	uint64_t output_bytes; /* stdout + stderr together */
	uint64_t result_bytes; /* the JSON text of the returned value */
	uint64_t result_depth; /* nesting depth of the returned value and of inputs */
	uint64_t tool_calls;   /* calls to the client's tools (tools.call) */
};

enum tp_limit_id {
	TP_LIMIT_MEMORY_BYTES,
	TP_LIMIT_INSTRUCTIONS,
	TP_LIMIT_CPU_MS,
	TP_LIMIT_WALL_MS,
	TP_LIMIT_OUTPUT_BYTES,
	TP_LIMIT_RESULT_BYTES,
	TP_LIMIT_RESULT_DEPTH,
	TP_LIMIT_TOOL_CALLS,
	TP_LIMIT__COUNT
};

/* Hard ceilings a policy can never exceed; they size buffers and frames. */
#define TP_MAX_OUTPUT_BYTES (16u << 20)
#define TP_MAX_RESULT_BYTES (16u << 20)
#define TP_MAX_RESULT_DEPTH 200u
#define TP_MAX_TOOL_CALLS 100000u
/* CPU time a worker may keep running after its cpu_ms budget tripped. */
#define TP_CPU_GRACE_MS 200u

void tp_limits_default(struct tp_limits *out);
const char *tp_limit_name(enum tp_limit_id id);
uint64_t tp_limit_get(const struct tp_limits *l, enum tp_limit_id id);
void tp_limit_set(struct tp_limits *l, enum tp_limit_id id, uint64_t v);

/* Applies a request's limits object to *l. On error returns -1, leaves *l
 * untouched and records (TP_KIND_INPUT_ERROR, TP_LAYER_HOST) the message of an
 * "invalid params" reply. */
int tp_limits_tighten(struct tp_limits *l, const json_t *req, struct tp_err *err);

/* From values in enum order; -1 when one is above its hard ceiling. */
int tp_limits_from_array(struct tp_limits *out, const uint64_t v[TP_LIMIT__COUNT]);
/* What a client reads when this limit (an enum tp_limit_id) stopped the exec. */
const char *tp_limit_message(int id);

#endif
