/*
 * toolcall.h — a running exec calling one of the client's tools, worker side.
 * The call goes to the host as a TP_MSG_TOOL_CALL frame on the worker's
 * channel; the worker blocks until the TP_MSG_TOOL_RESULT frame comes back.
 * Blocked in read, it uses no CPU and runs no instruction: only the host's
 * wall clock runs. The host decides everything: whether the policy has the
 * tool, the tool_calls limit, the client's answer, a stop.
 *
 * Usage:
 *   1. The worker, once: tp_tool_set_channel(fd).
 *   2. A language: tp_tool_invoke(name, arguments, lim, &res); on 0, res is
 *      owned (tp_tool_result_free after): TP_TOOL_OK with the value, else the
 *      message to raise. -1: the channel is broken (the worker must end).
 */
#ifndef TP_TOOLCALL_H
#define TP_TOOLCALL_H

#include <jansson.h>

#include "limit.h"
#include "msg.h"

void tp_tool_set_channel(int fd);
/* name must pass tp_tool_name_ok (else res says so, status TP_TOOL_REFUSED,
 * and nothing is sent); arguments an object (borrowed). */
int tp_tool_invoke(const char *name, const json_t *arguments, const struct tp_limits *lim,
		   struct tp_tool_result *res);

#endif
