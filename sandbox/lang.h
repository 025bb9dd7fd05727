/*
 * lang.h — what a language plugs into the zygote and the worker.
 *
 * Each language directory (lua-sandbox/, py-sandbox/) defines one struct tp_lang
 * per row of common/langs.c; sandbox/ never names one. A binary's entry point
 * registers the languages it links (tp_lang_register) before the zygote looks
 * one up (tp_lang_find): host/main.c both, lua-sandbox/lmain.c (tidepool-lua)
 * Lua only, a unit test the one it runs.
 *
 * Usage:
 *   1. zygote_init(err): in the zygote, once, before any fork. Build the pristine
 *      interpreter every worker inherits. No request data exists yet. Returns 0,
 *      or -1 with the failure recorded in err (TP_KIND_INTERNAL, TP_LAYER_LANGUAGE).
 *   2. worker_init(entropy): in a fresh worker, before lockdown. Reseed.
 *   3. exec(req, shm, out): in the locked-down worker, once (one-shot). Starts
 *      the page with tp_shm_begin(), runs, and fills *out (common/msg.h): the
 *      value or the failure, and the usage; output goes to shm. Returns 0, or
 *      -1 when no reply could be made (the worker then exits TP_EXIT_FATAL).
 */
#ifndef TP_LANG_H
#define TP_LANG_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "langs.h"
#include "limit.h"
#include "msg.h"
#include "policy.h"
#include "shm.h"

struct tp_lang {
	enum tp_lang_id id; /* its row in common/langs.c: name, tool, texts */
	int (*zygote_init)(struct tp_err *err);
	void (*worker_init)(uint64_t entropy);
	int (*exec)(const struct tp_request *req, struct tp_shm *shm, struct tp_reply *out);
	/* Isolation "state" (NULL: the language has none): after an exec, replace
	 * the language's whole state with a fresh one built from the policy, the
	 * old one's memory scrubbed as it is freed; reseed from entropy. 0, or -1
	 * (the worker then exits: the host makes another). */
	int (*reset)(uint64_t entropy);
	/* Snippets a warm worker runs through exec (flagged as a rehearsal) before it
	 * waits for its request, so the pages a typical exec writes are copied then,
	 * not on the request's path; NULL-terminated, or NULL for none. A rehearsal
	 * must leave nothing the real exec can see. */
	const char *const *rehearsal;
	/* In the zygote, once, after its rehearsal and before its first fork
	 * (NULL: nothing to do): arrange the heap so a worker's new objects land in
	 * memory of their own rather than in the free space of pages the zygote
	 * filled, each of which the worker would copy on its first write. */
	void (*zygote_settle)(void);
	/* Nonzero: the zygote lays its memory out in 2 MiB pages (huge.h), worth it
	 * for an interpreter of megabytes (Python's ~13 MiB), not for Lua's few
	 * hundred KiB, which fill no block. */
	int huge_pages;
};

/* The policy this process enforces. A zygote sets the one the host gave it
 * before zygote_init (tp_sandbox_set_policy takes ownership); a process that
 * sets none (a unit test) gets the built-in "standard". The language layers and
 * the lockdown read it; NULL only when even that could not be built. */
const struct tp_policy *tp_sandbox_policy(void);
void tp_sandbox_set_policy(struct tp_policy *p);

/* The running exec's workspace (a session's private directory, absolute and
 * normalized, also the working directory), or NULL: the file shims treat it as
 * a read-write grant and resolve relative paths in it. The worker sets it from
 * each request. */
const char *tp_sandbox_workspace(void);
void tp_sandbox_set_workspace(const char *dir);
/* Is path (absolute, normalized) at or beneath the workspace? */
int tp_sandbox_in_workspace(const char *path);

/* Makes lang the interpreter of its row (lang->id), replacing any before it.
 * Called by a binary's entry point, before tp_zygote_main; lang must outlive
 * the process (a language directory's static struct). */
void tp_lang_register(const struct tp_lang *lang);

/* By the row's name ("lua"); NULL for an unknown name or a language this
 * binary has not registered. */
const struct tp_lang *tp_lang_find(const char *name);

#endif
