/*
 * cli.c — the commands for people: `run`, `policy check|show|list`, `doctor`,
 * and the policy flags the server shares with them. Everything runs through the
 * same host as the JSON-RPC server: `run` is one sandbox/exec request.
 */
#include "cli.h"
#include "compare.h"

#include <errno.h>
#include <getopt.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "host.h"
#include "jsonio.h"
#include "kprobe.h"
#include "langs.h"
#include "limit.h"
#include "policy.h"
#include "policy_catalog.h"
#include "seccomp_policy.h"
#include "spawn.h"

#define MAX_FILE (8u << 20)

/* ---- policies from flags ------------------------------------------------------ */

/* Between the i-th of n names of a list for people: "a, b and c". */
static const char *list_sep(size_t i, size_t n)
{
	return i == 0 ? "" : i + 1 < n ? ", " : " and ";
}

const char *tp_cli_preset_names(char *buf, size_t len)
{
	size_t off = 0, n = 0;
	while (tp_policy_preset(n) != NULL)
		n++;
	buf[0] = '\0';
	for (size_t i = 0; i < n && off < len; i++) {
		const char *name = tp_policy_preset(i);
		int k = snprintf(buf + off, len - off, "%s%s%s", list_sep(i, n), name,
				 strcmp(name, TP_POLICY_DEFAULT) == 0 ? " (the default)" : "");
		off += k > 0 ? (size_t)k : 0;
	}
	return buf;
}

/* Every error a load found, one a line: "tidepool: FILE:LINE:COL: KEY: what". r
 * may be NULL (it could not be allocated): err's first error then. */
static void print_errors(const struct tp_policy_report *r, const struct tp_err *err)
{
	for (size_t i = 0; r != NULL && i < r->n; i++)
		fprintf(stderr, "tidepool: %s\n", r->e[i].msg);
	if (r == NULL || r->n == 0)
		fprintf(stderr, "tidepool: %s\n", err->msg);
	if (r != NULL && r->more > 0)
		fprintf(stderr, "tidepool: ... %zu more errors\n", r->more);
}

/* The policy of the set read from the file at path (the same file, however
 * named), or NULL. */
static const struct tp_policy *loaded_from(const struct tp_policy_set *s, const char *path)
{
	struct stat a, b;
	if (stat(path, &a) != 0)
		return NULL;
	for (size_t i = 0; i < tp_policy_set_count(s); i++) {
		const struct tp_policy *p = tp_policy_set_at(s, i);
		if (strcmp(p->source, "built-in") != 0 && stat(p->source, &b) == 0 &&
		    a.st_dev == b.st_dev && a.st_ino == b.st_ino)
			return p;
	}
	return NULL;
}

/* The set's loads with every error reported; 0 or -1 (printed). */
static int load_all(struct tp_cli_policies *cp, const char *policy, const char *dir,
		    struct tp_policy_report *r)
{
	struct tp_err err = { 0 };
	int rc = 0;

	tp_policy_set_report(cp->set, r);
	if (dir != NULL && tp_policy_set_load_dir(cp->set, dir, &err) != 0)
		rc = -1;
	else if (policy != NULL && (cp->deflt = loaded_from(cp->set, policy)) == NULL &&
		 (cp->deflt = tp_policy_set_load_file(cp->set, policy, &err)) == NULL)
		rc = -1;
	tp_policy_set_report(cp->set, NULL);
	if (rc != 0)
		print_errors(r, &err);
	return rc;
}

int tp_cli_policies(struct tp_cli_policies *cp, const char *policy, const char *dir)
{
	struct tp_err err = { 0 };
	int is_file = policy != NULL && tp_cli_is_file(policy);

	memset(cp, 0, sizeof *cp);
	cp->set = tp_policy_set_new(&err);
	if (cp->set == NULL) {
		fprintf(stderr, "tidepool: %s\n", err.msg);
		return -1;
	}
	struct tp_policy_report *r = calloc(1, sizeof *r); /* NULL: the first error only */
	int rc = load_all(cp, is_file ? policy : NULL, dir, r);
	free(r);
	if (rc == 0 && !is_file) {
		cp->deflt = tp_policy_set_find(cp->set, policy ? policy : TP_POLICY_DEFAULT);
		if (cp->deflt == NULL) {
			fprintf(stderr,
				"tidepool: unknown policy '%s': name a preset (tidepool policy "
				"list) or a FILE.json\n",
				policy);
			rc = -1;
		}
	}
	if (rc != 0)
		tp_cli_policies_free(cp);
	return rc;
}

