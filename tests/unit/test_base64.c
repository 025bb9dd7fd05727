/*
 * test_base64.c — the files methods' codec: RFC 4648's test vectors, every
 * length round-tripped, and the strict decoder's refusals (one text, one
 * meaning).
 */
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "tap.h"

static void vector(const char *in, const char *want)
{
	char out[64];
	unsigned char back[64];
	tp_base64_encode((const unsigned char *)in, strlen(in), out);
	CHECK_EQ_STR(out, want);
	CHECK_EQ_INT(tp_base64_encoded_len(strlen(in)), strlen(want));
	long n = tp_base64_decode(want, strlen(want), back);
	CHECK_EQ_INT(n, (long)strlen(in));
	CHECK(n >= 0 && memcmp(back, in, (size_t)n) == 0);
}

static void refused(const char *text)
{
	unsigned char out[64];
	CHECK_EQ_INT(tp_base64_decode(text, strlen(text), out), -1);
}

int main(void)
{
	vector("", "");
	vector("f", "Zg==");
	vector("fo", "Zm8=");
	vector("foo", "Zm9v");
	vector("foob", "Zm9vYg==");
	vector("fooba", "Zm9vYmE=");
	vector("foobar", "Zm9vYmFy");
	vector("\xff\xfe\xfd", "//79");
	/* Every length and byte value, there and back. */
	unsigned char in[300], back[300];
	char text[404];
	srand(7);
	for (size_t n = 0; n < sizeof in; n++) {
		for (size_t i = 0; i < n; i++)
			in[i] = (unsigned char)rand();
		tp_base64_encode(in, n, text);
		CHECK_EQ_INT(strlen(text), tp_base64_encoded_len(n));
		long got = tp_base64_decode(text, strlen(text), back);
		CHECK_EQ_INT(got, (long)n);
		CHECK(got >= 0 && memcmp(in, back, n) == 0);
	}
	refused("Zg=");      /* not a multiple of 4 */
	refused("Zg");       /* no padding */
	refused("Zh==");     /* bits padding leaves must be zero */
	refused("Zm9=");     /* the same with one '=' */
	refused("Zg==Zg=="); /* padding before the end */
	refused("Z===");     /* three '=' */
	refused("Zm 9v");    /* whitespace */
	refused("Zm9v\n");
	refused("Zm-_"); /* the URL alphabet is another encoding */
	refused("=Zm9");
	return tp_test_done("test_base64");
}
