/*
 * jsonscan.h — a worker's JSON text read into a jansson tree in one pass, by a
 * strict parser of our own instead of jansson's lexer.
 *
 * Why: a reply's value is read by the host as hostile input. jansson's loader
 * reads it a byte at a time through a stream with a saved-text buffer, then
 * copies each string again: 40 % of the host's CPU for a returned value of 1,000
 * records (docs/performance.md, "The value path"). This parser walks the bytes
 * once and makes each node from them.
 *
 * What it accepts is exactly what tp_json_loadb accepts with JSON_DECODE_ANY |
 * JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, and the tree is the same (checked by
 * a differential unit test and by fuzz_jsonscan against tp_json_loadb):
 *   - RFC 8259 JSON; whitespace is space, tab, LF, CR; any value at the top,
 *     nothing but whitespace after it;
 *   - strings of valid UTF-8 (RFC 3629: no overlong form, no surrogate, nothing
 *     past U+10FFFF), no control character unescaped, the escapes \" \\ \/ \b
 *     \f \n \r \t and \uXXXX (a high surrogate only with a low one after it; no
 *     lone low one); U+0000 allowed, in keys too;
 *   - integers within 64 bits (jansson's json_int_t), else refused; reals that
 *     overflow a double refused, ones that underflow kept (as strtod gives them);
 *     no leading zero, no '.' without digits after it, no bare exponent;
 *   - no two keys of one object alike (byte for byte);
 *   - at most 2048 values deep (jansson's JSON_PARSER_MAX_DEPTH; the top value
 *     is at depth 1).
 *
 * Usage: tp_json_scan(s, n, max_depth, &out, &err) returns the tree or NULL
 * (err: out of memory, or TP_KIND_INPUT_ERROR "<what> at byte <N>"). On
 * success out.deep says whether containers nest more than max_depth levels (0:
 * not checked), as the decoder's depth rule counts them, and out.compact
 * whether the text has no whitespace outside its strings.
 */
#ifndef TP_JSONSCAN_H
#define TP_JSONSCAN_H

#include <jansson.h>
#include <stddef.h>

#include "err.h"

struct tp_json_scan_out {
	int deep;    /* containers nest deeper than max_depth */
	int compact; /* no whitespace outside strings */
	int tidy;    /* tp_json_check only (else 0): every real is as tp_json_tidy_reals
		      * leaves it, so the text needs no tidying */
};

json_t *tp_json_scan(const char *s, size_t n, size_t max_depth, struct tp_json_scan_out *out,
		     struct tp_err *err);

/* The same check without a tree: 1 when tp_json_scan would accept the text
 * (out set as it would set it), 0 when it would refuse it (err as it would
 * set it; a check allocates only for a number of over 63 bytes), and -1 when a
 * check cannot tell without a tree: an object of more than 12 keys, or a key
 * with an escape (its keys are compared as slices of the text). The same
 * functions run in both modes (jsonscan.c), and the differential oracle holds
 * them to each other. For the host's value path: a value that will only be
 * copied into a reply needs no tree (docs/performance.md). */
int tp_json_check(const char *s, size_t n, size_t max_depth, struct tp_json_scan_out *out,
		  struct tp_err *err);

#endif
