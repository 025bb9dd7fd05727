/*
 * policy.h — what one policy allows, read from a JSON file (policies/README.md
 * has the format), checked key by key, resolved through "extends", and carried
 * to the zygotes that enforce it.
 *
 * Usage:
 *   1. tp_policy_set_new() holds the built-in presets (the JSON files in policies/, compiled
 *      in); tp_policy_set_load_file()/tp_policy_set_load_dir() add the
 *      operator's. Each is validated and resolved whole before it is added: a
 *      failure leaves the set as it was and err's message says
 *      "FILE:LINE:COL: KEY: what is wrong".
 *   2. tp_policy_set_find() by name; the set owns its policies.
 *   3. The host hands a zygote the policy as tp_policy_wire() text (everything
 *      but redact, which never leaves the host); the zygote reads it back with
 *      tp_policy_from_wire().
 *   4. tp_policy_to_json() is the effective policy, for `policy show`/`check`
 *      and sandbox/policy/get.
 * Errors: err holds the first one found. A validation goes on past an error
 * where it safely can (the bad key or element is skipped), so a file has all its
 * errors found at once: a set given a report (tp_policy_set_report()) keeps every
 * message of every load in it, each file's in the order of its text, for
 * `policy check` and the server's start.
 * A request never changes a policy: it may only lower limits (limits.h).
 */
#ifndef TP_POLICY_H
#define TP_POLICY_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "langs.h"
#include "limit.h"

#define TP_POLICY_NAME_MAX 32
#define TP_POLICY_MAX_ITEMS 256 /* entries in any one list */
#define TP_POLICY_MAX_PATH 1024
#define TP_POLICY_MAX_DEPTH 8 /* "extends" chain */
#define TP_POLICY_MAX 64      /* policies in one set */

/* A list of strings, owned. */
struct tp_strv {
	char **v;
	size_t n;
};

void tp_strv_free(struct tp_strv *v);

struct tp_policy_session {
	uint64_t max_sessions;    /* live sessions at once */
	uint64_t idle_ms;         /* a session idle this long is ended */
	uint64_t max_execs;       /* execs in one session */
	uint64_t memory_bytes;    /* a session's state */
	uint64_t lifetime_ms;     /* a session older than this is ended (after its running exec) */
	uint64_t workspace_bytes; /* 0: no workspace; else a session's private directory, and the
				   * most one file in it may hold */
};

struct tp_policy_rate {
	uint64_t per_minute; /* execs under this policy per minute, host-wide; 0 = no limit */
	uint64_t session_per_minute; /* per session; 0 = no limit */
};

struct tp_policy {
	char *name;
	char *description;
	char *extends;                /* as written; NULL for none */
	char *source;                 /* "built-in" or the file's path */
	unsigned languages;           /* bit (1u << enum tp_lang_id) per language allowed */
	struct tp_limits limits;      /* the ceiling a request may only lower */
	int language_layer;           /* 0: the language layer refuses nothing (kernel-only) */
	struct tp_strv lua_libraries; /* whole libraries: every function tidepool offers in them */
	struct tp_strv lua_functions; /* single functions, "lib.fn" or a base function */
	struct tp_strv py_modules;
	struct tp_strv py_builtins;
	struct tp_strv fs_read;  /* absolute, normalized directories or files */
	struct tp_strv fs_write; /* read-write beneath these */
	uint64_t file_bytes;     /* largest file a write grant may make (RLIMIT_FSIZE) */
	struct tp_strv tools;
	struct tp_policy_session session;
	char *isolation; /* "process" */
	struct tp_policy_rate rate;
	struct tp_strv redact_strings;  /* removed wherever they appear in what leaves */
	struct tp_strv redact_patterns; /* POSIX extended regular expressions */
	struct tp_strv redact_env; /* the host's environment variables whose values are removed */
};

