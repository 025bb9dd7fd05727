/*
 * fuzz_jsonscan.c — tp_json_scan, which reads every value a worker sends, held
 * to tp_json_loadb on any bytes (tests/unit/jsonscan_oracle.h): both accept
 * with the same tree, deep and compact as the decoder's walks say, or both
 * refuse; the one difference allowed is jansson's NUL quirk (a NUL byte
 * outside strings that json_loadb skips), which tp_json_scan refuses. The
 * first byte of the input picks result_depth (0: not checked, else 1 .. 8).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "jsonscan_oracle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char why[3 * TP_ERR_MSG_MAX + 64];

	if (size == 0)
		return 0;
	size_t max_depth = data[0] % 9;
	if (!jsonscan_agree((const char *)data + 1, size - 1, max_depth, why, sizeof why)) {
		fprintf(stderr, "tp_json_scan and tp_json_loadb differ: %s\n", why);
		abort();
	}
	return 0;
}
