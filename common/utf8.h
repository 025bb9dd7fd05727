/*
 * utf8.h — UTF-8 validation and repair (RFC 3629), shared by every layer that
 * turns untrusted bytes into JSON text. Each byte that does not begin a valid
 * sequence (overlong forms, surrogates, past U+10FFFF, truncated) becomes U+FFFD.
 */
#ifndef TP_UTF8_H
#define TP_UTF8_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* Length of the valid sequence at s, or 0 when s[0] does not begin one. */
size_t tp_utf8_seq_len(const unsigned char *s, size_t n);
int tp_utf8_valid(const char *s, size_t n);
/* Writes the repaired bytes to out (room for 3 * n); returns their length. */
size_t tp_utf8_fix(const char *s, size_t n, char *out);
/* How many of s's n bytes can be repaired now, when more may follow: n, less
 * a trailing sequence that is incomplete (a valid lead byte and continuation
 * bytes, too few). Repairing s in pieces cut there gives what repairing it
 * whole gives: a stream's pieces never split a character. */
size_t tp_utf8_complete(const char *s, size_t n);
/* Bytes of the compact JSON text jansson writes for s (n bytes) once repaired,
 * quotes included: '"' and '\\' and \b \f \n \r \t take 2, other control
 * characters 6 (\u00XX), a byte that begins no valid sequence 3 (U+FFFD). */
uint64_t tp_utf8_json_bytes(const char *s, size_t n);
/* Code point c as UTF-8 in o (room for 4); a surrogate or a value past
 * U+10FFFF as U+FFFD. Returns the bytes written. */
size_t tp_utf8_put(char *o, uint32_t c);
/* Writes that text (tp_utf8_json_bytes(s, n) bytes, which out must have room
 * for) to out, byte for byte as jansson dumps the repaired string (\u00XX in
 * upper case hex); returns its length. */
size_t tp_utf8_json_put(const char *s, size_t n, char *out);
/* Bytes of json_dumpb(v, JSON_COMPACT | JSON_ENCODE_ANY) for a scalar v (a
 * string, a number, true, false, null), computed without dumping it. */
uint64_t tp_json_scalar_bytes(const json_t *v);
/* A JSON string of n bytes (NUL allowed), repaired; NULL when out of memory. */
json_t *tp_utf8_json(const char *s, size_t n);
/* s as a double-quoted literal for a message: '"' and '\\' escaped, \n \r \t,
 * other control characters as \u00XX, bytes that do not begin a valid sequence
 * as \xHH. Past max bytes of literal it stops at a character boundary and adds
 * "..." after the closing quote. out has room for max + 16; returns the length
 * written (NUL-terminated, valid UTF-8). */
size_t tp_utf8_quote(const char *s, size_t n, char *out, size_t max);

#endif
