/*
 * err.h — the one error value: what kind of error, which layer said so, the
 * errno behind it and a message. Every function that can fail with more to say
 * than errno reports through a struct tp_err.
 *
 * Usage:
 *   1. The caller owns the value, zeroed: struct tp_err err = { 0 }; and passes
 *      &err down (NULL when it does not care: every helper ignores NULL).
 *   2. A function that refuses or fails records one error and returns its own
 *      failure value: tp_err_set() (kind, layer, printf-like message),
 *      tp_err_sys() for a failed call ("call(object): strerror. Hint: ..."; save
 *      errno first), tp_err_oom(). The first error recorded wins: a later one,
 *      from a caller or a cleanup path, is ignored. A value is not reused for a
 *      second operation without tp_err_clear().
 *   3. The caller reads tp_err_failed(), tp_err_is_oom() and the fields. kind and
 *      layer are what the client sees when the error becomes an exec's verdict
 *      (host/result.c); elsewhere the message goes to a JSON-RPC error or a log.
 *   4. tp_kind_name()/tp_layer_name() give the protocol strings; the *_from_name()
 *      functions map them back.
 * Conventions: our own failures (a failed call, memory) are TP_KIND_INTERNAL at
 * the layer whose code failed (the host's at TP_LAYER_HOST, lockdown's at
 * TP_LAYER_KERNEL, an interpreter's set-up at TP_LAYER_LANGUAGE); a refused
 * request is TP_KIND_INPUT_ERROR at TP_LAYER_HOST.
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
	TP_KIND_INTERNAL,      /* our own failure (zygote down, out of fds) */
	TP_KIND_INPUT_ERROR,   /* inputs could not become the language's values */
	TP_KIND_RESULT_ERROR,  /* the value could not become JSON (a cycle, an unconvertible value)
				*/
	TP_KIND_RATE_LIMIT,    /* the policy's execs per minute were used up: not run */
	TP_KIND_TOOL_LIMIT,    /* the code called the client's tools more than tool_calls allows */
	TP_KIND_QUEUE_TIMEOUT, /* it waited its wall_ms in the queue and never started */
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

#define TP_ERR_MSG_MAX 512

/* No error is recorded while kind is TP_KIND_NONE (a zeroed value). */
struct tp_err {
	enum tp_kind kind;
	enum tp_layer layer;
	int sys_errno; /* the errno behind it, or 0 */
	char msg[TP_ERR_MSG_MAX];
};

/* Each records into e unless e is NULL or already holds an error (the first
 * wins), and returns -1, so that `return tp_err_set(...);` reads as a failure.
 * A kind of TP_KIND_NONE is recorded as TP_KIND_INTERNAL. */
int tp_err_set(struct tp_err *e, enum tp_kind kind, enum tp_layer layer, int sys_errno,
	       const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* A failed call, TP_KIND_INTERNAL: "what: strerror(sys_errno)", then ". Hint: hint"
 * when hint is not NULL. what names the call and its object: "setgroups(0)". */
int tp_err_sys(struct tp_err *e, enum tp_layer layer, const char *what, int sys_errno,
	       const char *hint);
/* "out of memory", TP_KIND_INTERNAL with ENOMEM. */
int tp_err_oom(struct tp_err *e, enum tp_layer layer);
/* Records a copy of src (when it holds an error) under the same first-wins rule. */
void tp_err_copy(struct tp_err *e, const struct tp_err *src);
void tp_err_clear(struct tp_err *e);

/* Whether an error is recorded (NULL: no). */
int tp_err_failed(const struct tp_err *e);
/* Whether the recorded error is running out of memory (tp_err_oom()). */
int tp_err_is_oom(const struct tp_err *e);

#endif
