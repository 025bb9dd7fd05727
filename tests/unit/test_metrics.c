/*
 * test_metrics.c — a one-shot worker's CPU by phase (host/metrics.c,
 * tp_metrics_worker_cpu): the page's stamps are the worker's word, so every
 * forged order is counted as unmeasured and nothing else; a measured worker's
 * phases add up to what wait4 reported (or to its reply stamp, at most 1 ms
 * over). Held on chosen cases, then on 200,000 random ones against a model.
 */
#include <stdlib.h>
#include <string.h>

#include "host_int.h"
#include "tap.h"

#define NPH 6
static const char *const ph[NPH] = { "start", "rehearsal", "request", "exec", "reply", "exit" };

struct got {
	double phase[NPH];
	double measured, unmeasured;
};

static double field(const char *page, const char *series)
{
	const char *p = strstr(page, series);
	return p != NULL ? strtod(p + strlen(series), NULL) : -1;
}

static struct got read_page(struct tp_host *h, const char *lang)
{
	struct got g;
	size_t len;
	char key[160], *page = tp_metrics_render(h, 1, &len);
	CHECK(page != NULL);
	for (int i = 0; i < NPH; i++) {
		snprintf(key, sizeof key,
			 "tidepool_worker_cpu_seconds_total{language=\"%s\",phase=\"%s\"} ", lang,
			 ph[i]);
		g.phase[i] = page ? field(page, key) : -1;
	}
	snprintf(key, sizeof key, "tidepool_workers_measured_total{language=\"%s\"} ", lang);
	g.measured = page ? field(page, key) : -1;
	snprintf(key, sizeof key, "tidepool_workers_unmeasured_total{language=\"%s\"} ", lang);
	g.unmeasured = page ? field(page, key) : -1;
	free(page);
	return g;
}

static struct tp_shm page_of(uint64_t ready, uint64_t rehearsed, uint64_t begin, uint64_t reply)
{
	struct tp_shm s;
	tp_shm_init(&s, 0);
	s.cpu_ready_us = ready;
	s.cpu_rehearsed_us = rehearsed;
	s.cpu_begin_us = begin;
	s.cpu_reply_us = reply;
	return s;
}

static int near(double a, double b)
{
	return a > b - 1e-6 && a < b + 1e-6;
}

static void test_cases(void)
{
	struct tp_host h;
	memset(&h, 0, sizeof h);
	CHECK_EQ_INT(tp_metrics_init(&h), 0);

	/* An honest worker: 100 µs to lock down, 20 rehearsing, 5 reading its
	 * request, a 300 µs exec, 50 encoding, and 400 µs more until reaped. */
	struct tp_shm s = page_of(100, 120, 125, 475);
	tp_metrics_worker_cpu(&h, TP_LANG_LUA, &s, 300, 0.875);
	struct got g = read_page(&h, "lua");
	const double want[NPH] = { 100e-6, 20e-6, 5e-6, 300e-6, 50e-6, 400e-6 };
	for (int i = 0; i < NPH; i++)
		CHECK(near(g.phase[i], want[i]));
	CHECK_EQ_INT((long long)g.measured, 1);
	CHECK_EQ_INT((long long)g.unmeasured, 0);

	/* Forged: each is counted unmeasured, and no phase moves. */
	const struct {
		uint64_t ready, rehearsed, begin, reply, exec;
		double total_ms;
	} bad[] = {
		{ TP_SHM_CPU_UNSET, 120, 125, 475, 300, 0.875 }, /* a stamp missing */
		{ 100, 120, 125, TP_SHM_CPU_UNSET, 300, 0.875 },
		{ 130, 120, 125, 475, 300, 0.875 },            /* out of order */
		{ 100, 120, 110, 475, 300, 0.875 },            /* begun before rehearsed */
		{ 100, 120, 125, 124, 0, 0.875 },              /* replied before begun */
		{ 100, 120, 125, 475, 351, 0.875 },            /* an exec longer than its span */
		{ 100, 120, 125, 2000, 300, 0.875 },           /* more than wait4 says */
		{ 100, 120, 125, UINT64_MAX - 1, 300, 0.875 }, /* the wrap */
		{ 100, 120, 125, 475, UINT64_MAX, 0.875 },
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		struct tp_shm b =
		    page_of(bad[i].ready, bad[i].rehearsed, bad[i].begin, bad[i].reply);
		tp_metrics_worker_cpu(&h, TP_LANG_LUA, &b, bad[i].exec, bad[i].total_ms);
	}
	g = read_page(&h, "lua");
	for (int i = 0; i < NPH; i++)
		CHECK(near(g.phase[i], want[i]));
	CHECK_EQ_INT((long long)g.measured, 1);
	CHECK_EQ_INT((long long)g.unmeasured, (long long)(sizeof bad / sizeof *bad));

	/* A reply stamp up to 1 ms past the total (rusage's rounding): measured,
	 * its exit 0, its phases its stamps. */
	s = page_of(100, 100, 100, 1500);
	tp_metrics_worker_cpu(&h, TP_LANG_PYTHON, &s, 1000, 1.0);
	g = read_page(&h, "python");
	CHECK(near(g.phase[5], 0));
	CHECK(near(g.phase[0] + g.phase[1] + g.phase[2] + g.phase[3] + g.phase[4], 1500e-6));
	tp_metrics_free(&h);
}

