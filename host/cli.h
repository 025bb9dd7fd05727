/*
 * cli.h — the commands for people (`run`, `policy`), and the policy flags every
 * command shares (`--policy NAME|FILE`, `--policy-dir DIR`).
 *
 * Usage: main() hands argv after the command word to tp_cli_run() or
 * tp_cli_policy(), which return the process's exit status: 0, 1 (the snippet
 * failed; `policy check`: valid but refused by this kernel), 2 (usage, or a bad
 * policy: one line per error, each naming FILE:LINE:COL and the key).
 */
#ifndef TP_CLI_H
#define TP_CLI_H

#include <stdio.h>

#include "policy.h"

struct tp_cli_policies {
	struct tp_policy_set *set;
	const struct tp_policy *deflt;
};

/* The presets, DIR's policies, and the default (a name, a FILE, or "standard";
 * a FILE DIR already holds is that policy). 0, or -1 after printing why on
 * stderr: every error of a bad file, one a line. */
int tp_cli_policies(struct tp_cli_policies *cp, const char *policy, const char *dir);
void tp_cli_policies_free(struct tp_cli_policies *cp);
/* Whether a --policy or `policy` argument names a file (a '/' or ".json"), not a policy. */
int tp_cli_is_file(const char *arg);
/* The presets' names for a help text, from the compiled-in catalog:
 * "standard (the default), strict, ... and data". Returns buf. */
const char *tp_cli_preset_names(char *buf, size_t len);
/* What each layer allows and refuses under p, for people. */
void tp_cli_explain(FILE *f, const struct tp_policy *p);

int tp_cli_run(int argc, char **argv);
int tp_cli_policy(int argc, char **argv);

#endif
