/*
 * lua_state_probe.c — the floor of an exec at isolation "state", measured in
 * one process: the CPU of running `return 1+1` in a lua_State built from the
 * allowlist and then replacing it with a fresh one, as tidepool's state worker
 * does (tp_lang_lua's exec, then its reset: the state closed block by block
 * scrubbed, and built again from the policy), with no process, pipe or host.
 * The policy is the bench's own ("bench-state": standard's allowlist and
 * limits, isolation "state"). `make bench` builds it and prints tidepool's
 * state-level CPU per exec against it (goal ≤ 2×).
 *
 * Prints one line: "lua_state_us <median µs per exec>" (the median of 7 rounds
 * of 2,000 execs, each round's CPU from getrusage).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "lang.h"
#include "lsandbox.h"
#include "policy.h"
#include "shm.h"

#define ROUNDS 7
#define EXECS 2000
#define AREA (64u << 10)

static double cpu_us(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(void)
{
	static const char text[] =
	    "{\"name\": \"bench-state\", \"extends\": \"standard\", \"isolation\": \"state\"}";
	struct tp_err err = { 0 };
	struct tp_policy_set *set = tp_policy_set_new(&err);
	struct tp_policy *p =
	    set ? tp_policy_set_check_text(set, text, strlen(text), "bench-state", NULL, &err) : NULL;
	if (p == NULL) {
		fprintf(stderr, "lua_state_probe: %s\n", err.msg);
		return 1;
	}
	const struct tp_limits lim = p->limits;
	tp_sandbox_set_policy(p);
	struct tp_shm *shm = mmap(NULL, tp_shm_size(AREA), PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (shm == MAP_FAILED || tp_lang_lua.zygote_init(&err) != 0) {
		fprintf(stderr, "lua_state_probe: %s\n", err.msg);
		return 1;
	}
	tp_lang_lua.worker_init(1);
	struct tp_request req = { .code = "return 1+1", .code_len = 10, .limits = lim };
	double per[ROUNDS];
	for (int r = 0; r < ROUNDS; r++) {
		double t0 = cpu_us();
		for (int i = 0; i < EXECS; i++) {
			struct tp_reply out;
			memset(&out, 0, sizeof out);
			tp_shm_init(shm, AREA);
			if (tp_lang_lua.exec(&req, shm, &out) != 0 || !out.ok ||
			    !json_is_integer(out.value) || json_integer_value(out.value) != 2) {
				fprintf(stderr, "lua_state_probe: the exec failed\n");
				return 1;
			}
			tp_reply_free(&out);
			if (tp_lang_lua.reset((uint64_t)i + 2) != 0) {
				fprintf(stderr, "lua_state_probe: the reset failed\n");
				return 1;
			}
		}
		per[r] = (cpu_us() - t0) / EXECS;
	}
	qsort(per, ROUNDS, sizeof per[0], cmp);
	printf("lua_state_us %.3f\n", per[ROUNDS / 2]);
	tp_policy_set_free(set);
	return 0;
}
