/*
 * main.c — command-line entry: serve JSON-RPC (default), `run FILE`, or the
 * internal `--zygote LANG` the host execs. Thin: everything else is testable.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "failalloc.h"
#include "host.h"
#include "langs.h"
#include "mcp.h"
#include "zygote.h"

#define MAX_FILE (8u << 20)

static int usage(FILE *f)
{
	char names[256];
	fprintf(f,
		"usage: tidepool                          serve JSON-RPC (MCP) on stdin/stdout\n"
		"       tidepool run [--lang LANG] FILE|-  run one file and print its verdict\n"
		"       tidepool --version\n"
		"LANG is %s; without --lang, FILE's name picks it:",
		tp_langs_names(names, sizeof names, "%s", ", ", " or "));
	for (int i = 0; i < TP_NLANGS; i++)
		for (int j = 0; j < TP_LANG_MAX_EXTS && tp_langs[i].exts[j] != NULL; j++)
			fprintf(f, "%s *%s is %s", i + j ? "," : "", tp_langs[i].exts[j],
				tp_langs[i].name);
	fputc('\n', f);
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
		errno = bad && n > MAX_FILE ? EFBIG : EIO;
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

static void print_verdict(const json_t *res)
{
	const json_t *err = json_object_get(res, "error");
	fputs(json_string_value(json_object_get(res, "stdout")), stdout);
	fputs(json_string_value(json_object_get(res, "stderr")), stderr);
	if (json_is_object(err)) {
		const char *tb = json_string_value(json_object_get(err, "traceback"));
		fprintf(stderr, "error: %s (%s layer): %s\n",
			json_string_value(json_object_get(err, "kind")),
			json_string_value(json_object_get(err, "layer")),
			json_string_value(json_object_get(err, "message")));
		if (tb != NULL)
			fprintf(stderr, "%s\n", tb);
	} else {
		char *v = json_dumps(json_object_get(res, "value"), JSON_ENCODE_ANY | JSON_COMPACT);
		fprintf(stderr, "value: %s\n", v ? v : "?");
		free(v);
	}
	char *u = json_dumps(json_object_get(res, "usage"), JSON_COMPACT);
	fprintf(stderr, "usage: %s\n", u ? u : "?");
	free(u);
}

/* --lang NAME, else the file's name; NULL after a usage message. */
static const struct tp_lang_info *run_lang(const char *name, const char *path)
{
	const struct tp_lang_info *lang = name ? tp_langs_by_name(name) : tp_langs_by_path(path);
	if (lang == NULL && name != NULL)
		fprintf(stderr, "tidepool run: unknown language '%s'\n", name);
	else if (lang == NULL)
		fprintf(stderr,
			"tidepool run: %s: cannot tell the language from the name: "
			"pass --lang\n",
			path);
	if (lang == NULL)
		usage(stderr);
	return lang;
}

static int run_file(int argc, char **argv)
{
	const char *name = NULL, *path = NULL;
	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--lang") == 0 && i + 1 < argc)
			name = argv[++i];
		else if (path == NULL)
			path = argv[i];
		else
			return usage(stderr);
	}
	if (path == NULL)
		return usage(stderr);
	const struct tp_lang_info *lang = run_lang(name, path);
	if (lang == NULL)
		return 2;
	size_t len;
	char *code = slurp(path, &len);
	if (code == NULL) {
		fprintf(stderr, "tidepool run: %s: %s\n", path, strerror(errno));
		return 2;
	}
	json_t *reply = NULL;
	json_t *req =
	    json_pack("{s:s, s:i, s:s, s:{s:s, s:s%}}", "jsonrpc", "2.0", "id", 1, "method",
		      "sandbox/exec", "params", "lang", lang->name, "code", code, len);
	free(code);
	struct tp_err err = { 0 };
	struct tp_host_cfg cfg;
	tp_host_default_cfg(&cfg);
	cfg.use_stdin = 0;
	cfg.emit = keep_reply;
	cfg.emit_ctx = &reply;
	struct tp_host *h = tp_host_new(&cfg, &err);
	char *line = req ? json_dumps(req, JSON_COMPACT) : NULL;
	json_decref(req);
	if (h == NULL || line == NULL) {
		fprintf(stderr, "tidepool run: %s\n", h ? "out of memory" : err.msg);
		return 2;
	}
	tp_host_line(h, line, strlen(line));
	free(line);
	tp_host_run(h);
	tp_host_free(h);
	json_t *res = json_object_get(reply, "result");
	if (!json_is_object(res)) {
		const char *m =
		    json_string_value(json_object_get(json_object_get(reply, "error"), "message"));
		fprintf(stderr, "tidepool run: %s\n", m ? m : "no result");
		json_decref(reply);
		return 2;
	}
	print_verdict(res);
	int ok = json_is_true(json_object_get(res, "ok"));
	json_decref(reply);
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	struct tp_err err = { 0 };
	if (argc >= 3 && strcmp(argv[1], "--zygote") == 0)
		return tp_zygote_main(argv[2]);
	tp_failalloc_arm(); /* test builds only; before the host allocates anything */
	if (argc >= 2 && strcmp(argv[1], "run") == 0)
		return run_file(argc - 2, argv + 2);
	if (argc >= 2 && strcmp(argv[1], "--version") == 0) {
		printf("tidepool %s\n", TP_VERSION);
		return 0;
	}
	if (argc >= 2)
		return usage(strcmp(argv[1], "--help") == 0 ? stdout : stderr);
	struct tp_host_cfg cfg;
	tp_host_default_cfg(&cfg);
	struct tp_host *h = tp_host_new(&cfg, &err);
	if (h == NULL) {
		fprintf(stderr, "tidepool: %s\n", err.msg);
		return 1;
	}
	int rc = tp_host_run(h);
	tp_host_free(h);
	return rc;
}
