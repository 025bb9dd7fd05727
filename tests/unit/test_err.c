/*
 * test_err.c — the error value (common/err.h): the first error recorded wins,
 * NULL is ignored, a failed call reads "call(object): reason. Hint: ...", the
 * names of kinds and layers round-trip, and the modules that report through it
 * say which kind and layer.
 */
#include <errno.h>
#include <string.h>

#include "err.h"
#include "jsonio.h"
#include "limit.h"
#include "msg.h"
#include "result.h"
#include "tap.h"

static void test_first_wins(void)
{
	struct tp_err e = { 0 };

	CHECK(!tp_err_failed(&e));
	CHECK_EQ_INT(tp_err_set(&e, TP_KIND_INPUT_ERROR, TP_LAYER_HOST, 0, "bad '%s' %d", "x", 7),
		     -1);
	CHECK(tp_err_failed(&e));
	CHECK_EQ_INT(e.kind, TP_KIND_INPUT_ERROR);
	CHECK_EQ_INT(e.layer, TP_LAYER_HOST);
	CHECK_EQ_STR(e.msg, "bad 'x' 7");
	/* A later error, from a caller or a cleanup path, changes nothing. */
	tp_err_oom(&e, TP_LAYER_KERNEL);
	tp_err_sys(&e, TP_LAYER_KERNEL, "close(fd)", EBADF, NULL);
	CHECK_EQ_INT(e.kind, TP_KIND_INPUT_ERROR);
	CHECK_EQ_INT(e.layer, TP_LAYER_HOST);
	CHECK_EQ_INT(e.sys_errno, 0);
	CHECK_EQ_STR(e.msg, "bad 'x' 7");
	CHECK(!tp_err_is_oom(&e));
	tp_err_clear(&e);
	CHECK(!tp_err_failed(&e));
	tp_err_set(&e, TP_KIND_NONE, TP_LAYER_HOST, 0, "none"); /* an error is never "none" */
	CHECK_EQ_INT(e.kind, TP_KIND_INTERNAL);
}

static void test_sys_and_oom(void)
{
	struct tp_err e = { 0 }, copy = { 0 };
	char want[TP_ERR_MSG_MAX];

	tp_err_sys(&e, TP_LAYER_KERNEL, "setgroups(0)", EPERM, "run as root");
	snprintf(want, sizeof want, "setgroups(0): %s. Hint: run as root", strerror(EPERM));
	CHECK_EQ_STR(e.msg, want);
	CHECK_EQ_INT(e.kind, TP_KIND_INTERNAL);
	CHECK_EQ_INT(e.layer, TP_LAYER_KERNEL);
	CHECK_EQ_INT(e.sys_errno, EPERM);
	tp_err_clear(&e);
	tp_err_sys(&e, TP_LAYER_HOST, "signalfd", EMFILE, NULL);
	snprintf(want, sizeof want, "signalfd: %s", strerror(EMFILE));
	CHECK_EQ_STR(e.msg, want);
	tp_err_clear(&e);
	tp_err_oom(&e, TP_LAYER_HOST);
	CHECK(tp_err_is_oom(&e));
	CHECK_EQ_STR(e.msg, "out of memory");
	tp_err_copy(&copy, &e);
	CHECK(tp_err_is_oom(&copy) && copy.layer == TP_LAYER_HOST);
	tp_err_clear(&e);
	tp_err_copy(&copy, &e); /* nothing recorded in e: copy keeps its error */
	CHECK(tp_err_is_oom(&copy));
	tp_err_copy(&e, NULL);
	CHECK(!tp_err_failed(&e));
}

static void test_null_and_long(void)
{
	struct tp_err e = { 0 };
	char big[3 * TP_ERR_MSG_MAX];

	/* NULL: the caller does not care; every helper ignores it. */
	CHECK_EQ_INT(tp_err_set(NULL, TP_KIND_INTERNAL, TP_LAYER_HOST, 0, "x"), -1);
	CHECK_EQ_INT(tp_err_sys(NULL, TP_LAYER_HOST, "x", EIO, NULL), -1);
	CHECK_EQ_INT(tp_err_oom(NULL, TP_LAYER_HOST), -1);
	tp_err_copy(NULL, &e);
	tp_err_clear(NULL);
	CHECK(!tp_err_failed(NULL) && !tp_err_is_oom(NULL));
	/* A long message is cut and stays terminated. */
	memset(big, 'a', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	tp_err_set(&e, TP_KIND_INTERNAL, TP_LAYER_HOST, 0, "%s", big);
	CHECK_EQ_INT(strlen(e.msg), TP_ERR_MSG_MAX - 1);
}

static void test_names(void)
{
	for (int k = 0; k < TP_KIND__COUNT; k++)
		CHECK_EQ_INT(tp_kind_from_name(tp_kind_name((enum tp_kind)k)), k);
	for (int l = 0; l < TP_LAYER__COUNT; l++)
		CHECK_EQ_INT(tp_layer_from_name(tp_layer_name((enum tp_layer)l)), l);
	CHECK_EQ_STR(tp_kind_name(TP_KIND_INTERNAL), "internal_error");
	CHECK_EQ_STR(tp_layer_name(TP_LAYER_KERNEL), "kernel");
	CHECK_EQ_INT(tp_kind_from_name("bogus"), -1);
	CHECK_EQ_INT(tp_layer_from_name(NULL), -1);
}

/* Refusals of a request are input errors at the host; a worker's bad reply and the
 * host's own failures are internal errors at the host, and reach the client so. */
static void test_sources(void)
{
	struct tp_err e = { 0 };
	struct tp_limits l;
	struct tp_reply r;

	CHECK(tp_json_loadb("[1,", 3, 0, &e) == NULL);
	CHECK(e.kind == TP_KIND_INPUT_ERROR && e.layer == TP_LAYER_HOST && !tp_err_is_oom(&e));
	CHECK(strstr(e.msg, " at column ") != NULL);
	tp_err_clear(&e);
	tp_limits_default(&l);
	json_t *req = json_pack("{s:i}", "cpu", 1);
	CHECK_EQ_INT(tp_limits_tighten(&l, req, &e), -1);
	json_decref(req);
	CHECK(e.kind == TP_KIND_INPUT_ERROR && e.layer == TP_LAYER_HOST);
	CHECK_EQ_STR(e.msg, "unknown limit 'cpu'");
	tp_err_clear(&e);
	CHECK_EQ_INT(tp_msg_reply_decode("", 0, &l, &r, &e), -1);
	/* the worker's doing (its process runs the snippet), never the host's failure */
	CHECK(e.kind == TP_KIND_CRASHED && e.layer == TP_LAYER_PROCESS);
	CHECK_EQ_STR(e.msg, "worker reply refused: not a reply of this version");

	/* The exec's verdict is the error as recorded. */
	struct tp_outcome o = { .limits = &l, .cpu_ms = -1, .host = &e };
	json_t *res = tp_result_build(&o);
	json_t *err = json_object_get(res, "error");
	CHECK_EQ_STR(json_string_value(json_object_get(err, "kind")), "crashed");
	CHECK_EQ_STR(json_string_value(json_object_get(err, "layer")), "process");
	CHECK_EQ_STR(json_string_value(json_object_get(err, "message")), e.msg);
	json_decref(res);
}

int main(void)
{
	test_first_wins();
	test_sys_and_oom();
	test_null_and_long();
	test_names();
	test_sources();
	return tp_test_done("test_err");
}
