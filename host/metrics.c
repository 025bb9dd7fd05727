/*
 * metrics.c — what an operator scrapes: GET /metrics on the HTTP endpoint, in
 * Prometheus' text exposition format 0.0.4 (docs/deploy.md, "Metrics").
 *
 * Counters are kept as events happen (tp_metrics_exec for every exec's
 * outcome, as its audit line; bytes as clients' reads and writes go through);
 * gauges are read from the host when the page is rendered. Every label value
 * comes from a bounded set (the languages, the loaded policies, the error
 * kinds and layers, the --tokens tenants), so the series are bounded; values
 * are escaped as the format asks (backslash, double quote, newline), though
 * policy and tenant names cannot hold those.
 */
#include "host_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "mcp.h"

/* Bucket bounds in seconds, for execs' wall time and their wait in the queue:
 * from half a millisecond (a warm Lua exec) to a minute (the longest wall_ms
 * a preset allows). */
static const double bounds[] = { 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
				 0.25,   0.5,   1,      2.5,   5,    10,    30,   60 };
#define NBOUNDS (sizeof bounds / sizeof bounds[0])

struct hist {
	uint64_t bucket[NBOUNDS + 1]; /* the last: +Inf */
	double sum;
	uint64_t count;
};

/* One series of tidepool_execs_total. */
struct exec_series {
	int lang, policy, tenant; /* tenant: -1 for none */
	char kind[24], layer[12];
	uint64_t n;
};

/* Where a one-shot worker's CPU goes, in the order of its life: from its fork
 * to locked down; rehearsing while idle; reading and decoding its request;
 * the exec (the snippet, by its own clock: usage.cpu_ms); encoding its reply;
 * sending it, exiting and being reaped (what wait4 says it used in all, less
 * the rest). */
static const char *const phases[] = { "start", "rehearsal", "request", "exec", "reply", "exit" };
#define NPHASES (sizeof phases / sizeof phases[0])

/* The most series tidepool_execs_total holds: the labels' sets are bounded,
 * but their product (policies x tenants x kinds) could be large; past this an
 * outcome is counted in tidepool_metrics_series_dropped_total instead. */
#define MAX_SERIES 8192

struct tp_metrics {
	struct exec_series *execs;
	size_t nexecs, cap;
	uint64_t dropped;
	struct hist wall[TP_NLANGS], queue[TP_NLANGS];
	uint64_t restarts[TP_NLANGS];
	uint64_t bytes_in, bytes_out;
	/* One-shot workers' CPU by phase (tp_metrics_worker_cpu), microseconds. */
	uint64_t phase_us[TP_NLANGS][NPHASES];
	uint64_t measured[TP_NLANGS], unmeasured[TP_NLANGS];
	double zygote_gone_ms[TP_NLANGS]; /* reaped zygotes' CPU */
};

int tp_metrics_init(struct tp_host *h)
{
	h->metrics = calloc(1, sizeof *h->metrics);
	return h->metrics ? 0 : -1;
}

void tp_metrics_free(struct tp_host *h)
{
	if (h->metrics != NULL)
		free(h->metrics->execs);
	free(h->metrics);
	h->metrics = NULL;
}

static void observe(struct hist *hi, double secs)
{
	size_t i = 0;
	while (i < NBOUNDS && secs > bounds[i])
		i++;
	hi->bucket[i]++;
	hi->sum += secs;
	hi->count++;
}

void tp_metrics_exec(struct tp_host *h, enum tp_lang_id lang, const struct tp_policy *p,
		     const struct tp_tenant *t, const json_t *res, const char *kind)
{
	struct tp_metrics *m = h->metrics;
	const json_t *err = json_object_get(res, "error");
	const json_t *usage = json_object_get(res, "usage");
	const char *k = json_is_object(err) ? json_string_value(json_object_get(err, "kind"))
			: res != NULL       ? "ok"
					    : kind;
	const char *layer =
	    json_is_object(err) ? json_string_value(json_object_get(err, "layer")) : "none";
	int pi = (int)tp_policy_set_index(h->pols.set, p);
	int ti = t != NULL ? (int)(t - h->tenants) : -1;
	if (m == NULL)
		return;
	k = k ? k : "unknown";
	layer = layer ? layer : "none";
	size_t i = 0;
	while (i < m->nexecs && !(m->execs[i].lang == (int)lang && m->execs[i].policy == pi &&
				  m->execs[i].tenant == ti && strcmp(m->execs[i].kind, k) == 0 &&
				  strcmp(m->execs[i].layer, layer) == 0))
		i++;
	if (i == m->nexecs) {
		if (m->nexecs == MAX_SERIES) {
			m->dropped++;
			return;
		}
		if (m->nexecs == m->cap) {
			size_t cap = m->cap ? 2 * m->cap : 32;
			struct exec_series *v = realloc(m->execs, cap * sizeof *v);
			if (v == NULL)
				return; /* out of memory: this exec is not counted */
			m->execs = v;
			m->cap = cap;
		}
		struct exec_series *s = &m->execs[m->nexecs++];
		memset(s, 0, sizeof *s);
		s->lang = (int)lang;
		s->policy = pi;
		s->tenant = ti;
		snprintf(s->kind, sizeof s->kind, "%s", k);
		snprintf(s->layer, sizeof s->layer, "%s", layer);
	}
	m->execs[i].n++;
	if (json_is_object(usage)) {
		observe(&m->wall[lang],
			json_number_value(json_object_get(usage, "wall_ms")) / 1000);
		observe(&m->queue[lang],
			json_number_value(json_object_get(usage, "queue_ms")) / 1000);
	}
}