int tp_cli_is_file(const char *arg)
{
	size_t n = strlen(arg);
	return strchr(arg, '/') != NULL || (n > 5 && strcmp(arg + n - 5, ".json") == 0);
}

void tp_cli_policies_free(struct tp_cli_policies *cp)
{
	tp_policy_set_free(cp->set);
	cp->set = NULL;
}

/* ---- explaining a policy ------------------------------------------------------- */

/* Words after an 18-column label, wrapped at 100 columns. */
static void word(FILE *f, size_t *col, const char *w)
{
	if (*col > 18 && *col + 1 + strlen(w) > 100) {
		fprintf(f, "\n%18s", "");
		*col = 18;
	}
	fprintf(f, "%s%s", *col > 18 ? " " : "", w);
	*col += strlen(w) + (*col > 18);
}

static void print_list(FILE *f, const char *label, const struct tp_strv *v, const char *none)
{
	size_t col = 18;
	fprintf(f, "  %-16s", label);
	if (v->n == 0)
		fprintf(f, "%s", none);
	for (size_t i = 0; i < v->n; i++)
		word(f, &col, v->v[i]);
	fputc('\n', f);
}

static int listed(const struct tp_strv *v, const char *s, size_t n)
{
	for (size_t i = 0; i < v->n; i++)
		if (strlen(v->v[i]) == n && strncmp(v->v[i], s, n) == 0)
			return 1;
	return 0;
}

/* The Lua functions a snippet gets: whole libraries and single functions. */
static void print_lua(FILE *f, const struct tp_policy *p)
{
	size_t count = 0, col = 18;
	fprintf(f, "  %-16s", "Lua functions");
	for (size_t i = 0; tp_catalog_lua_functions[i] != NULL; i++) {
		const char *fn = tp_catalog_lua_functions[i], *dot = strchr(fn, '.');
		int in = dot ? listed(&p->lua_libraries, fn, (size_t)(dot - fn))
			     : listed(&p->lua_libraries, "base", 4);
		if (in || listed(&p->lua_functions, fn, strlen(fn))) {
			word(f, &col, fn);
			count++;
		}
	}
	fprintf(f, "%s\n", count ? "" : "(none)");
}

static void print_nrs(FILE *f, const char *label, const int *nrs, size_t n)
{
	size_t col = 0;
	fprintf(f, "  %s (%zu):\n   ", label, n);
	for (size_t i = 0; i < n; i++) {
		char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_X86_64, nrs[i]);
		const char *s = name ? name : "?";
		if (col + strlen(s) > 90) {
			fprintf(f, "\n   ");
			col = 0;
		}
		col += strlen(s) + 1;
		fprintf(f, " %s", s);
		free(name);
	}
	fputc('\n', f);
}

static void print_rules(FILE *f)
{
	size_t col = 0;
	fprintf(f, "  allowed only with some arguments:\n   ");
	for (size_t i = 0; i < tp_policy_narg_rules; i++) {
		if (i > 0 && tp_policy_arg_rules[i].nr == tp_policy_arg_rules[i - 1].nr)
			continue;
		char *name =
		    seccomp_syscall_resolve_num_arch(SCMP_ARCH_X86_64, tp_policy_arg_rules[i].nr);
		const char *s = name ? name : "?";
		if (col + strlen(s) > 90) {
			fprintf(f, "\n   ");
			col = 0;
		}
		col += strlen(s) + 1;
		fprintf(f, " %s", s);
		free(name);
	}
	fprintf(f, "\n   (mmap/mprotect never executable, rt_sigaction never SIGSYS, tgkill "
		   "only SIGABRT to itself, fcntl flags only, madvise reclaim hints only;\n"
		   "   prlimit64 reads only, but under kernel-only a worker's own RLIMIT_CPU)\n");
}

