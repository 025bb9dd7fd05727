/*
 * err.c — names of verdict kinds and layers, as they appear on the wire.
 * The tables are indexed by the enums; the enum order is the only invariant.
 */
#include "err.h"

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
