/*
 * pages.h — the workers' shared pages, kept for the next worker (pages.c).
 *
 * Usage: tp_pages_get for a new worker's page (a kept one or a new one); the
 * host holds its fd and mapping for the worker's life and sends the fd to the
 * zygote. Once the worker has been reaped (its mapping is gone with it; no
 * other process holds the page), tp_pages_put keeps it, zeroed, for the next,
 * or releases it. tp_pages_free releases what is kept.
 */
#ifndef TP_PAGES_H
#define TP_PAGES_H

#include <stdint.h>

#include "shm.h"

#define TP_PAGES_KEPT 8

struct tp_pages {
	struct {
		int fd;
		struct tp_shm *p;
		uint32_t area;
	} kept[TP_PAGES_KEPT];
	int n;
};

/* A page of area bytes (tp_shm_size) with a fresh header and nothing else:
 * memfd-backed, sealed against shrinking and growing, mapped shared. Its fd,
 * *p set; -1 (errno) when none could be made. */
int tp_pages_get(struct tp_pages *pp, uint32_t area, struct tp_shm **p);
/* The page of a reaped worker: every byte given back to the kernel (a later
 * read sees zeros) and kept, or, when it cannot be or no room is left, unmapped
 * and closed. */
void tp_pages_put(struct tp_pages *pp, int fd, struct tp_shm *p, uint32_t area);
void tp_pages_free(struct tp_pages *pp);

#endif