/* Who enforces a limit when the language layer is off (sandbox/verdict.h). */
static const char *kernel_only_enforcer(const char *key)
{
	if (strcmp(key, "memory_bytes") == 0)
		return ": the kernel's (RLIMIT_AS)";
	if (strcmp(key, "cpu_ms") == 0)
		return ": the kernel's (ITIMER_PROF, RLIMIT_CPU behind it)";
	if (strcmp(key, "wall_ms") == 0)
		return ": the host's clock";
	if (strcmp(key, "instructions") == 0)
		return ": counted by the language layer's hook, even here";
	return "";
}

void tp_cli_explain(FILE *f, const struct tp_policy *p)
{
	char summary[256], why[512];

	fprintf(f, "policy %s (%s%s%s)\n", p->name, p->source, p->extends ? ", extends " : "",
		p->extends ? p->extends : "");
	if (p->description[0] != '\0')
		fprintf(f, "  %s\n", p->description);
	fprintf(f, "\nlanguages:");
	for (int i = 0; i < TP_NLANGS; i++)
		if (tp_policy_allows_lang(p, (enum tp_lang_id)i))
			fprintf(f, " %s", tp_langs[i].name);
	fprintf(f, "\n\nlimits (a request may lower each, never raise it):\n");
	for (size_t i = 0; i < tp_policy_nkeys; i++) {
		const struct tp_policy_key *k = &tp_policy_keys[i];
		if (k->section == NULL || strcmp(k->section, "limits") != 0)
			continue;
		uint64_t v = tp_policy_key_u64(p, k);
		fprintf(f, "  %-16s%llu%s%s\n", k->key, (unsigned long long)v,
			(k->flags & TP_PK_ZERO_OK) && v == 0 ? " (off)" : "",
			p->language_layer ? "" : kernel_only_enforcer(k->key));
	}
	if (!p->language_layer)
		fprintf(f,
			"  (instructions: no kernel counter counts them deterministically, so the\n"
			"  language layer's hook still does, under kernel-only too)\n");
	fprintf(f, "\nlanguage layer:\n");
	if (!p->language_layer) {
		fprintf(f,
			"  off: it refuses nothing (every builtin, every installed module and "
			"library);\n  limits still hold, and every refusal comes from the kernel "
			"layer\n");
	} else {
		print_lua(f, p);
		print_list(f, "Python modules", &p->py_modules, "(none)");
		print_list(f, "Python builtins", &p->py_builtins, "(none)");
		fprintf(f, "  %-16s%s\n", "refused",
			"everything else, as policy_violation naming the policy");
	}
	fprintf(f, "\nprocess layer:\n");
	if (strcmp(p->isolation, "state") == 0)
		fprintf(f,
			"  isolation       state: each Lua exec in a fresh Lua state, in a worker "
			"that serves\n"
			"                  up to %d of them; a new worker after any limit, crash, "
			"stop or\n"
			"                  refusal (Python: a fresh process for every exec)\n",
			TP_STATE_MAX_EXECS);
	else
		fprintf(f, "  isolation       process: a fresh process for every exec\n");
	fprintf(f, "\nfilesystem (Landlock and seccomp in the kernel, shims in the language):\n");
	print_list(f, "read", &p->fs_read, "(none)");
	print_list(f, "read-write", &p->fs_write, "(none)");
	if (p->fs_write.n > 0)
		fprintf(f, "  %-16s%llu\n", "file_bytes", (unsigned long long)p->file_bytes);
	if (!p->language_layer)
		fprintf(f, "  %-16s%s\n", "runtime",
			"the interpreter's own library directories, read-only");
	fprintf(f, "\nhost:\n");
	print_list(f, "tools", &p->tools, "(none)");
	fprintf(f, "  %-16smax_sessions %llu, idle_ms %llu, max_execs %llu, memory_bytes %llu\n",
		"session", (unsigned long long)p->session.max_sessions,
		(unsigned long long)p->session.idle_ms, (unsigned long long)p->session.max_execs,
		(unsigned long long)p->session.memory_bytes);
	if (p->rate.per_minute)
		fprintf(f, "  %-16s%llu execs per minute\n", "rate",
			(unsigned long long)p->rate.per_minute);
	else
		fprintf(f, "  %-16s%s\n", "rate", "no limit");
	fprintf(f, "  %-16s%zu strings, %zu patterns, %zu environment variables\n", "redact",
		p->redact_strings.n, p->redact_patterns.n, p->redact_env.n);
	fprintf(f,
		"\nkernel layer (each worker, before it reads code):\n"
		"  rlimits: address space, CPU, no new files or processes; fds: only its channel "
		"and page\n"
		"  uid 65534 and no capabilities (when started as root); no_new_privs\n"
		"  Landlock: no file access beyond the grants above, no TCP, no signals or "
		"abstract sockets out\n"
		"  seccomp: an allowlist; anything not named below traps and ends the exec as "
		"sandbox_violation\n");
	print_nrs(f, "allowed", tp_policy_allow_nrs, tp_policy_nallow_nrs);
	print_rules(f);
	/* kernel-only traps every EPERM of the tables (sandbox/lockdown.c worker_action). */
	print_nrs(f,
		  p->language_layer
		      ? "refused with EPERM (the language sees a PermissionError or nil, err)"
		      : "refused by a trap, as are the arguments refused above (the exec ends as "
			"sandbox_violation naming the call; other policies: EPERM)",
		  tp_policy_eperm_nrs, tp_policy_neperm_nrs);
	tp_doctor_summary(summary, sizeof summary);
	fprintf(f, "\nthis machine: %s\n", summary);
	if (tp_policy_kernel_check(p, why, sizeof why) == 0)
		fprintf(f, "verdict: this kernel can enforce policy '%s'\n", p->name);
	else
		fprintf(f, "verdict: REFUSED here: %s\n", why);
}