void tp_metrics_restart(struct tp_host *h, enum tp_lang_id lang)
{
	if (h->metrics != NULL)
		h->metrics->restarts[lang]++;
}

/* The page is the worker's: each stamp is its word, read once and held to the
 * order of its life and to the total the kernel reports (1 ms of slack, for
 * rusage's rounding). */
void tp_metrics_worker_cpu(struct tp_host *h, enum tp_lang_id lang, const struct tp_shm *shm,
			   uint64_t exec_cpu_us, double cpu_ms)
{
	struct tp_metrics *m = h->metrics;
	uint64_t ready = __atomic_load_n(&shm->cpu_ready_us, __ATOMIC_ACQUIRE);
	uint64_t rehearsed = __atomic_load_n(&shm->cpu_rehearsed_us, __ATOMIC_ACQUIRE);
	uint64_t begin = __atomic_load_n(&shm->cpu_begin_us, __ATOMIC_ACQUIRE);
	uint64_t replied = __atomic_load_n(&shm->cpu_reply_us, __ATOMIC_ACQUIRE);
	uint64_t total = cpu_ms > 0 && cpu_ms < 1e12 ? (uint64_t)(cpu_ms * 1000.0 + 0.5) : 0;

	if (m == NULL || (unsigned)lang >= TP_NLANGS)
		return;
	if (ready == TP_SHM_CPU_UNSET || rehearsed == TP_SHM_CPU_UNSET ||
	    begin == TP_SHM_CPU_UNSET || replied == TP_SHM_CPU_UNSET || ready > rehearsed ||
	    rehearsed > begin || replied < begin || exec_cpu_us > replied - begin ||
	    replied > total + 1000) {
		m->unmeasured[lang]++;
		return;
	}
	uint64_t part[NPHASES] = { ready,
				   rehearsed - ready,
				   begin - rehearsed,
				   exec_cpu_us,
				   replied - begin - exec_cpu_us,
				   replied < total ? total - replied : 0 };
	for (size_t i = 0; i < NPHASES; i++)
		m->phase_us[lang][i] += part[i];
	m->measured[lang]++;
}

void tp_metrics_zygote_cpu(struct tp_host *h, enum tp_lang_id lang, double cpu_ms)
{
	if (h->metrics != NULL && (unsigned)lang < TP_NLANGS && cpu_ms > 0 && cpu_ms < 1e12)
		h->metrics->zygote_gone_ms[lang] += cpu_ms;
}

void tp_metrics_bytes(struct tp_host *h, uint64_t in, uint64_t out)
{
	if (h->metrics != NULL) {
		h->metrics->bytes_in += in;
		h->metrics->bytes_out += out;
	}
}

/* ---- the page ---------------------------------------------------------------------------- */

struct page {
	char *s;
	size_t len, cap;
	int oom;
};

static void put(struct page *pg, const char *fmt, ...)
{
	va_list ap;
	for (;;) {
		va_start(ap, fmt);
		int n = pg->oom ? 0 : vsnprintf(pg->s + pg->len, pg->cap - pg->len, fmt, ap);
		va_end(ap);
		if (pg->oom || n < 0)
			return;
		if ((size_t)n < pg->cap - pg->len) {
			pg->len += (size_t)n;
			return;
		}
		size_t cap = pg->cap * 2 + (size_t)n;
		char *b = realloc(pg->s, cap);
		if (b == NULL) {
			pg->oom = 1;
			return;
		}
		pg->s = b;
		pg->cap = cap;
	}
}

/* A label value, escaped as the exposition format asks. */
static void put_value(struct page *pg, const char *v)
{
	for (; *v; v++)
		put(pg, *v == '\\' ? "\\\\" : *v == '"' ? "\\\"" : *v == '\n' ? "\\n" : "%c", *v);
}

