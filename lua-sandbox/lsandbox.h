/*
 * lsandbox.h — the Lua 5.4 language layer.
 *
 * Usage:
 *   1. tp_lua_zygote_init(err): build the pristine lua_State from the allowlist
 *      (in the zygote, once); -1 with the failure recorded in err.
 *   2. tp_lua_worker_init(entropy): reseed math.random in a fresh worker.
 *   3. tp_lua_exec(req, shm): run one snippet under the memory, instruction, CPU
 *      and output limits; return the worker reply object.
 *   4. Isolation "state" (tp_lang_lua.reset): close the exec's state without
 *      running any of its code, every block zeroed as it is freed, and build a
 *      fresh one as the zygote did.
 */
#ifndef TP_LSANDBOX_H
#define TP_LSANDBOX_H

#include "lang.h"

int tp_lua_zygote_init(struct tp_err *err);
void tp_lua_worker_init(uint64_t entropy);
int tp_lua_exec(const struct tp_request *req, struct tp_shm *shm, struct tp_reply *out);

extern const struct tp_lang tp_lang_lua;

#endif