/* ---- the schema: one row per key -------------------------------------------
 * tp_policy_keys[] (policy.c) is the policy format: parsing, "extends" merging,
 * the defaults of a policy without "extends", tp_policy_to_json() (and so
 * `policy show --json` and the wire) and the key tables of policies/README.md
 * (tests/unit/test_policy.c checks them) all walk it. A row is a top-level key
 * (section NULL) or a key of the object section; the rows of one section are
 * contiguous, and their order is the order of the keys everywhere. Adding a key
 * is one row (and its field in struct tp_policy). */
enum tp_policy_type {
	TP_PT_U64,   /* uint64_t, lo .. hi */
	TP_PT_BOOL,  /* int, 0 or 1 */
	TP_PT_STR,   /* char *, at most hi bytes */
	TP_PT_STRV,  /* struct tp_strv, each element checked */
	TP_PT_LANGS, /* unsigned, a bit per enum tp_lang_id; at least one */
};

/* What an element or a string must be: policy.c's checker of each. */
enum tp_policy_check {
	TP_PC_NONE,
	TP_PC_NAME,      /* a policy's name */
	TP_PC_ISOLATION, /* "process" or "state" */
	TP_PC_CATALOG,   /* in the catalog arg */
	TP_PC_PATH,      /* a path a grant may name */
	TP_PC_TOOL,      /* a tool's name */
	TP_PC_SECRET,    /* a string to redact */
	TP_PC_PATTERN,   /* a regular expression to redact */
	TP_PC_ENV,       /* an environment variable's name */
};

#define TP_PK_ZERO_OK 1u   /* U64: 0 ("none", "off") is accepted too, below lo */
#define TP_PK_OWN 2u       /* never inherited through "extends" (name, extends) */
#define TP_PK_NO_JSON 4u   /* not in tp_policy_to_json() */
#define TP_PK_HOST 8u      /* only in tp_policy_to_json(p, 1): never leaves the host */
#define TP_PK_REQUIRED 16u /* a top-level key every file writes (name) */

struct tp_policy_key {
	const char *section; /* NULL: a top-level key */
	const char *key;
	enum tp_policy_type type;
	size_t off;       /* offsetof(struct tp_policy, the field) */
	uint64_t lo, hi;  /* U64: the range; STR: hi is the most bytes */
	uint64_t def;     /* U64, BOOL: a policy's value without "extends" */
	const char *sdef; /* STR: likewise (NULL: none) */
	unsigned flags;   /* TP_PK_* */
	enum tp_policy_check check;
	const void *arg; /* TP_PC_CATALOG: the catalog */
};

extern const struct tp_policy_key tp_policy_keys[];
extern const size_t tp_policy_nkeys;
/* The value of a U64 or BOOL row's field of p. */
uint64_t tp_policy_key_u64(const struct tp_policy *p, const struct tp_policy_key *k);

/* Operator ceilings: the most any policy may grant. */
#define TP_POLICY_MAX_MEMORY (4ull << 30)
#define TP_POLICY_MAX_CPU_MS 600000ull
#define TP_POLICY_MAX_WALL_MS 3600000ull
#define TP_POLICY_MAX_INSTRUCTIONS 1000000000000ull

/* The name a server's default policy has unless --policy names another. */
#define TP_POLICY_DEFAULT "standard"

/* The compiled-in presets' names (common/presets.c, from policies/NAME.json), in
 * their order: i from 0 until NULL. */
const char *tp_policy_preset(size_t i);

#define TP_POLICY_MAX_ERRORS 100 /* messages a report keeps; the rest are counted */

/* Every error of one or more loads, bounded: hostile input cannot make it grow. */
struct tp_policy_report {
	size_t n;    /* messages kept */
	size_t more; /* errors beyond TP_POLICY_MAX_ERRORS, counted only */
	struct tp_policy_error {
		int line, col;            /* 0 for an error of no place (an unreadable file) */
		char msg[TP_ERR_MSG_MAX]; /* as err's: "FILE:LINE:COL: KEY: what is wrong" */
	} e[TP_POLICY_MAX_ERRORS];
};

struct tp_policy_set;

