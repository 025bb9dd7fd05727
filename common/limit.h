/*
 * limit.h — the budgets of one exec, their built-in defaults, and tightening.
 * (Not "limits.h": GCC's <limits.h> pulls the next limits.h on the search
 * path with #include_next, which found this one, and -MMD then lost it as a
 * dependency: objects went stale when a limit was added.)
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

/* The limits, one line each, in their order everywhere (the wire, the JSON):
 *   X(ID, name, built-in default, a policy's least, its most, 0 means off,
 *     what a client reads when the limit stopped the exec)
 * struct tp_limits, enum tp_limit_id, the names, tp_limits_default(),
 * tp_limit_message() and the policy format's "limits" rows (policy.c's
 * tp_policy_keys) are all made from it: a new limit is one line here (and a row
 * of policies/README.md's limits table, which make unit checks). The bounds
 * name ceilings of policy.h: expanded only where it is included. */
#define TP_LIMITS(X)                                                                               \
	/* language allocator cap */                                                               \
	X(MEMORY_BYTES, memory_bytes, 64u << 20, 1u << 20, TP_POLICY_MAX_MEMORY, 0,                \
	  "memory limit exceeded")                                                                 \
	/* VM instructions (Lua) / line events (Python); 0 = off */                                \
	X(INSTRUCTIONS, instructions, 0, 1000, TP_POLICY_MAX_INSTRUCTIONS, 1,                      \
	  "instruction limit exceeded")                                                            \
	/* CPU time of the worker */                                                               \
	X(CPU_MS, cpu_ms, 5000, 1, TP_POLICY_MAX_CPU_MS, 0, "CPU time limit exceeded")             \
	/* wall clock, owned by the host */                                                        \
	X(WALL_MS, wall_ms, 10000, 1, TP_POLICY_MAX_WALL_MS, 0, "wall-clock time limit exceeded")  \
	/* stdout + stderr together */                                                             \
	X(OUTPUT_BYTES, output_bytes, 1u << 20, 0, TP_MAX_OUTPUT_BYTES, 0,                         \
	  "output limit exceeded")                                                                 \
	/* the JSON text of the returned value */                                                  \
	X(RESULT_BYTES, result_bytes, 1u << 20, 2, TP_MAX_RESULT_BYTES, 0,                         \
	  "result larger than result_bytes")                                                       \
	/* nesting depth of the returned value and of inputs */                                    \
	X(RESULT_DEPTH, result_depth, 64, 1, TP_MAX_RESULT_DEPTH, 0,                               \
	  "result nested deeper than result_depth")                                                \
	/* calls to the client's tools (tools.call) */                                             \
	X(TOOL_CALLS, tool_calls, 100, 1, TP_MAX_TOOL_CALLS, 0, "tool call limit exceeded")

/* A value of 0 means "off" (only instructions may be off). */
struct tp_limits {
#define TP_LIMIT_FIELD(id, name, ...) uint64_t name;
	TP_LIMITS(TP_LIMIT_FIELD)
#undef TP_LIMIT_FIELD
};

enum tp_limit_id {
#define TP_LIMIT_ID(id, ...) TP_LIMIT_##id,
	TP_LIMITS(TP_LIMIT_ID)
#undef TP_LIMIT_ID
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
