/*
 * main.c — command-line entry: serve JSON-RPC (default), the commands for
 * people (host/cli.c), or the internal `--zygote LANG` the host execs. Thin:
 * everything else is testable. tidepool (this file's binary) links both
 * languages and registers both (sandbox/lang.h); the zygotes' own binaries,
 * tidepool-lua and tidepool-python, have mains of their own (lmain.c, pymain.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cli.h"
#include "failalloc.h"
#include "host.h"
#include "kprobe.h"
#include "lang.h"
#include "langs.h"
#include "lsandbox.h"
#include "mcp.h"
#include "pysandbox.h"
#include "sha256.h"
#include "zygote.h"

static int usage(FILE *f)
{
	char presets[256];
	fprintf(
	    f,
	    "usage: tidepool [--policy NAME|FILE] [--policy-dir DIR] [--audit FILE]\n"
	    "                [--jobs N] [--queue N] [--workspace-dir DIR]\n"
	    "                [--listen unix:PATH [--listen-mode MODE] [--max-clients N]]\n"
	    "                [--listen http://127.0.0.1:PORT [--tokens FILE]] "
	    "[--drain-timeout S]\n"
	    "                [--log-format text|json]\n"
	    "                      serve JSON-RPC 2.0 (MCP) on stdin/stdout: run Lua 5.4 and "
	    "Python 3.11\n"
	    "                      (--jobs: execs at once, default the CPUs; --queue: execs "
	    "waiting, default 256)\n"
	    "                      --listen also serves each connection to a Unix socket as a\n"
	    "                      client of its own (mode 0600 unless --listen-mode; at most\n"
	    "                      --max-clients, default 64), until SIGTERM or SIGINT;\n"
	    "                      http://127.0.0.1:PORT serves MCP over HTTP at /mcp; with\n"
	    "                      --tokens, only to bearer tokens of its tenants (and any\n"
	    "                      address may be bound)\n"
	    "       tidepool run [options] FILE|-     run one .lua or .py file and print its "
	    "verdict\n"
	    "       tidepool playground [--port N] [--listen http://ADDR:PORT] [--tokens FILE]\n"
	    "                           [--policy-dir DIR]\n"
	    "                      the HTTP service, and a page at / to run code under several\n"
	    "                      policies side by side (docs/playground.md); port 8765 on\n"
	    "                      127.0.0.1 unless told (0: a free one)\n"
	    "       tidepool policy check FILE         validate a policy and explain each layer\n"
	    "       tidepool policy show NAME [--json] explain a preset or loaded policy\n"
	    "       tidepool policy list               the policies there are\n"
	    "       tidepool doctor                    which kernel protections are active here\n"
	    "       tidepool token new | hash          a new bearer token and its digest\n"
	    "       tidepool --version | --help\n"
	    "`tidepool run --help` lists run's options. A policy is a JSON file "
	    "(policies/README.md);\n"
	    "the presets are %s.\n"
	    "\n"
	    "Ending: end of file on stdin means no more requests. tidepool finishes every\n"
	    "request in flight (each exec within its own limits), writes every reply, then\n"
	    "exits 0; a tool call made after it gets an error, since no client can answer\n"
	    "it. A client that is gone (its end of stdout closed) gets every exec cancelled,\n"
	    "and tidepool exits 0 at once. SIGTERM or SIGINT cancels every exec (a\n"
	    "sandbox/exec is answered with kind cancelled, a tools/call is not answered) and\n"
	    "tidepool exits with 128 + the signal within half a second. SIGHUP reopens the\n"
	    "--audit file and changes nothing else.\n"
	    "\n"
	    "With --listen, each connection is a client like stdio, with its own requests,\n"
	    "replies, tool calls and sessions (docs/clients.md); the end of stdin ends only\n"
	    "the stdio client, and tidepool serves the socket until SIGTERM or SIGINT.\n",
	    tp_cli_preset_names(presets, sizeof presets));
	return f == stdout ? 0 : 2;
}

/* A whole number in [lo, hi], or -1 after saying why. */
static long count_arg(const char *flag, const char *s, long lo, long hi)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) {
		fprintf(stderr, "tidepool: %s must be a whole number from %ld to %ld, not '%s'\n",
			flag, lo, hi, s);
		return -1;
	}
	return v;
}

