/*
 * test_sha256.c — the audit log's digest against FIPS 180-4's examples and
 * the padding edges (55, 56, 63, 64 bytes).
 */
#include <string.h>

#include "sha256.h"
#include "tap.h"

static void check(const char *in, size_t len, const char *want)
{
	char hex[65];
	tp_sha256_hex(in, len, hex);
	CHECK_EQ_STR(hex, want);
}

int main(void)
{
	char a[1000001];
	check("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	check("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	check("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56,
	      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	memset(a, 'a', sizeof a);
	check(a, 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	check(a, 55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
	check(a, 64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
	return tp_test_done("test_sha256");
}
