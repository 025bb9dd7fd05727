/*
 * err.c — the error value (struct tp_err) and the names of kinds and layers as
 * they appear on the wire. Invariants: the first error recorded in a value wins;
 * the name tables are indexed by the enums.
 */
#include "err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const kind_names[TP_KIND__COUNT] = {
	[TP_KIND_NONE] = "none",
	[TP_KIND_SYNTAX_ERROR] = "syntax_error",
	[TP_KIND_RUNTIME_ERROR] = "runtime_error",
	[TP_KIND_INPUT_ERROR] = "input_error",
	[TP_KIND_RESULT_ERROR] = "result_error",
	[TP_KIND_MEMORY_LIMIT] = "memory_limit",
	[TP_KIND_INSTRUCTION_LIMIT] = "instruction_limit",
	[TP_KIND_CPU_LIMIT] = "cpu_limit",
	[TP_KIND_TIMEOUT] = "timeout",
	[TP_KIND_OUTPUT_LIMIT] = "output_limit",
	[TP_KIND_POLICY_VIOLATION] = "policy_violation",
	[TP_KIND_SANDBOX_VIOLATION] = "sandbox_violation",
	[TP_KIND_CRASHED] = "crashed",
	[TP_KIND_CANCELLED] = "cancelled",
	[TP_KIND_INTERNAL] = "internal_error",
	[TP_KIND_RATE_LIMIT] = "rate_limit",
	[TP_KIND_TOOL_LIMIT] = "tool_limit",
	[TP_KIND_QUEUE_TIMEOUT] = "queue_timeout",
};

static const char *const layer_names[TP_LAYER__COUNT] = {
	[TP_LAYER_NONE] = "none",       [TP_LAYER_LANGUAGE] = "language",
	[TP_LAYER_PROCESS] = "process", [TP_LAYER_KERNEL] = "kernel",
	[TP_LAYER_HOST] = "host",
};

static int lookup(const char *const *names, int count, const char *name)
{
	for (int i = 0; name != NULL && i < count; i++)
		if (strcmp(names[i], name) == 0)
			return i;
	return -1;
}

const char *tp_kind_name(enum tp_kind kind)
{
	return (unsigned)kind < TP_KIND__COUNT ? kind_names[kind] : "internal_error";
}

int tp_kind_from_name(const char *name)
{
	return lookup(kind_names, TP_KIND__COUNT, name);
}

const char *tp_layer_name(enum tp_layer layer)
{
	return (unsigned)layer < TP_LAYER__COUNT ? layer_names[layer] : "host";
}

int tp_layer_from_name(const char *name)
{
	return lookup(layer_names, TP_LAYER__COUNT, name);
}

/* ---- the error value ------------------------------------------------------------------ */

static int record(struct tp_err *e, enum tp_kind kind, enum tp_layer layer, int sys_errno)
{
	if (e == NULL || e->kind != TP_KIND_NONE)
		return 0;
	e->kind = kind == TP_KIND_NONE ? TP_KIND_INTERNAL : kind;
	e->layer = layer;
	e->sys_errno = sys_errno;
	return 1;
}

int tp_err_set(struct tp_err *e, enum tp_kind kind, enum tp_layer layer, int sys_errno,
	       const char *fmt, ...)
{
	va_list ap;

	if (record(e, kind, layer, sys_errno)) {
		va_start(ap, fmt);
		vsnprintf(e->msg, sizeof e->msg, fmt, ap);
		va_end(ap);
	}
	return -1;
}

int tp_err_sys(struct tp_err *e, enum tp_layer layer, const char *what, int sys_errno,
	       const char *hint)
{
	return tp_err_set(e, TP_KIND_INTERNAL, layer, sys_errno, "%s: %s%s%s", what,
			  strerror(sys_errno), hint ? ". Hint: " : "", hint ? hint : "");
}

int tp_err_oom(struct tp_err *e, enum tp_layer layer)
{
	return tp_err_set(e, TP_KIND_INTERNAL, layer, ENOMEM, "out of memory");
}

void tp_err_copy(struct tp_err *e, const struct tp_err *src)
{
	if (tp_err_failed(src) && record(e, src->kind, src->layer, src->sys_errno))
		memcpy(e->msg, src->msg, sizeof e->msg);
}

void tp_err_clear(struct tp_err *e)
{
	if (e != NULL)
		memset(e, 0, sizeof *e);
}

int tp_err_failed(const struct tp_err *e)
{
	return e != NULL && e->kind != TP_KIND_NONE;
}

int tp_err_is_oom(const struct tp_err *e)
{
	return tp_err_failed(e) && e->kind == TP_KIND_INTERNAL && e->sys_errno == ENOMEM;
}
