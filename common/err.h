/*
 * err.h — the vocabulary of verdicts: what kind of error, which layer said so.
 *
 * Usage:
 *   1. A module that refuses or fails picks one enum tp_kind and one enum tp_layer.
 *   2. tp_kind_name()/tp_layer_name() give the protocol strings; the *_from_name()
 *      functions map them back (for messages coming from workers).
 *   3. The first verdict recorded for an exec wins (see the callers).
 */
#ifndef TP_ERR_H
#define TP_ERR_H

enum tp_kind {
	TP_KIND_NONE = 0, /* no error: ok */
	TP_KIND_SYNTAX_ERROR,
	TP_KIND_RUNTIME_ERROR,
	TP_KIND_MEMORY_LIMIT,
	TP_KIND_INSTRUCTION_LIMIT,
	TP_KIND_CPU_LIMIT,
	TP_KIND_TIMEOUT,
	TP_KIND_OUTPUT_LIMIT,
	TP_KIND_POLICY_VIOLATION,
	TP_KIND_SANDBOX_VIOLATION,
	TP_KIND_CRASHED,
	TP_KIND_CANCELLED,
	TP_KIND_INTERNAL,     /* our own failure (zygote down, out of fds) */
	TP_KIND_INPUT_ERROR,  /* inputs could not become the language's values */
	TP_KIND_RESULT_ERROR, /* the value could not become JSON (a cycle, an unconvertible value)
			       */
	TP_KIND__COUNT
};

enum tp_layer {
	TP_LAYER_NONE = 0,
	TP_LAYER_LANGUAGE,
	TP_LAYER_PROCESS,
	TP_LAYER_KERNEL,
	TP_LAYER_HOST,
	TP_LAYER__COUNT
};

const char *tp_kind_name(enum tp_kind kind);
/* Returns -1 for an unknown name. */
int tp_kind_from_name(const char *name);
const char *tp_layer_name(enum tp_layer layer);
int tp_layer_from_name(const char *name);

#endif
