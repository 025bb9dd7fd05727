/*
 * pyaddr.h — no object address reaches Python code: id(), hash() and every
 * built-in repr that prints "at 0x..." show values of a keyed 64-bit
 * bijection of the address instead (docs/python.md, "Addresses").
 *
 * Two keys. id() and the reprs use the id key, derived in each worker from
 * its entropy and a secret the zygote draws: the same object has a different
 * id in every exec. hash() uses the hash key, drawn once per zygote, because
 * the dicts and sets the zygote filled before the fork keep the hashes they
 * stored: it must not change in a worker.
 *
 * Usage:
 *   1. tp_pyaddr_preinit(err): in the zygote, before Py_PreInitialize(). Draws
 *      the keys (getrandom) and replaces the repr and hash slots of the static
 *      types, so PyType_Ready() copies ours into every subtype and every slot
 *      wrapper (object.__repr__, object.__hash__) and no hash is ever stored
 *      under the old function. -1 with err set when there is no randomness or
 *      the interpreter already runs.
 *   2. tp_pyaddr_zygote_init(err): after the shim, once every module a worker
 *      can reach is loaded: builtins.id, the types modules made at run time
 *      (_thread's locks, decimal.Decimal), and a check that every patch took.
 *   3. tp_pyaddr_worker_init(entropy): in a fresh worker, before lockdown: the
 *      worker's id key.
 */
#ifndef TP_PYADDR_H
#define TP_PYADDR_H

#include <Python.h>

#include <stdint.h>

#include "err.h"

#define TP_ADDR_ROUNDS 8      /* id() and the reprs: 26-bit halves */
#define TP_ADDR_HASH_ROUNDS 4 /* hash(), on the hot path: 28-bit halves */
#define TP_ADDR_ID_BITS 52

/* The bijection: a balanced Feistel network of `rounds` rounds on two halves
 * of `half` bits (1..32), each round function a keyed multiply-xorshift mix of
 * the half with two 64-bit round keys. tp_addr_map() permutes [0, 2^(2*half))
 * (higher bits of x are ignored); tp_addr_unmap() inverts it. */
struct tp_addr_key {
	unsigned rounds; /* 1..TP_ADDR_ROUNDS */
	uint64_t k[TP_ADDR_ROUNDS][2];
};

uint64_t tp_addr_map(const struct tp_addr_key *key, unsigned half, uint64_t x);
uint64_t tp_addr_unmap(const struct tp_addr_key *key, unsigned half, uint64_t y);
/* An address's id (a bijection of 64 bits; below 2^52 for a user-space address
 * below 2^55 that is 8-aligned), and back. */
uint64_t tp_addr_id(const struct tp_addr_key *key, uint64_t addr);
uint64_t tp_addr_unid(const struct tp_addr_key *key, uint64_t id);
/* The worker's id key for this zygote secret and entropy. */
void tp_addr_derive(const struct tp_addr_key *secret, uint64_t entropy, struct tp_addr_key *out);

int tp_pyaddr_preinit(struct tp_err *err);
int tp_pyaddr_zygote_init(struct tp_err *err);
void tp_pyaddr_worker_init(uint64_t entropy);

/* For tests. tp_pyaddr_id(): what id() gives for the object at p.
 * tp_pyaddr_original_repr(): CPython's own repr of o when we replaced the repr
 * of o's type (a new reference), else NULL without an error.
 * tp_pyaddr_identity(on): map every address to itself (then each repr must
 * equal CPython's own, character for character). */
uint64_t tp_pyaddr_id(const void *p);
PyObject *tp_pyaddr_original_repr(PyObject *o);
void tp_pyaddr_identity(int on);

#endif
