/*
 * base64.c — RFC 4648 base64, strict both ways (see base64.h).
 */
#include "base64.h"

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t tp_base64_encoded_len(size_t n)
{
	return (n + 2) / 3 * 4;
}

void tp_base64_encode(const unsigned char *in, size_t n, char *out)
{
	size_t i = 0, o = 0;
	for (; i + 3 <= n; i += 3) {
		unsigned v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8 | in[i + 2];
		out[o++] = alphabet[v >> 18 & 63];
		out[o++] = alphabet[v >> 12 & 63];
		out[o++] = alphabet[v >> 6 & 63];
		out[o++] = alphabet[v & 63];
	}
	if (n - i == 1) {
		unsigned v = (unsigned)in[i] << 16;
		out[o++] = alphabet[v >> 18 & 63];
		out[o++] = alphabet[v >> 12 & 63];
		out[o++] = '=';
		out[o++] = '=';
	} else if (n - i == 2) {
		unsigned v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8;
		out[o++] = alphabet[v >> 18 & 63];
		out[o++] = alphabet[v >> 12 & 63];
		out[o++] = alphabet[v >> 6 & 63];
		out[o++] = '=';
	}
	out[o] = '\0';
}

static int value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

long tp_base64_decode(const char *in, size_t len, unsigned char *out)
{
	size_t o = 0;
	if (len % 4 != 0)
		return -1;
	for (size_t i = 0; i < len; i += 4) {
		int last = i + 4 == len;
		int pad = last && in[i + 3] == '=' ? (in[i + 2] == '=' ? 2 : 1) : 0;
		int v[4];
		for (int k = 0; k < 4; k++) {
			v[k] = k >= 4 - pad ? 0 : value(in[i + (size_t)k]);
			if (v[k] < 0)
				return -1;
		}
		unsigned x = (unsigned)v[0] << 18 | (unsigned)v[1] << 12 | (unsigned)v[2] << 6 |
			     (unsigned)v[3];
		/* The bits padding leaves must be zero: one text per byte string. */
		if ((pad == 2 && (x & 0xffff) != 0) || (pad == 1 && (x & 0xff) != 0))
			return -1;
		out[o++] = (unsigned char)(x >> 16);
		if (pad < 2)
			out[o++] = (unsigned char)(x >> 8);
		if (pad < 1)
			out[o++] = (unsigned char)x;
	}
	return (long)o;
}
