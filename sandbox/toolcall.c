/*
 * toolcall.c — a tool call from a running exec: one frame out, one frame back
 * (see toolcall.h). The host is trusted here; its frame is still decoded with
 * the exec's caps.
 */
#include "toolcall.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"

/* This file's one mutable global: the worker's channel to the host, set once
 * per worker before its first exec (tp_tool_set_channel, from worker.c), read
 * by each tool call after; no signal handler touches it. */
static int g_chan = -1;

void tp_tool_set_channel(int fd)
{
	g_chan = fd;
}

static int refuse(struct tp_tool_result *res, const char *msg)
{
	memset(res, 0, sizeof *res);
	res->status = TP_TOOL_REFUSED;
	return tp_text_set(&res->message, msg, strlen(msg), TP_TOOL_MESSAGE_MAX);
}

int tp_tool_invoke(const char *name, const json_t *arguments, const struct tp_limits *lim,
		   struct tp_tool_result *res)
{
	struct tp_tool_call c = { .arguments = (json_t *)arguments };
	size_t n = strlen(name), len;

	if (!tp_tool_name_ok(name, n))
		return refuse(res, "a tool name is 1 to 64 of A-Z a-z 0-9 _ - .");
	if (g_chan < 0)
		return refuse(res, "tool calls are not available here");
	memcpy(c.name, name, n + 1);
	char *buf = tp_msg_tool_call_encode(&c, &len);
	if (buf == NULL)
		return refuse(res, "out of memory encoding the tool call");
	int rc = tp_frame_send(g_chan, buf, len);
	free(buf);
	if (rc != 0)
		return -1;
	/* The answer: the value is capped as the exec's own result is. */
	buf = tp_frame_recv(g_chan, lim->result_bytes + TP_TOOL_MESSAGE_MAX + 64, &len);
	if (buf == NULL)
		return -1;
	rc = tp_msg_tool_result_decode(buf, len, lim, res);
	free(buf);
	return rc;
}
