/*
 * base64.h — RFC 4648 base64 (the standard alphabet, with padding), both ways.
 * Pure. The decoder is strict: it takes only what the encoder makes (length a
 * multiple of 4, '=' only as the last one or two characters, no whitespace, no
 * other character, zero bits where padding leaves them), so one text has one
 * meaning.
 */
#ifndef TP_BASE64_H
#define TP_BASE64_H

#include <stddef.h>

/* Bytes the encoding of n bytes takes, not counting the NUL. */
size_t tp_base64_encoded_len(size_t n);
/* Encodes n bytes into out (room for tp_base64_encoded_len(n) + 1), NUL-terminated. */
void tp_base64_encode(const unsigned char *in, size_t n, char *out);
/* Decodes len characters into out (room for len / 4 * 3); the byte count, or
 * -1 for a text that is not strict base64. */
long tp_base64_decode(const char *in, size_t len, unsigned char *out);

#endif
