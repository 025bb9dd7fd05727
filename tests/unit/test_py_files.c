/*
 * test_py_files.c — the Python layer under a policy that grants files: open,
 * the os facade (listdir, path) and pathlib check every path lexically against
 * the grants (reads: read and write grants; writes: write grants), and refuse
 * the rest as policy violations that name the call. No lockdown here (the
 * kernel's Landlock is the wall in a real worker): what this proves is the
 * shim's own check.
 */
#include "pysandbox.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
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

static char dir[64], ro[96], rw[96], outside[96], code[1024], want[1024];

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (f != NULL) {
		fputs(text, f);
		fclose(f);
	}
}

/* A policy extending standard with a read grant (ro), a write grant (rw), and
 * standard's builtins but sorted and getattr. */
static int set_policy(void)
{
	char path[128], text[2048];
	struct tp_err err = { 0 };
	struct tp_policy_set *set = tp_policy_set_new(&err);
	const struct tp_policy *p;
	struct tp_policy *copy;
	char *wire;
	size_t len;

	snprintf(path, sizeof path, "%s/files-test.json", dir);
	snprintf(text, sizeof text,
		 "{\"name\": \"files-test\", \"extends\": \"standard\", \"filesystem\": "
		 "{\"read\": [\"%s\"], \"write\": [\"%s\"], \"file_bytes\": 65536}, "
		 "\"python\": {\"builtins\": [\"abs\", \"all\", \"any\", \"bool\", \"bytes\", "
		 "\"dict\", \"enumerate\", \"int\", \"isinstance\", \"len\", \"list\", \"print\", "
		 "\"range\", \"repr\", \"set\", \"str\", \"tuple\", \"type\", \"zip\"]}}",
		 ro, rw);
	put(path, text);
	p = set ? tp_policy_set_load_file(set, path, &err) : NULL;
	wire = p ? tp_policy_wire(p, &len) : NULL;
	copy = wire ? tp_policy_from_wire(wire, len, &err) : NULL;
	free(wire);
	tp_policy_set_free(set);
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

static void test_open(void)
{
	snprintf(code, sizeof code, "open('%s/a.txt').read()", ro);
	run(code);
	CHECK_EQ_STR(json_string_value(value()), "alpha\n");
	snprintf(code, sizeof code, "with open('%s/a.txt', 'rb') as f:\n    x = f.read()\nx", ro);
	run(code);
	CHECK_EQ_STR(json_string_value(value()), "b'alpha\\n'");
	snprintf(code, sizeof code, "open('%s').read()", outside);
	snprintf(want, sizeof want,
		 "open('%s') is refused: outside the policy's file grants (policy files-test)",
		 outside);
	refused(code, want);
	/* Lexically normalized: .. cannot climb out of a grant. */
	snprintf(code, sizeof code, "open('%s/../outside.txt').read()", ro);
	snprintf(want, sizeof want,
		 "open('%s/../outside.txt') is refused: outside the policy's file grants "
		 "(policy files-test)",
		 ro);
	refused(code, want);
	refused("open('/etc/passwd').read()", "open('/etc/passwd') is refused: outside the "
					      "policy's file grants (policy files-test)");
	refused("open('a.txt')", "open('a.txt') is refused: a path must be absolute (policy "
				 "files-test)");
	/* A read grant is not a write grant. */
	snprintf(code, sizeof code, "open('%s/new.txt', 'w')", ro);
	snprintf(want, sizeof want,
		 "open('%s/new.txt', 'w') is refused: outside the policy's write grants "
		 "(policy files-test)",
		 ro);
	refused(code, want);
	snprintf(code, sizeof code, "open('%s/a.txt', 'r+')", ro);
	snprintf(want, sizeof want,
		 "open('%s/a.txt', 'r+') is refused: outside the policy's write grants "
		 "(policy files-test)",
		 ro);
	refused(code, want);
	snprintf(code, sizeof code,
		 "with open('%s/out.txt', 'w') as f:\n    f.write('hi')\nopen('%s/out.txt').read()",
		 rw, rw);
	run(code);
	CHECK_EQ_STR(json_string_value(value()), "hi");
	/* The file object's own classes open nothing: the audit hook still stops them. */
	snprintf(code, sizeof code, "f = open('%s/a.txt', 'rb')\ntype(f.raw)('%s')", ro, outside);
	run(code);
	CHECK(R.reply == NULL);
	CHECK_EQ_INT(R.exit_code, TP_EXIT_LIMIT); /* the audit tripwire ended the worker */
	CHECK(shm->tripped == TP_KIND_POLICY_VIOLATION);
	CHECK_EQ_STR(shm->note, "audit event 'open' is not allowed");
	/* A str subclass cannot lie about its characters to the check. */
	snprintf(code, sizeof code,
		 "class S(str):\n    def startswith(self, *a):\n        return True\n"
		 "    def split(self, *a):\n        return ['', '%s', 'a.txt']\n"
		 "open(S('/etc/passwd')).read()",
		 ro + 1);
	refused(code, "open('/etc/passwd') is refused: outside the policy's file grants (policy "
		      "files-test)");
	run("open(3)");
	CHECK_EQ_STR(err_s("type"), "TypeError");
	CHECK_EQ_STR(err_s("message"), "open: a path must be a str or a pathlib.Path, not int");
	run("open = 1\nopen + 1"); /* the snippet's own name */
	CHECK_EQ_INT(json_integer_value(value()), 2);
	refused("eval('1')",
		"eval is not available in the sandbox (policy files-test: no dynamic code)");
}

/* Builtins the policy left out name the policy; the rest of the catalog stays. */
static void test_builtins(void)
{
	refused("sorted([2, 1])", "sorted is not available in the sandbox (policy files-test)");
	refused("getattr(1, 'real')",
		"getattr is not available in the sandbox (policy files-test)");
	run("sorted = lambda x: list(x)\nsorted((1, 2))");
	CHECK_EQ_STR(value_text(), "[1,2]");
	run("[len('ab'), isinstance(ValueError(), Exception), True, None]");
	CHECK_EQ_STR(value_text(), "[2,true,true,null]");
}

static void test_os_pathlib(void)
{
	snprintf(code, sizeof code, "import os\nset(os.listdir('%s')) == {'a.txt', 'b.log'}", ro);
	run(code);
	CHECK_EQ_STR(value_text(), "true");
	refused("import os\nos.listdir('/')",
		"os.listdir('/') is refused: outside the policy's file grants (policy files-test)");
	snprintf(code, sizeof code,
		 "import os.path\n[os.path.exists('%s/a.txt'), os.path.isdir('%s'), "
		 "os.path.isfile('%s/none'), os.path.join('a', 'b'), os.path.basename('/x/y')]",
		 ro, rw, rw);
	run(code);
	CHECK_EQ_STR(value_text(), "[true,true,false,\"a/b\",\"y\"]");
	refused("import os\nos.path.exists('/etc/passwd')",
		"os.path.exists('/etc/passwd') is refused: outside the policy's file grants "
		"(policy files-test)");
	run("import os\nos.system");
	CHECK_EQ_STR(err_s("type"), "AttributeError"); /* listdir and path only */
	snprintf(
	    code, sizeof code,
	    "from pathlib import Path\np = Path('%s') / 'c.txt'\np.write_text('gamma')\n"
	    "q = Path('%s', 'a.txt')\n[p.read_text(), q.read_bytes(), q.name, q.suffix, "
	    "q.stem, q.parent == Path('%s'), q.exists(), q.is_file(), Path('%s').is_dir(), "
	    "set(x.name for x in Path('%s').iterdir()) == {'a.txt', 'b.log'}, [x.name for x in "
	    "Path('%s').glob('*.txt')]]",
	    rw, ro, ro, ro, ro, ro);
	run(code);
	CHECK_EQ_STR(json_string_value(value()),
		     "['gamma', b'alpha\\n', 'a.txt', '.txt', 'a', True, True, True, True, "
		     "True, ['a.txt']]");
	snprintf(
	    code, sizeof code,
	    "from pathlib import Path\np = Path('%s/a.txt')\np._p = '/etc/passwd'\np.read_text()",
	    ro);
	refused(code, "Path('/etc/passwd').read_text() is refused: outside the policy's file "
		      "grants (policy files-test)");
	refused("from pathlib import Path\nPath('/etc/passwd').read_text()",
		"Path('/etc/passwd').read_text() is refused: outside the policy's file grants "
		"(policy files-test)");
	snprintf(code, sizeof code, "import pathlib\npathlib.Path('%s/x').write_bytes(b'x')", ro);
	snprintf(want, sizeof want,
		 "Path('%s/x').write_bytes() is refused: outside the policy's write grants "
		 "(policy files-test)",
		 ro);
	refused(code, want);
	run("import gc");
	CHECK_EQ_STR(err_s("kind"), "policy_violation");
}

int main(void)
{
	char path[128];

	snprintf(dir, sizeof dir, "/tmp/tp-files-XXXXXX");
	if (mkdtemp(dir) == NULL)
		return 1;
	snprintf(ro, sizeof ro, "%s/ro", dir);
	snprintf(rw, sizeof rw, "%s/rw", dir);
	snprintf(outside, sizeof outside, "%s/outside.txt", dir);
	mkdir(ro, 0755);
	mkdir(rw, 0755);
	snprintf(path, sizeof path, "%s/a.txt", ro);
	put(path, "alpha\n");
	snprintf(path, sizeof path, "%s/b.log", ro);
	put(path, "beta\n");
	put(outside, "secret\n");
	if (set_policy() != 0 || harness_setup(&tp_lang_python) != 0)
		return 1;
	test_open();
	test_builtins();
	test_os_pathlib();
	json_decref(R.reply);
	snprintf(path, sizeof path, "rm -rf '%s'", dir);
	if (system(path) != 0)
		fprintf(stderr, "# could not remove %s\n", dir);
	return tp_test_done("test_py_files");
}