/* ---- tidepool policy ------------------------------------------------------------ */

static int policy_usage(FILE *f)
{
	fprintf(f, "usage: tidepool policy check FILE [--policy-dir DIR]\n"
		   "       tidepool policy show NAME|FILE [--json] [--policy-dir DIR]\n"
		   "       tidepool policy list [--policy-dir DIR]\n");
	return f == stdout ? 0 : 2;
}

/* Prints p: its explanation, or its effective JSON. */
static void print_policy(const struct tp_policy *p, int json)
{
	if (!json) {
		tp_cli_explain(stdout, p);
		return;
	}
	json_t *j = tp_policy_to_json(p, 0);
	char *s = j ? tp_json_dumps(j, JSON_INDENT(2)) : NULL;
	printf("%s\n", s ? s : "{}");
	free(s);
	json_decref(j);
}

/* What a policy of the set already named like p means for p, which is judged on
 * its own merits: a note on stderr, nothing when it is the same file. */
static void note_same_name(const struct tp_policy_set *s, const struct tp_policy *p,
			   const char *path)
{
	const struct tp_policy *old = tp_policy_set_find(s, p->name);
	if (old == NULL || old == loaded_from(s, path))
		return;
	int same = tp_policy_equal(old, p);
	if (strcmp(old->source, "built-in") != 0)
		fprintf(stderr,
			"tidepool: %s: note: %s policy '%s' (from %s): a server refuses a second "
			"policy of that name\n",
			path, same ? "the same as" : "differs from", old->name, old->source);
	else if (same)
		fprintf(stderr,
			"tidepool: %s: note: identical to the built-in preset '%s', which every "
			"server has: name the preset, not this file\n",
			path, p->name);
	else
		fprintf(stderr,
			"tidepool: %s: note: differs from the built-in preset '%s': a server "
			"refuses it under that name (rename it; it may extend '%s')\n",
			path, p->name, p->name);
}

