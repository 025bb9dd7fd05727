/*
 * jsonio.h — jansson's load and dump, refused whole when memory runs out.
 *
 * Why: jansson 2.14 keeps going after some failed allocations and returns a
 * different document. Its lexer drops the byte it could not save (lex_save
 * ignores strbuffer_append_byte's result), so "return 10" can parse as
 * "return 1"; its dumper drops an object key it could not write (do_dump
 * ignores dump_string's result), so the output is not JSON, or names another key.
 *
 * Usage:
 *   1. Call tp_json_loadb / tp_json_dumps / tp_json_size instead of json_loadb,
 *      json_dumps and json_dumpb(NULL, 0) wherever the text crosses a trust
 *      boundary (client lines, worker frames, replies).
 *   2. The first call installs a counting allocator (malloc/free, unchanged
 *      otherwise); an operation during which any allocation failed is refused.
 *   3. With JSON_ALLOW_NUL, tp_json_loadb also accepts U+0000 in object keys,
 *      which json_loadb refuses under any flag ("NUL byte in object key not
 *      supported"); read such keys with json_object_iter_key_len or the
 *      json_object_*n functions. json_dumps writes them as \u0000.
 */
#ifndef TP_JSONIO_H
#define TP_JSONIO_H

#include <jansson.h>
#include <stddef.h>

#include "err.h"

/* Like json_loadb. On failure records in err (at the host layer: what crosses a
 * trust boundary is the host's to refuse) either running out of memory
 * (tp_err_is_oom()) or the text being bad: TP_KIND_INPUT_ERROR, jansson's
 * "<reason> at column <N>". */
json_t *tp_json_loadb(const char *buf, size_t len, size_t flags, struct tp_err *err);
/* Like json_dumps: NULL on failure, never a partial document. */
char *tp_json_dumps(const json_t *json, size_t flags);
/* Bytes json_dumps would write, or (size_t)-1 when that cannot be known. */
size_t tp_json_size(const json_t *json, size_t flags);

#endif