struct tp_policy_set *tp_policy_set_new(struct tp_err *err);
void tp_policy_set_free(struct tp_policy_set *s);
/* Loads one file; its policy may extend any in the set or a file named
 * NAME.json beside it. Returns the policy added, or NULL (err says why). */
const struct tp_policy *tp_policy_set_load_file(struct tp_policy_set *s, const char *path,
						struct tp_err *err);
/* Every *.json file in dir, in name order; a bad one is reported and the next
 * loaded. 0, or -1 when any was bad (err: the first error). */
int tp_policy_set_load_dir(struct tp_policy_set *s, const char *dir, struct tp_err *err);
/* From now on (NULL: no longer) every load's messages go to r too; the caller
 * owns r and keeps it until it is detached or the set freed. */
void tp_policy_set_report(struct tp_policy_set *s, struct tp_policy_report *r);
/* Validates and resolves one file as tp_policy_set_load_file() does, and the
 * same checks of the host's environment, but leaves the set as it is: the file
 * is judged on its own merits, whatever the set holds under its name
 * (`policy check`). The caller frees the policy; NULL when it is bad. */
struct tp_policy *tp_policy_set_check_file(struct tp_policy_set *s, const char *path,
					   struct tp_err *err);
/* Validates and resolves text as one policy the way tp_policy_set_check_file()
 * does, for a caller of the server (sandbox/policy/check): its "extends" is a
 * policy of the set or a preset (no file is read), and it is judged on its own
 * text: filesystem grants are checked for form, not looked up, and redact.env's
 * variables are not looked for, so the answer tells nothing of the host. name is
 * what messages call the text, and the policy's source; every error goes to r
 * (may be NULL), not to the set's report. The set is left as it is; the caller
 * frees the policy; NULL when it is bad. */
struct tp_policy *tp_policy_set_check_text(const struct tp_policy_set *s, const char *text,
					   size_t len, const char *name, struct tp_policy_report *r,
					   struct tp_err *err);
const struct tp_policy *tp_policy_set_find(const struct tp_policy_set *s, const char *name);
size_t tp_policy_set_count(const struct tp_policy_set *s);
const struct tp_policy *tp_policy_set_at(const struct tp_policy_set *s, size_t i);
/* The index of p in the set (0 .. count-1): a key for per-policy state. */
size_t tp_policy_set_index(const struct tp_policy_set *s, const struct tp_policy *p);

/* Parses and validates text (a file's contents) as one policy, without extends
 * resolution; name is what messages call the file. NULL on error. */
struct tp_policy *tp_policy_parse(const char *text, size_t len, const char *name,
				  struct tp_err *err);
/* The same, with every error also in r (may be NULL). */
struct tp_policy *tp_policy_parse_report(const char *text, size_t len, const char *name,
					 struct tp_policy_report *r, struct tp_err *err);
/* Whether a and b are the same effective policy (their source aside). */
int tp_policy_equal(const struct tp_policy *a, const struct tp_policy *b);
/* Every redact.env variable of p set in this process's environment: 0, or -1
 * with err "policy 'NAME': redact.env[I]: VAR is not set, so its value could
 * not be redacted" for the first that is not. A file's load makes the same check
 * (its message placed at the element); the host makes it again at start. */
int tp_policy_check_env(const struct tp_policy *p, struct tp_err *err);
void tp_policy_free(struct tp_policy *p);

/* The effective policy as JSON (new reference); with_redact 0 leaves redact out. */
json_t *tp_policy_to_json(const struct tp_policy *p, int with_redact);
/* The zygote's copy: compact JSON without redact; malloc'd, NULL out of memory. */
char *tp_policy_wire(const struct tp_policy *p, size_t *len);
struct tp_policy *tp_policy_from_wire(const char *text, size_t len, struct tp_err *err);

int tp_policy_allows_lang(const struct tp_policy *p, enum tp_lang_id lang);
/* Is path (absolute, normalized) at or beneath an entry of v? */
int tp_policy_path_within(const struct tp_strv *v, const char *path);

#endif
