/*
 * jsonio.h — jansson's load and dump, refused whole when memory runs out.
 *
 * Why: jansson 2.14 keeps going after some failed allocations. Its lexer drops
 * the byte it could not save (lex_save ignores strbuffer_append_byte's result),
 * so "return 10" can parse as "return 1" — and when the dropped byte is a
 * string's closing quote, lex_scan_string decodes past the end of its buffers
 * (heap overflow, a crash in the host), while a dropped digit or terminator
 * trips one of jansson's assert()s (abort). Its dumper drops an object key it
 * could not write (do_dump ignores dump_string's result), so the output is not
 * JSON, or names another key. docs/robustness.md §6 tells the whole story.
 *
 * What: the first call installs allocation hooks over the allocator jansson had
 * (json_get_alloc_funcs: malloc/free, or a test's). Inside tp_json_loadb,
 * tp_json_dumps and tp_json_size, once one allocation has failed every later one
 * fails too (jansson checks them and unwinds), and the result is refused. The
 * one allocation jansson does not check — its lexer's buffer growing — is then
 * served from a reserve instead, so a load never drops a byte.
 *
 * Usage:
 *   1. Call tp_json_loadb / tp_json_dumps / tp_json_size instead of json_loadb,
 *      json_dumps and json_dumpb(NULL, 0) wherever the text crosses a trust
 *      boundary (client lines, worker frames, replies).
 *   2. Optionally tp_json_reserve(longest text) at startup, so that no load has
 *      to map its reserve later, when memory may be short.
 * Not thread-safe (one allocator state per process); the fork of a process that
 * used it inherits a consistent copy.
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
 * (tp_err_is_oom(), also when the reserve for a text of len bytes cannot be
 * mapped) or the text being bad: TP_KIND_INPUT_ERROR, jansson's
 * "<reason> at column <N>". */
json_t *tp_json_loadb(const char *buf, size_t len, size_t flags, struct tp_err *err);
/* Like json_dumps: NULL on failure, never a partial document. Every real is
 * then written with its shortest digits (common/jsonreal.h). */
char *tp_json_dumps(const json_t *json, size_t flags);
/* A node written as given bytes instead of being dumped (tp_json_dumps_splice).
 * string 0: the node is an array or object and raw[0 .. n) its JSON text as
 * tp_json_dumps would write it (valid JSON, reals tidied, no line breaks): the
 * caller's guarantee. string 1: the node is a string whose content is raw[0 ..
 * n), JSON text itself (so no control character), and it is written quoted
 * with only '"' and '\\' escaped, as jansson would; checked: a node whose
 * content differs, or holds a control character, is dumped. string 2: the
 * node is a stand-in string (its content is not looked at) for raw[0 .. n),
 * written quoted as for 1 (with a control character: as jansson dumps raw).
 * A stand-in is written as its bytes only where it is found (depth): the
 * caller puts it where it registers it. */
struct tp_json_raw {
	const json_t *node;
	const char *raw;
	size_t n;
	int string;
};
#define TP_JSON_RAW_MAX 4

/* tp_json_dumps(json, flags), except that each node of r (at most
 * TP_JSON_RAW_MAX), where it is a member of json's objects or arrays at most
 * depth levels down, is written as its bytes. Without nodes, or when none is
 * found, it is tp_json_dumps. A node's own subtree is never walked. */
char *tp_json_dumps_splice(const json_t *json, size_t flags, const struct tp_json_raw *r, size_t nr,
			   int depth);
/* The same without that pass (reals as jansson's "%.17g"): for what crosses a
 * worker's channel, which the other side decodes and only measures, never for
 * text a client or a log reads. */
char *tp_json_dumps_frame(const json_t *json, size_t flags);
/* Bytes json_dumps would write, or (size_t)-1 when that cannot be known. */
size_t tp_json_size(const json_t *json, size_t flags);

/* Maps the reserve a load of up to max_len bytes may need: 4 × the largest power
 * of two ≤ max_len (32 MiB for the host's 8 MiB lines), address space only; its
 * pages are touched only when a load runs out of memory and released after it.
 * 0, or -1 if the mapping failed (loads retry on demand). */
int tp_json_reserve(size_t max_len);
/* 1 when the lexer's buffer growth was recognized (the self-check at the first
 * call, see jsonio.c), i.e. the reserve is in use; 0 with an unknown jansson
 * build: loads are then still refused whole and never overrun (every allocation
 * after a failure fails), but a dropped byte can trip an assert in jansson. */
int tp_json_lexer_guarded(void);

#endif