static int once(const char *what)
{
	fprintf(stderr, "tidepool: %s may be given once\n", what);
	return 2;
}

/* An octal file mode for the socket, 0 to 0777 (e.g. 0660 for a group). */
static long mode_arg(const char *s)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 8);
	if (errno != 0 || end == s || *end != '\0' || v < 0 || v > 0777) {
		fprintf(stderr,
			"tidepool: --listen-mode must be an octal mode from 0 to 0777 (e.g. 0660), "
			"not '%s'\n",
			s);
		return -1;
	}
	return v;
}

/* The host polls (never select) and each worker holds two of its fds (its
 * channel and its page, pages.c), a session's a third (its workspace): it
 * takes its hard RLIMIT_NOFILE as its soft one, as servers do, rather than
 * stop at the soft 1,024 a shell gives. */
static void raise_nofile(void)
{
	struct rlimit r;
	if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
		r.rlim_cur = r.rlim_max;
		setrlimit(RLIMIT_NOFILE, &r);
	}
}

/* Serves; with page, `tidepool playground`'s service: the HTTP listener also
 * serves the page, stdin is not read, and the page's URL is printed. */
static int serve(int argc, char **argv, int page)
{
	enum {
		O_POLICY = 256,
		O_DIR,
		O_AUDIT,
		O_JOBS,
		O_QUEUE,
		O_WSDIR,
		O_LISTEN,
		O_MODE,
		O_MAXC,
		O_TOKENS,
		O_DRAIN,
		O_LOGFMT
	};
	static const struct option opts[] = { { "policy", required_argument, NULL, O_POLICY },
					      { "policy-dir", required_argument, NULL, O_DIR },
					      { "audit", required_argument, NULL, O_AUDIT },
					      { "jobs", required_argument, NULL, O_JOBS },
					      { "queue", required_argument, NULL, O_QUEUE },
					      { "workspace-dir", required_argument, NULL, O_WSDIR },
					      { "listen", required_argument, NULL, O_LISTEN },
					      { "listen-mode", required_argument, NULL, O_MODE },
					      { "max-clients", required_argument, NULL, O_MAXC },
					      { "tokens", required_argument, NULL, O_TOKENS },
					      { "drain-timeout", required_argument, NULL, O_DRAIN },
					      { "log-format", required_argument, NULL, O_LOGFMT },
					      { "help", no_argument, NULL, 'h' },
					      { NULL, 0, NULL, 0 } };
	const char *policy = NULL, *dir = NULL, *audit = NULL, *wsdir = NULL, *listen = NULL,
		   *http = NULL, *tokens = NULL;
	long jobs = 0, queue = -1, mode = -1, maxc = -1, drain = -1;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == O_POLICY)
			policy = optarg;
		else if (c == O_DIR)
			dir = optarg;
		else if (c == O_AUDIT)
			audit = optarg;
		else if (c == O_JOBS && (jobs = count_arg("--jobs", optarg, 1, TP_MAX_JOBS)) < 0)
			return 2;
		else if (c == O_QUEUE && (queue = count_arg("--queue", optarg, 0, 100000)) < 0)
			return 2;
		else if (c == O_WSDIR)
			wsdir = optarg;
		else if (c == O_TOKENS)
			tokens = optarg;
		else if (c == O_LOGFMT && strcmp(optarg, "json") == 0)
			tp_host_log_json();
		else if (c == O_LOGFMT && strcmp(optarg, "text") != 0) {
			fprintf(stderr, "tidepool: --log-format is text or json, not '%s'\n",
				optarg);
			return 2;
		} else if (c == O_LISTEN && strncmp(optarg, "http://", 7) == 0 && http != NULL)
			return once("--listen http://");
		else if (c == O_LISTEN && strncmp(optarg, "http://", 7) == 0)
			http = optarg;
		else if (c == O_LISTEN && listen != NULL)
			return once("--listen unix:");
		else if (c == O_LISTEN)
			listen = optarg;
		else if (c == O_DRAIN &&
			 (drain = count_arg("--drain-timeout", optarg, 0, 3600)) < 0)
			return 2;
		else if (c == O_MODE && (mode = mode_arg(optarg)) < 0)
			return 2;
		else if (c == O_MAXC &&
			 (maxc = count_arg("--max-clients", optarg, 1, TP_MAX_CLIENTS)) < 0)
			return 2;
		else if (c != O_JOBS && c != O_QUEUE && c != O_MODE && c != O_MAXC &&
			 c != O_DRAIN && c != O_LOGFMT)
			return usage(c == 'h' ? stdout : stderr);
	}
	if (optind < argc) {
		fprintf(stderr, "tidepool: unknown command '%s'\n", argv[optind]);
		return usage(stderr);
	}
	if (listen == NULL && http == NULL && (mode >= 0 || maxc >= 0)) {
		fprintf(stderr, "tidepool: --listen-mode and --max-clients need --listen\n");
		return 2;
	}
	if (tokens != NULL && http == NULL) {
		fprintf(stderr, "tidepool: --tokens needs --listen http://ADDR:PORT (tokens are "
				"HTTP's bearer tokens)\n");
		return 2;
	}
	struct tp_cli_policies cp;
	if (tp_cli_policies(&cp, policy, dir) != 0)
		return 2;
	char why[512], summary[256];
	if (tp_policy_kernel_check(cp.deflt, why, sizeof why) != 0) {
		fprintf(stderr, "tidepool: %s\n", why);
		tp_cli_policies_free(&cp);
		return 2;
	}
	tp_doctor_summary(summary, sizeof summary);
	snprintf(why, sizeof why, "kernel: %s; default policy: %s", summary, cp.deflt->name);
	tp_host_log(why);
	struct tp_err err = { 0 };
	struct tp_host_cfg cfg;
	tp_host_default_cfg(&cfg);
	cfg.policies = cp.set;
	cfg.policy = cp.deflt;
	cfg.audit_path = audit;
	cfg.workspace_dir = wsdir;
	if (jobs > 0)
		tp_host_cfg_jobs(&cfg, (int)jobs);
	if (queue >= 0)
		cfg.max_queue = (int)queue;
	cfg.listen = listen;
	cfg.listen_http = http;
	cfg.tokens = tokens;
	/* The HTTP service drains on SIGTERM (a fleet's replica being replaced);
	 * a client's own subprocess is cancelled at once, as it always was. */
	cfg.drain_ms = 1000.0 * (double)(drain >= 0 ? drain : http != NULL && !page ? 25 : 0);
	cfg.playground = page;
	cfg.use_stdin = !page;
	if (mode >= 0)
		cfg.listen_mode = (unsigned)mode;
	if (maxc > 0)
		cfg.max_clients = (int)maxc;
	raise_nofile();
	struct tp_host *h = tp_host_new(&cfg, &err);
	if (h == NULL) {
		fprintf(stderr, "tidepool: %s\n", err.msg);
		tp_cli_policies_free(&cp);
		return 2;
	}
	const char *url = tp_host_http_url(h);
	if (page && url != NULL) { /* http://ADDR:PORT/mcp: the page is at / */
		printf("playground on %.*s/\n", (int)(strlen(url) - 4), url);
		fflush(stdout);
	}
	int rc = tp_host_run(h);
	tp_host_free(h);
	tp_cli_policies_free(&cp);
	return rc;
}

