/*
 * shm.c — writing to and reading from the shared output page.
 * Worker-side functions are async-signal-safe (no locks, no allocation);
 * the host-side snapshot clamps every length the worker could have forged.
 */
#include "shm.h"

#include <string.h>

#include "limit.h"

size_t tp_shm_size(uint32_t area_bytes)
{
	return sizeof(struct tp_shm) + 2 * (size_t)area_bytes;
}

void tp_shm_init(struct tp_shm *shm, uint32_t area_bytes)
{
	memset(shm, 0, sizeof *shm);
	shm->magic = TP_SHM_MAGIC;
	shm->area_bytes = area_bytes;
	shm->syscall_nr = -1;
	shm->cpu_begin_us = TP_SHM_CPU_UNSET;
	shm->cpu_ready_us = shm->cpu_rehearsed_us = shm->cpu_reply_us = TP_SHM_CPU_UNSET;
}

void tp_shm_begin(struct tp_shm *shm, uint64_t out_limit)
{
	shm->out_limit = out_limit < shm->area_bytes ? out_limit : shm->area_bytes;
	shm->len[0] = shm->len[1] = 0;
	shm->truncated[0] = shm->truncated[1] = 0;
	shm->wanted = 0;
	/* A session's worker runs many execs in one page: nothing of the last stays. */
	shm->tripped = 0;
	shm->tripped_limit = 0;
	shm->limit_value = shm->limit_used = 0;
	shm->syscall_nr = -1;
	shm->instructions = shm->mem_peak = 0;
	shm->note[0] = '\0';
	shm->rule[0] = '\0';
}

int tp_shm_write(struct tp_shm *shm, enum tp_stream s, const char *buf, size_t n)
{
	uint64_t used = (uint64_t)shm->len[0] + shm->len[1];
	uint64_t room = used < shm->out_limit ? shm->out_limit - used : 0;
	size_t take = n < room ? n : (size_t)room;

	shm->wanted += n;
	if (take > 0) {
		char *area = shm->data + (size_t)s * shm->area_bytes;
		memcpy(area + shm->len[s], buf, take);
		/* Publish the bytes before the length, for a host reading after a kill. */
		__atomic_store_n(&shm->len[s], shm->len[s] + (uint32_t)take, __ATOMIC_RELEASE);
	}
	if (take < n) {
		shm->truncated[s] = 1;
		return -1;
	}
	return 0;
}

void tp_shm_trip(struct tp_shm *shm, enum tp_kind kind, int limit_id, uint64_t limit, uint64_t used)
{
	if (shm->tripped != 0)
		return;
	shm->tripped_limit = (uint32_t)limit_id;
	shm->limit_value = limit;
	shm->limit_used = used;
	__atomic_store_n(&shm->tripped, (uint32_t)kind, __ATOMIC_RELEASE);
}

void tp_shm_note(struct tp_shm *shm, const char *text)
{
	size_t n = strlen(text);
	n = n < sizeof shm->note - 1 ? n : sizeof shm->note - 1;
	memcpy(shm->note, text, n);
	shm->note[n] = '\0';
}

void tp_shm_rule(struct tp_shm *shm, const char *text)
{
	size_t n = strlen(text);
	if (shm->rule[0] != '\0')
		return;
	n = n < sizeof shm->rule - 1 ? n : sizeof shm->rule - 1;
	memcpy(shm->rule, text, n);
	shm->rule[n] = '\0';
}

int tp_shm_view_cap(struct tp_shm_view *v, uint64_t output_bytes)
{
	uint64_t room = output_bytes;
	int cut = 0;
	v->out_claimed = (uint64_t)v->len[0] + v->len[1];
	for (int s = 0; s < 2; s++) {
		if (v->len[s] > room) {
			v->len[s] = (size_t)room;
			v->truncated[s] = 1;
			cut = 1;
		}
		room -= v->len[s];
	}
	return cut;
}

void tp_shm_snapshot(const struct tp_shm *shm, uint32_t area_bytes, struct tp_shm_view *v)
{
	memset(v, 0, sizeof *v);
	for (int s = 0; s < 2; s++) {
		uint32_t len = __atomic_load_n(&shm->len[s], __ATOMIC_ACQUIRE);
		v->len[s] = len <= area_bytes ? len : area_bytes;
		v->out[s] = shm->data + (size_t)s * area_bytes;
		v->truncated[s] = shm->truncated[s] != 0;
	}
	uint32_t kind = __atomic_load_n(&shm->tripped, __ATOMIC_ACQUIRE);
	/* Only sticky language verdicts may be claimed through the page. */
	if (kind == TP_KIND_MEMORY_LIMIT || kind == TP_KIND_INSTRUCTION_LIMIT ||
	    kind == TP_KIND_CPU_LIMIT || kind == TP_KIND_OUTPUT_LIMIT ||
	    kind == TP_KIND_POLICY_VIOLATION)
		v->tripped = (int)kind;
	uint32_t lim = shm->tripped_limit;
	v->tripped_limit = v->tripped && lim < TP_LIMIT__COUNT ? (int)lim : -1;
	v->limit_value = shm->limit_value;
	v->limit_used = shm->limit_used;
	int nr = shm->syscall_nr;
	v->syscall_nr = nr >= 0 ? nr : -1; /* any number the trap saw: 4096 and above too */
	v->instructions = shm->instructions;
	v->mem_peak = shm->mem_peak;
	v->cpu_begin_us = shm->cpu_begin_us;
	v->cpu_us = shm->cpu_us;
	memcpy(v->note, shm->note, sizeof v->note);
	v->note[sizeof v->note - 1] = '\0'; /* the worker may have left no NUL */
	memcpy(v->rule, shm->rule, sizeof v->rule);
	v->rule[sizeof v->rule - 1] = '\0';
}
