/*
 * zygote_ctl.h — starting a language's zygote, from the host.
 *
 * Usage:
 *   1. tp_zygote_start(lang, policy) execs `tidepool --zygote NAME` (or the
 *      language's own binary beside this one, e.g. tidepool-python:
 *      common/langs.c) with an empty environment, a control socket on its fd
 *      TP_ZYGOTE_CTL_FD and the policy it enforces (tp_policy_wire(): never
 *      redact) in a sealed memfd on TP_ZYGOTE_POLICY_FD; it returns the host's
 *      end.
 *   2. Speak common/spawn.h on that socket: tp_spawn_send() for each worker,
 *      tp_spawn_recv_pid() for the answers. Each worker is the host's child
 *      (CLONE_PARENT): the host reaps it.
 */
#ifndef TP_ZYGOTE_CTL_H
#define TP_ZYGOTE_CTL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"
#include "langs.h"
#include "policy.h"

/* Returns the control fd (host end) and sets *pid, or -1 with the failed call
 * recorded in err (TP_KIND_INTERNAL, TP_LAYER_HOST). */
/* ws_base: where sessions' workspaces are made (NULL: none), for a policy with them. */
int tp_zygote_start(const struct tp_lang_info *lang, const struct tp_policy *policy,
		    const char *ws_base, pid_t *pid, struct tp_err *err);

/* The output area every worker's shared page has: the policy's output ceiling. */
uint32_t tp_zygote_area_bytes(const struct tp_policy *policy);

#endif
