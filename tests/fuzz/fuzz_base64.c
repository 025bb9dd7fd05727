/*
 * fuzz_base64.c — the files methods' base64 is a client's bytes: any text
 * decodes or is refused, never a write out of bounds; the decoder is strict,
 * so a text it takes is exactly what encoding its bytes gives back; and any
 * bytes encode to a text that decodes to them.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c)) {                                                                        \
			fprintf(stderr, "CHECK failed: %s (%s:%d)\n", #c, __FILE__, __LINE__);     \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* As text: exactly size / 4 * 3 bytes of room, so a bound overrun shows. */
	unsigned char *out = malloc(size / 4 * 3 + 1);
	long n = tp_base64_decode((const char *)data, size, out);
	CHECK(n >= -1 && n <= (long)(size / 4 * 3));
	if (n >= 0) {
		char *again = malloc(tp_base64_encoded_len((size_t)n) + 1);
		tp_base64_encode(out, (size_t)n, again);
		CHECK(strlen(again) == size && memcmp(again, data, size) == 0);
		free(again);
	}
	free(out);
	/* As bytes: there and back. */
	char *text = malloc(tp_base64_encoded_len(size) + 1);
	unsigned char *back = malloc(size + 1);
	tp_base64_encode(data, size, text);
	CHECK(strlen(text) == tp_base64_encoded_len(size));
	CHECK(tp_base64_decode(text, strlen(text), back) == (long)size);
	CHECK(memcmp(back, data, size) == 0);
	free(text);
	free(back);
	return 0;
}