static uint64_t rnd(uint64_t n)
{
	return ((uint64_t)rand() << 31 ^ (uint64_t)rand()) % n;
}

/* Random stamps, honest and forged, against a model of the rule. */
static void test_random(void)
{
	struct tp_host h;
	double total_sum = 0, phase_sum, measured = 0, unmeasured = 0;
	memset(&h, 0, sizeof h);
	CHECK_EQ_INT(tp_metrics_init(&h), 0);
	srand(29);
	for (int i = 0; i < 200000; i++) {
		uint64_t t[4];
		for (int k = 0; k < 4; k++)
			t[k] = rnd(8) == 0 ? TP_SHM_CPU_UNSET : rnd(5000);
		uint64_t exec = rnd(3000), total_us = rnd(6000);
		if (rnd(2)) { /* in order, near an honest worker's, or at its edges */
			for (int a = 0; a < 4; a++)
				for (int b = a + 1; b < 4; b++)
					if (t[b] < t[a]) {
						uint64_t x = t[a];
						t[a] = t[b], t[b] = x;
					}
			if (t[3] != TP_SHM_CPU_UNSET && t[2] <= t[3]) {
				exec = rnd(t[3] - t[2] + 2);
				total_us = t[3] + rnd(3000);
				total_us = total_us > 1200 ? total_us - 1200 : 0;
			}
		}
		struct tp_shm s = page_of(t[0], t[1], t[2], t[3]);
		int ok = t[0] != TP_SHM_CPU_UNSET && t[1] != TP_SHM_CPU_UNSET &&
			 t[2] != TP_SHM_CPU_UNSET && t[3] != TP_SHM_CPU_UNSET && t[0] <= t[1] &&
			 t[1] <= t[2] && t[2] <= t[3] && exec <= t[3] - t[2] &&
			 t[3] <= total_us + 1000;
		tp_metrics_worker_cpu(&h, TP_LANG_LUA, &s, exec, (double)total_us / 1000.0);
		if (ok) {
			measured++;
			total_sum += (double)(t[3] > total_us ? t[3] : total_us);
		} else {
			unmeasured++;
		}
	}
	struct got g = read_page(&h, "lua");
	phase_sum = 0;
	for (int i = 0; i < NPH; i++) {
		CHECK(g.phase[i] >= 0);
		phase_sum += g.phase[i];
	}
	CHECK_EQ_INT((long long)g.measured, (long long)measured);
	CHECK_EQ_INT((long long)g.unmeasured, (long long)unmeasured);
	CHECK(measured > 10000 && unmeasured > 10000);
	/* The page prints microseconds: the sums agree to its rounding. */
	CHECK(phase_sum > total_sum / 1e6 - 1e-5 && phase_sum < total_sum / 1e6 + 1e-5);
	tp_metrics_free(&h);
}

int main(void)
{
	test_cases();
	test_random();
	return tp_test_done("test_metrics");
}