#define PLAYGROUND_PORT 8765

static int playground_usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: tidepool playground [--port N] [--listen http://ADDR:PORT] [--tokens FILE]\n"
	    "                           [--policy-dir DIR]\n"
	    "  The HTTP service (MCP at /mcp, as --listen http://) and a page at / to run\n"
	    "  code under several policies side by side, for a classroom\n"
	    "  (docs/playground.md). It binds 127.0.0.1:%d unless --port or --listen\n"
	    "  says otherwise (--port 0: a free port); an address beyond loopback needs\n"
	    "  --tokens, whose bearer tokens the page then asks for. It prints\n"
	    "  \"playground on http://ADDR:PORT/\" and serves until SIGINT or SIGTERM.\n",
	    PLAYGROUND_PORT);
	return f == stdout ? 0 : 2;
}

/* `tidepool playground`: serve() with the page, from its own options. */
static int playground(int argc, char **argv)
{
	static const struct option opts[] = { { "port", required_argument, NULL, 'p' },
					      { "listen", required_argument, NULL, 'l' },
					      { "tokens", required_argument, NULL, 't' },
					      { "policy-dir", required_argument, NULL, 'd' },
					      { "help", no_argument, NULL, 'h' },
					      { NULL, 0, NULL, 0 } };
	const char *listen = NULL, *tokens = NULL, *dir = NULL;
	long port = -1;
	char spec[160];
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'p' && (port = count_arg("--port", optarg, 0, 65535)) < 0)
			return 2;
		else if (c == 'l')
			listen = optarg;
		else if (c == 't')
			tokens = optarg;
		else if (c == 'd')
			dir = optarg;
		else if (c != 'p')
			return playground_usage(c == 'h' ? stdout : stderr);
	}
	if (optind < argc) {
		fprintf(stderr, "tidepool: playground: unexpected '%s'\n", argv[optind]);
		return playground_usage(stderr);
	}
	if (listen != NULL && (port >= 0 || strncmp(listen, "http://", 7) != 0)) {
		fprintf(stderr, "tidepool: playground: --listen takes http://ADDR:PORT, and not "
				"with --port\n");
		return 2;
	}
	if (listen == NULL)
		snprintf(spec, sizeof spec, "http://127.0.0.1:%ld",
			 port >= 0 ? port : PLAYGROUND_PORT);
	else
		snprintf(spec, sizeof spec, "%s", listen);
	char *av[] = { argv[0], "--listen", spec, NULL, NULL, NULL, NULL, NULL };
	int ac = 3;
	if (dir != NULL) {
		av[ac++] = "--policy-dir";
		av[ac++] = (char *)dir;
	}
	if (tokens != NULL) {
		av[ac++] = "--tokens";
		av[ac++] = (char *)tokens;
	}
	return serve(ac, av, 1);
}