/* `policy check FILE`: every error of the file, or its explanation and verdict.
 * The file is checked on its own, against the presets and DIR's policies it may
 * extend, with what a server checks at start (the environment redact.env names). */
static int check_file(const char *path, const char *dir, int json)
{
	struct tp_cli_policies cp;
	struct tp_err err = { 0 };
	char why[512];

	if (tp_cli_policies(&cp, NULL, dir) != 0)
		return 2;
	struct tp_policy_report *r = calloc(1, sizeof *r); /* NULL: the first error only */
	tp_policy_set_report(cp.set, r);
	struct tp_policy *p = tp_policy_set_check_file(cp.set, path, &err);
	tp_policy_set_report(cp.set, NULL);
	if (p == NULL)
		print_errors(r, &err);
	free(r);
	if (p == NULL) {
		tp_cli_policies_free(&cp);
		return 2;
	}
	note_same_name(cp.set, p, path);
	print_policy(p, json);
	int rc = tp_policy_kernel_check(p, why, sizeof why) != 0 ? 1 : 0;
	tp_policy_free(p);
	tp_cli_policies_free(&cp);
	return rc;
}

int tp_cli_policy(int argc, char **argv)
{
	static const struct option opts[] = { { "policy-dir", required_argument, NULL, 'd' },
					      { "json", no_argument, NULL, 'j' },
					      { "help", no_argument, NULL, 'h' },
					      { NULL, 0, NULL, 0 } };
	const char *dir = NULL;
	int json = 0, c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'd')
			dir = optarg;
		else if (c == 'j')
			json = 1;
		else
			return policy_usage(c == 'h' ? stdout : stderr);
	}
	const char *cmd = optind < argc ? argv[optind] : NULL;
	const char *arg = optind + 1 < argc ? argv[optind + 1] : NULL;
	if (cmd == NULL ||
	    (strcmp(cmd, "check") != 0 && strcmp(cmd, "show") != 0 && strcmp(cmd, "list") != 0))
		return policy_usage(stderr);
	int list = strcmp(cmd, "list") == 0, check = strcmp(cmd, "check") == 0;
	if ((!list && arg == NULL) || argc - optind > (list ? 1 : 2))
		return policy_usage(stderr);
	int is_file = arg != NULL && tp_cli_is_file(arg);
	if (check && is_file)
		return check_file(arg, dir, json);
	struct tp_cli_policies cp;
	if (tp_cli_policies(&cp, is_file ? arg : NULL, dir) != 0)
		return 2;
	int rc = 0;
	if (list) {
		for (size_t i = 0; i < tp_policy_set_count(cp.set); i++) {
			const struct tp_policy *p = tp_policy_set_at(cp.set, i);
			printf("%-16s %s\n", p->name, p->description);
		}
	} else {
		const struct tp_policy *p = is_file ? cp.deflt : tp_policy_set_find(cp.set, arg);
		if (p == NULL) {
			fprintf(stderr,
				"tidepool policy: unknown policy '%s' (tidepool policy list)\n",
				arg);
			tp_cli_policies_free(&cp);
			return 2;
		}
		print_policy(p, json);
		char why[512];
		if (check && tp_policy_kernel_check(p, why, sizeof why) != 0)
			rc = 1;
	}
	tp_cli_policies_free(&cp);
	return rc;
}

/* ---- tidepool run ------------------------------------------------------------- */

