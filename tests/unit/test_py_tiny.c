/*
 * test_py_tiny.c — the Python layer under a policy that offers almost nothing
 * (one module, one builtin): the zygote still builds, what is left out names
 * the policy, and the class machinery, exceptions and constants stay.
 */
#include "pysandbox.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lang_harness.h"

#ifdef TP_SANITIZE
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	/* and hashlib's OpenSSL state, its module's for the same life */
	return "leak:libpython3.11.so\nleak:libcrypto.so\n";
}
#endif

static int set_policy(void)
{
	char dir[] = "/tmp/tp-tiny-XXXXXX", path[64];
	struct tp_err err = { 0 };
	struct tp_policy_set *set = tp_policy_set_new(&err);
	const struct tp_policy *p;
	struct tp_policy *copy = NULL;
	FILE *f;
	char *wire;
	size_t len;

	if (mkdtemp(dir) == NULL || set == NULL)
		return -1;
	snprintf(path, sizeof path, "%s/tiny.json", dir);
	f = fopen(path, "w");
	if (f == NULL)
		return -1;
	fputs("{\"name\": \"tiny\", \"extends\": \"standard\", \"python\": "
	      "{\"modules\": [\"math\"], \"builtins\": [\"len\"]}, "
	      "\"session\": {\"workspace_bytes\": 0}}",
	      f);
	fclose(f);
	p = tp_policy_set_load_file(set, path, &err);
	wire = p ? tp_policy_wire(p, &len) : NULL;
	copy = wire ? tp_policy_from_wire(wire, len, &err) : NULL;
	free(wire);
	tp_policy_set_free(set);
	unlink(path);
	rmdir(dir);
	if (copy == NULL) {
		fprintf(stderr, "policy: %s\n", err.msg);
		return -1;
	}
	tp_sandbox_set_policy(copy);
	return 0;
}

static void refused(const char *src, const char *message)
{
	run(src);
	CHECK_EQ_STR(err_s("kind"), "policy_violation");
	CHECK_EQ_STR(err_s("message"), message);
}

int main(void)
{
	if (set_policy() != 0 || harness_setup(&tp_lang_python) != 0)
		return 1;
	run("import math\nclass A:\n    x = 2\ntry:\n    raise ValueError('v')\nexcept "
	    "ValueError:\n"
	    "    pass\n[len('ab'), math.floor(A.x * 1.5), True, None, 'x'.upper()]");
	CHECK_EQ_STR(value_text(), "[2,3,true,null,\"X\"]");
	refused("print(1)", "print is not available in the sandbox (policy tiny)");
	refused("sorted([1])", "sorted is not available in the sandbox (policy tiny)");
	refused("open('/x')", "open is not available in the sandbox (policy tiny: no files)");
	refused("import json",
		"import of module 'json' is not allowed in the sandbox (policy tiny); "
		"allowed: math");
	refused("import os", "import of module 'os' is not allowed in the sandbox (policy tiny: no "
			     "processes or files); allowed: math");
	json_decref(R.reply);
	return tp_test_done("test_py_tiny");
}
