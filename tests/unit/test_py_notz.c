/*
 * test_py_notz.c — zoneinfo (standard policy) on a machine without time zone data:
 * the zygote reads its zones from TZPATH (here PYTHONTZPATH, an empty directory),
 * finds none, and every key is CPython's ZoneInfoNotFoundError saying why; nothing
 * crashes, and the key checks (no traversal) are CPython's still.
 */
#include "pysandbox.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int main(void)
{
	char dir[] = "/tmp/tp-notz-XXXXXX";

	if (mkdtemp(dir) == NULL || setenv("PYTHONTZPATH", dir, 1) != 0 ||
	    harness_setup(&tp_lang_python) != 0)
		return 1;
	rmdir(dir);
	run("import zoneinfo\nzoneinfo.ZoneInfo('Europe/Paris')");
	CHECK_EQ_STR(err_s("kind"), "runtime_error");
	CHECK_EQ_STR(err_s("type"), "ZoneInfoNotFoundError");
	CHECK_EQ_STR(
	    err_s("message"),
	    "'No time zone found with key Europe/Paris (the sandbox has no time zone data: "
	    "/usr/share/zoneinfo was empty or missing when it started; Debian package "
	    "tzdata)'");
	run("import zoneinfo\n[len(zoneinfo.available_timezones()), list(zoneinfo.TZPATH)]");
	CHECK_EQ_STR(value_text(), "[0,[]]");
	run("import zoneinfo\nzoneinfo.ZoneInfo('../../etc/passwd')");
	CHECK_EQ_STR(err_s("type"), "ValueError");
	CHECK_EQ_STR(err_s("message"),
		     "ZoneInfo keys must refer to subdirectories of TZPATH, got: ../../etc/passwd");
	/* A zone the snippet brings itself still loads. */
	run("import zoneinfo, io\nzoneinfo.ZoneInfo.from_file(io.BytesIO(b'TZif'), key='x')");
	CHECK_EQ_STR(err_s("type"), "ValueError");
	json_decref(R.reply);
	return tp_test_done("test_py_notz");
}