static int run_usage(FILE *f)
{
	char names[128];
	fprintf(
	    f,
	    "usage: tidepool run [options] FILE|-\n"
	    "Runs one snippet under a policy and prints its output, then its verdict on "
	    "stderr.\n"
	    "The language comes from FILE's name (*.lua is Lua, *.py is Python) or --lang.\n\n"
	    "  --lang LANG          %s\n"
	    "  --policy NAME|FILE   the policy (default: " TP_POLICY_DEFAULT
	    "; tidepool policy list)\n"
	    "  --policy-dir DIR     load every DIR/*.json policy first\n"
	    "  --memory-bytes N     lower a limit of the policy (never raise one):\n"
	    "  --instructions N       each limit has its flag\n"
	    "  --cpu-ms N\n"
	    "  --wall-ms N\n"
	    "  --output-bytes N\n"
	    "  --result-bytes N\n"
	    "  --result-depth N\n"
	    "  --seed N             make math.random / random reproducible\n"
	    "  --input KEY=VALUE    a global variable; VALUE is JSON if it parses, else a "
	    "string (repeatable)\n"
	    "  --json               print the whole result as JSON on stdout instead\n"
	    "  --compare P1,P2|all  run it under each policy and print a table: outcome, layer,\n"
	    "                       rule, message, and each policy's entry that decided it\n"
	    "  -h, --help           this help\n\n"
	    "Exit status: 0 the snippet succeeded, 1 it failed or hit a limit, 2 a usage or "
	    "policy error;\n"
	    "with --compare: 0 it ran under every policy (whatever each decided), 1 one could "
	    "not run it.\n",
	    tp_langs_names(names, sizeof names, "%s", ", ", " or "));
	return f == stdout ? 0 : 2;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
	if (f == NULL)
		return NULL;
	char *buf = malloc(MAX_FILE + 1);
	size_t n = buf ? fread(buf, 1, MAX_FILE + 1, f) : 0;
	int bad = buf == NULL || ferror(f) || n > MAX_FILE;
	if (f != stdin)
		fclose(f);
	if (bad) {
		free(buf);
		errno = n > MAX_FILE ? EFBIG : EIO;
		return NULL;
	}
	*len = n;
	return buf;
}

static void keep_reply(void *ctx, json_t *msg)
{
	json_t **slot = ctx;
	json_decref(*slot);
	*slot = msg;
}

/* Output first (flushed), then the verdict, which names a limit and its value. */
static void print_verdict(const json_t *res)
{
	const json_t *err = json_object_get(res, "error");
	fputs(json_string_value(json_object_get(res, "stdout")), stdout);
	fflush(stdout);
	fputs(json_string_value(json_object_get(res, "stderr")), stderr);
	if (json_is_object(err)) {
		const char *tb = json_string_value(json_object_get(err, "traceback"));
		const json_t *lim = json_object_get(err, "limit");
		fprintf(stderr, "error: %s (%s layer): %s",
			json_string_value(json_object_get(err, "kind")),
			json_string_value(json_object_get(err, "layer")),
			json_string_value(json_object_get(err, "message")));
		if (json_is_object(lim))
			fprintf(stderr, ": %s %lld (used %lld)",
				json_string_value(json_object_get(lim, "name")),
				(long long)json_integer_value(json_object_get(lim, "limit")),
				(long long)json_integer_value(json_object_get(lim, "used")));
		if (json_is_string(json_object_get(err, "syscall")))
			fprintf(stderr, " [syscall %s]",
				json_string_value(json_object_get(err, "syscall")));
		fputc('\n', stderr);
		if (tb != NULL)
			fprintf(stderr, "%s\n", tb);
	} else {
		char *v =
		    tp_json_dumps(json_object_get(res, "value"), JSON_ENCODE_ANY | JSON_COMPACT);
		fprintf(stderr, "value: %s\n", v ? v : "?");
		free(v);
	}
	char *u = tp_json_dumps(json_object_get(res, "usage"), JSON_COMPACT);
	fprintf(stderr, "usage: %s\n", u ? u : "?");
	free(u);
}

