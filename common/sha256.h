/*
 * sha256.h — SHA-256 (FIPS 180-4), for the audit log's code digest. Pure.
 */
#ifndef TP_SHA256_H
#define TP_SHA256_H

#include <stddef.h>

/* hex receives 64 lowercase hex digits and a NUL. */
void tp_sha256_hex(const void *data, size_t len, char hex[65]);

#endif