static void head(struct page *pg, const char *name, const char *type, const char *help)
{
	put(pg, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void put_hist(struct page *pg, const char *name, const struct hist *hi, const char *lang)
{
	uint64_t cum = 0;
	for (size_t i = 0; i <= NBOUNDS; i++) {
		cum += hi->bucket[i];
		if (i < NBOUNDS)
			put(pg, "%s_bucket{language=\"%s\",le=\"%g\"} %llu\n", name, lang,
			    bounds[i], (unsigned long long)cum);
		else
			put(pg, "%s_bucket{language=\"%s\",le=\"+Inf\"} %llu\n", name, lang,
			    (unsigned long long)cum);
	}
	put(pg, "%s_sum{language=\"%s\"} %.6f\n%s_count{language=\"%s\"} %llu\n", name, lang,
	    hi->sum, name, lang, (unsigned long long)hi->count);
}

char *tp_metrics_render(const struct tp_host *h, int ready, size_t *len)
{
	struct page pg = { .s = malloc(8192), .cap = 8192 };
	const struct tp_metrics *m = h->metrics;
	if (pg.s == NULL || m == NULL) {
		free(pg.s);
		return NULL;
	}
	head(&pg, "tidepool_build_info", "gauge", "The running tidepool's version.");
	put(&pg, "tidepool_build_info{version=\"%s\"} 1\n", TP_VERSION);
	head(&pg, "tidepool_ready", "gauge",
	     "1 when /readyz answers 200: the default policy's zygotes started, not draining.");
	put(&pg, "tidepool_ready %d\n", ready);
	head(&pg, "tidepool_execs_total", "counter",
	     "Execs answered (or refused before they ran), by outcome: kind is ok or the "
	     "error's kind, layer the layer that decided (none for ok).");
	for (size_t i = 0; i < m->nexecs; i++) {
		const struct exec_series *s = &m->execs[i];
		put(&pg, "tidepool_execs_total{language=\"%s\",policy=\"", tp_langs[s->lang].name);
		put_value(&pg, tp_policy_set_at(h->pols.set, (size_t)s->policy)->name);
		put(&pg, "\",kind=\"%s\",layer=\"%s\",tenant=\"", s->kind, s->layer);
		put_value(&pg, s->tenant >= 0 ? h->tenants[s->tenant].name : "");
		put(&pg, "\"} %llu\n", (unsigned long long)s->n);
	}
	head(&pg, "tidepool_metrics_series_dropped_total", "counter",
	     "Exec outcomes not counted in tidepool_execs_total: its series were at their cap.");
	put(&pg, "tidepool_metrics_series_dropped_total %llu\n", (unsigned long long)m->dropped);
	head(&pg, "tidepool_exec_duration_seconds", "histogram",
	     "Execs' wall time (usage.wall_ms, from the request's arrival).");
	for (int l = 0; l < TP_NLANGS; l++)
		put_hist(&pg, "tidepool_exec_duration_seconds", &m->wall[l], tp_langs[l].name);
	head(&pg, "tidepool_queue_wait_seconds", "histogram",
	     "How long execs waited for a worker (usage.queue_ms).");
	for (int l = 0; l < TP_NLANGS; l++)
		put_hist(&pg, "tidepool_queue_wait_seconds", &m->queue[l], tp_langs[l].name);
	/* Gauges, read now. */
	uint64_t warm[TP_NLANGS] = { 0 }, busy[TP_NLANGS] = { 0 }, sess[TP_NLANGS] = { 0 };
	uint64_t open[TP_NLANGS] = { 0 };
	for (const struct worker *w = h->workers; w != NULL; w = w->next) {
		int l = (int)h->zyg[w->zi].lang->id;
		if (w->exited || w->killed)
			continue;
		if (w->sess != NULL)
			sess[l]++;
		else if (w->exec != NULL && !w->answered)
			busy[l]++;
		else
			warm[l]++;
	}
	for (const struct session *s = h->sessions; s != NULL; s = s->next)
		open[h->zyg[s->zi].lang->id]++;
	head(&pg, "tidepool_workers", "gauge",
	     "Worker processes by state: warm (ready for a one-shot exec), busy (running "
	     "one), session (a session's, idle or running).");
	for (int l = 0; l < TP_NLANGS; l++)
		put(&pg,
		    "tidepool_workers{language=\"%s\",state=\"warm\"} %llu\n"
		    "tidepool_workers{language=\"%s\",state=\"busy\"} %llu\n"
		    "tidepool_workers{language=\"%s\",state=\"session\"} %llu\n",
		    tp_langs[l].name, (unsigned long long)warm[l], tp_langs[l].name,
		    (unsigned long long)busy[l], tp_langs[l].name, (unsigned long long)sess[l]);
	head(&pg, "tidepool_sessions_open", "gauge", "Sessions open.");
	for (int l = 0; l < TP_NLANGS; l++)
		put(&pg, "tidepool_sessions_open{language=\"%s\"} %llu\n", tp_langs[l].name,
		    (unsigned long long)open[l]);
	head(&pg, "tidepool_queue_depth", "gauge", "Execs waiting for a worker.");
	put(&pg, "tidepool_queue_depth %d\n", h->queued);
	head(&pg, "tidepool_clients", "gauge",
	     "Clients connected: stdio, Unix-socket connections, MCP sessions and POSTs in "
	     "flight over HTTP.");
	put(&pg, "tidepool_clients %d\n", h->nclients);
	head(&pg, "tidepool_zygote_restarts_total", "counter",
	     "Zygotes started again after one died or was restarted.");
	for (int l = 0; l < TP_NLANGS; l++)
		put(&pg, "tidepool_zygote_restarts_total{language=\"%s\"} %llu\n", tp_langs[l].name,
		    (unsigned long long)m->restarts[l]);
	head(&pg, "tidepool_worker_cpu_seconds_total", "counter",
	     "CPU of one-shot workers reaped after answering, by phase: start (fork to locked "
	     "down), rehearsal, request (reading it), exec (the snippet, as usage.cpu_ms), reply "
	     "(encoding it), exit (sending it, exiting, reaped). The worker's own stamps, held to "
	     "what wait4 reports.");
	for (int l = 0; l < TP_NLANGS; l++)
		for (size_t i = 0; i < NPHASES; i++)
			put(&pg,
			    "tidepool_worker_cpu_seconds_total{language=\"%s\",phase=\"%s\"} "
			    "%.6f\n",
			    tp_langs[l].name, phases[i], (double)m->phase_us[l][i] / 1e6);
	head(&pg, "tidepool_workers_measured_total", "counter",
	     "One-shot workers whose CPU tidepool_worker_cpu_seconds_total adds up.");
	for (int l = 0; l < TP_NLANGS; l++)
		put(&pg, "tidepool_workers_measured_total{language=\"%s\"} %llu\n",
		    tp_langs[l].name, (unsigned long long)m->measured[l]);
	head(&pg, "tidepool_workers_unmeasured_total", "counter",
	     "One-shot workers whose stamps were out of order or over their CPU: not added up.");
	for (int l = 0; l < TP_NLANGS; l++)
		put(&pg, "tidepool_workers_unmeasured_total{language=\"%s\"} %llu\n",
		    tp_langs[l].name, (unsigned long long)m->unmeasured[l]);
	double zcpu[TP_NLANGS];
	for (int l = 0; l < TP_NLANGS; l++)
		zcpu[l] = m->zygote_gone_ms[l];
	for (int i = 0; i < h->nzyg; i++) {
		double ms = h->zyg[i].pid > 0 ? tp_proc_cpu_ms(h->zyg[i].pid) : -1;
		if (ms > 0)
			zcpu[h->zyg[i].lang->id] += ms;
	}
	head(&pg, "tidepool_zygote_cpu_seconds_total", "counter",
	     "CPU of the zygotes: starting, and forking every worker.");
	for (int l = 0; l < TP_NLANGS; l++)
		put(&pg, "tidepool_zygote_cpu_seconds_total{language=\"%s\"} %.6f\n",
		    tp_langs[l].name, zcpu[l] / 1e3);
	struct rusage self;
	if (getrusage(RUSAGE_SELF, &self) == 0) {
		head(&pg, "process_cpu_seconds_total", "counter",
		     "Total user and system CPU time spent in seconds (the host process).");
		put(&pg, "process_cpu_seconds_total %.6f\n",
		    (double)(self.ru_utime.tv_sec + self.ru_stime.tv_sec) +
			(double)(self.ru_utime.tv_usec + self.ru_stime.tv_usec) / 1e6);
	}
	uint64_t in = m->bytes_in, out = m->bytes_out;
	for (const struct client *c = h->clients; c != NULL; c = c->next) {
		in += c->bytes_in;
		out += c->bytes_out;
	}
	head(&pg, "tidepool_bytes_received_total", "counter",
	     "Bytes read from clients (request lines and HTTP bodies).");
	put(&pg, "tidepool_bytes_received_total %llu\n", (unsigned long long)in);
	head(&pg, "tidepool_bytes_sent_total", "counter",
	     "Bytes written to clients (reply lines, HTTP bodies and SSE events).");
	put(&pg, "tidepool_bytes_sent_total %llu\n", (unsigned long long)out);
	if (pg.oom) {
		free(pg.s);
		return NULL;
	}
	*len = pg.len;
	return pg.s;
}