/* The params of the one request `run` makes. NULL after a message. */
static json_t *run_params(int argc, char **argv, const char **path, const char **policy,
			  const char **dir, int *as_json, const char **compare)
{
	enum { O_LANG = 256, O_POLICY, O_DIR, O_SEED, O_INPUT, O_JSON, O_COMPARE, O_LIMIT };
	static const struct option opts[] = {
		{ "lang", required_argument, NULL, O_LANG },
		{ "policy", required_argument, NULL, O_POLICY },
		{ "policy-dir", required_argument, NULL, O_DIR },
		{ "seed", required_argument, NULL, O_SEED },
		{ "input", required_argument, NULL, O_INPUT },
		{ "json", no_argument, NULL, O_JSON },
		{ "help", no_argument, NULL, 'h' },
		{ "compare", required_argument, NULL, O_COMPARE },
		{ "memory-bytes", required_argument, NULL, O_LIMIT + TP_LIMIT_MEMORY_BYTES },
		{ "instructions", required_argument, NULL, O_LIMIT + TP_LIMIT_INSTRUCTIONS },
		{ "cpu-ms", required_argument, NULL, O_LIMIT + TP_LIMIT_CPU_MS },
		{ "wall-ms", required_argument, NULL, O_LIMIT + TP_LIMIT_WALL_MS },
		{ "output-bytes", required_argument, NULL, O_LIMIT + TP_LIMIT_OUTPUT_BYTES },
		{ "result-bytes", required_argument, NULL, O_LIMIT + TP_LIMIT_RESULT_BYTES },
		{ "result-depth", required_argument, NULL, O_LIMIT + TP_LIMIT_RESULT_DEPTH },
		{ NULL, 0, NULL, 0 }
	};
	json_t *p = json_object(), *limits = json_object(), *inputs = json_object();
	const char *lang = NULL;
	int c, bad = 0;
	char *end;

	optind = 1;
	while (!bad && (c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case O_LANG: lang = optarg; break;
		case O_POLICY: *policy = optarg; break;
		case O_DIR: *dir = optarg; break;
		case O_JSON: *as_json = 1; break;
		case O_COMPARE: *compare = optarg; break;
		case O_SEED: {
			errno = 0;
			long long s = strtoll(optarg, &end, 10);
			if (errno || *end || end == optarg) {
				fprintf(stderr, "tidepool run: --seed needs an integer, not '%s'\n",
					optarg);
				bad = 2;
			}
			json_object_set_new(p, "seed", json_integer(s));
			break;
		}
		case O_INPUT: {
			char *eq = strchr(optarg, '=');
			if (eq == NULL || eq == optarg) {
				fprintf(stderr, "tidepool run: --input needs KEY=VALUE, not '%s'\n",
					optarg);
				bad = 2;
				break;
			}
			json_t *v = json_loads(eq + 1, JSON_DECODE_ANY, NULL);
			if (v == NULL)
				v = json_string(eq + 1);
			json_object_setn_new(inputs, optarg, (size_t)(eq - optarg), v);
			break;
		}
		case 'h': bad = 1; break;
		default:
			if (c >= O_LIMIT && c < O_LIMIT + TP_LIMIT__COUNT) {
				errno = 0;
				unsigned long long v = strtoull(optarg, &end, 10);
				if (errno || *end || end == optarg || optarg[0] == '-') {
					fprintf(stderr,
						"tidepool run: --%s needs a positive integer, not "
						"'%s'\n",
						opts[8 + c - O_LIMIT].name, optarg);
					bad = 2;
				}
				json_object_set_new(limits,
						    tp_limit_name((enum tp_limit_id)(c - O_LIMIT)),
						    json_integer((json_int_t)v));
			} else {
				bad = 2;
			}
		}
	}
	if (!bad && optind != argc - 1)
		bad = 2;
	if (!bad && *compare != NULL && *policy != NULL) {
		fprintf(stderr, "tidepool run: --compare names the policies: drop --policy\n");
		bad = 2;
	}
	if (bad) {
		json_decref(p);
		json_decref(limits);
		json_decref(inputs);
		run_usage(bad == 1 ? stdout : stderr);
		return bad == 1 ? json_integer(0) : NULL;
	}
	*path = argv[optind];
	const struct tp_lang_info *l = lang ? tp_langs_by_name(lang) : tp_langs_by_path(*path);
	if (l == NULL) {
		char names[128];
		if (lang != NULL)
			fprintf(stderr, "tidepool run: unknown language '%s': --lang %s\n", lang,
				tp_langs_names(names, sizeof names, "%s", ", ", " or "));
		else {
			fprintf(stderr,
				"tidepool run: %s: cannot tell the language from the name "
				"(*.lua, *.py): pass --lang %s\n",
				*path, tp_langs_names(names, sizeof names, "%s", ", ", " or "));
		}
		json_decref(p);
		json_decref(limits);
		json_decref(inputs);
		return NULL;
	}
	json_object_set_new(p, "lang", json_string(l->name));
	json_object_set_new(p, "limits", limits);
	json_object_set_new(p, "inputs", inputs);
	return p;
}