/* 0, 1 and 2 are the client's and the log's: a descriptor opened later (the
 * audit log, a socket) must never land on one of them, where replies would be
 * written into it. One that is closed becomes /dev/null. */
static void std_fds_open(void)
{
	for (int fd = 0; fd < 3; fd++) {
		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		int n = open("/dev/null", O_RDWR | O_NOCTTY);
		if (n >= 0 && n != fd) {
			dup2(n, fd);
			close(n);
		}
	}
}

/* `tidepool token new`: a bearer token (256 random bits, hex, prefixed tp_)
 * and its SHA-256 digest, the only form --tokens keeps. `token hash` reads a
 * token on stdin and prints its digest. */
static int token(int argc, char **argv)
{
	char tok[3 + 64 + 1], hex[65], line[600];
	unsigned char raw[32];
	if (argc == 2 && strcmp(argv[1], "new") == 0) {
		if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) {
			fprintf(stderr, "tidepool: getrandom: %s\n", strerror(errno));
			return 1;
		}
		memcpy(tok, "tp_", 3);
		for (size_t i = 0; i < sizeof raw; i++)
			snprintf(tok + 3 + 2 * i, 3, "%02x", raw[i]);
		tp_sha256_hex(tok, strlen(tok), hex);
		printf("token:  %s\nsha256: %s\n", tok, hex);
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "hash") == 0) {
		size_t n = fgets(line, sizeof line, stdin) ? strcspn(line, "\r\n") : 0;
		if (n == 0 || n > 512) {
			fprintf(stderr, "tidepool: token hash: give one token (1 to 512 bytes) on "
					"stdin\n");
			return 2;
		}
		tp_sha256_hex(line, n, hex);
		printf("%s\n", hex);
		return 0;
	}
	fprintf(stderr, "usage: tidepool token new | tidepool token hash < TOKEN\n");
	return 2;
}

int main(int argc, char **argv)
{
	tp_lang_register(&tp_lang_lua);
	tp_lang_register(&tp_lang_python);
	if (argc >= 3 && strcmp(argv[1], "--zygote") == 0)
		return tp_zygote_main(argv[2], argc >= 4 ? argv[3] : NULL);
	std_fds_open();
	tp_failalloc_arm(); /* test builds only; before the host allocates anything */
	if (argc >= 2 && strcmp(argv[1], "run") == 0)
		return tp_cli_run(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "policy") == 0)
		return tp_cli_policy(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "token") == 0)
		return token(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "playground") == 0)
		return playground(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "doctor") == 0) {
		if (argc > 2)
			return usage(stderr);
		tp_doctor_print(stdout);
		return 0;
	}
	if (argc >= 2 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0)) {
		printf("tidepool %s\n", TP_VERSION);
		return 0;
	}
	return serve(argc, argv, 0);
}