int tp_cli_run(int argc, char **argv)
{
	const char *path = NULL, *policy = NULL, *dir = NULL, *compare = NULL;
	int as_json = 0;
	json_t *params = run_params(argc, argv, &path, &policy, &dir, &as_json, &compare);
	if (params == NULL)
		return 2;
	if (json_is_integer(params)) { /* --help */
		json_decref(params);
		return 0;
	}
	if (compare != NULL) {
		size_t clen;
		char *ccode = slurp(path, &clen);
		if (ccode == NULL) {
			fprintf(stderr, "tidepool run: %s: %s\n", path, strerror(errno));
			json_decref(params);
			return 2;
		}
		struct tp_cli_policies ccp;
		int rc = 2;
		if (tp_cli_policies(&ccp, NULL, dir) == 0) {
			rc = tp_cli_compare(compare, params, path, ccode, clen, ccp.set, ccp.deflt,
					    as_json);
			tp_cli_policies_free(&ccp);
		}
		free(ccode);
		json_decref(params);
		return rc;
	}
	struct tp_cli_policies cp;
	if (tp_cli_policies(&cp, policy, dir) != 0) {
		json_decref(params);
		return 2;
	}
	char why[512];
	if (tp_policy_kernel_check(cp.deflt, why, sizeof why) != 0) {
		fprintf(stderr, "tidepool run: %s\n", why);
		tp_cli_policies_free(&cp);
		json_decref(params);
		return 2;
	}
	size_t len;
	char *code = slurp(path, &len);
	if (code == NULL) {
		fprintf(stderr, "tidepool run: %s: %s\n", path, strerror(errno));
		tp_cli_policies_free(&cp);
		json_decref(params);
		return 2;
	}
	json_object_set_new(params, "code", json_stringn(code, len));
	json_object_set_new(params, "policy", json_string(cp.deflt->name));
	free(code);
	json_t *req = json_pack("{s:s, s:i, s:s, s:o}", "jsonrpc", "2.0", "id", 1, "method",
				"sandbox/exec", "params", params);
	json_t *reply = NULL;
	struct tp_err err = { 0 };
	struct tp_host_cfg cfg;
	tp_host_default_cfg(&cfg);
	cfg.use_stdin = 0;
	cfg.emit = keep_reply;
	cfg.emit_ctx = &reply;
	cfg.policies = cp.set;
	cfg.policy = cp.deflt;
	struct tp_host *h = tp_host_new(&cfg, &err);
	char *line = req ? json_dumps(req, JSON_COMPACT) : NULL;
	json_decref(req);
	if (h == NULL || line == NULL) {
		fprintf(stderr, "tidepool run: %s\n", h ? "out of memory" : err.msg);
		tp_host_free(h);
		free(line);
		tp_cli_policies_free(&cp);
		return 2;
	}
	tp_host_line(h, line, strlen(line));
	free(line);
	tp_host_run(h);
	tp_host_free(h);
	tp_cli_policies_free(&cp);
	json_t *res = json_object_get(reply, "result");
	if (!json_is_object(res)) {
		const char *m =
		    json_string_value(json_object_get(json_object_get(reply, "error"), "message"));
		fprintf(stderr, "tidepool run: %s\n", m ? m : "no result");
		json_decref(reply);
		return 2;
	}
	if (as_json) {
		char *s = tp_json_dumps(res, JSON_COMPACT);
		printf("%s\n", s ? s : "null");
		free(s);
	} else {
		print_verdict(res);
	}
	int ok = json_is_true(json_object_get(res, "ok"));
	json_decref(reply);
	return ok ? 0 : 1;
}
