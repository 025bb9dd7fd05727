/*
 * pages.c — the workers' shared pages, kept for the next worker.
 *
 * A one-shot worker's page used to be made and unmade around each exec: a
 * memfd, its size and seals, a mapping, and at the reap the unmapping and the
 * file's end (six system calls and a shmem inode; ~3 % of a one-shot Python
 * exec's CPU). A reaped worker's page is kept instead: its bytes are punched
 * out (fallocate PUNCH_HOLE: the pages go back to the kernel, and a read sees
 * zeros, as of a new file), its header written anew. Only the host holds it
 * then: the worker's mapping ended with the worker, the zygote closed its copy
 * of the fd when it cloned it, and the worker closed its own after mapping it.
 * So the next worker finds nothing of the last one's output (test_pages).
 *
 * A leaf: it calls only the kernel and common/shm.c.
 */
#include "pages.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

static int new_page(uint32_t area, struct tp_shm **p)
{
	int fd = memfd_create("tidepool-page", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	size_t size = tp_shm_size(area);
	void *m = MAP_FAILED;
	if (fd < 0)
		return -1;
	/* Sealed, so a worker cannot shrink it under the host's reads. */
	if (ftruncate(fd, (off_t)size) == 0 &&
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0)
		m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	*p = m;
	return fd;
}

int tp_pages_get(struct tp_pages *pp, uint32_t area, struct tp_shm **p)
{
	int fd = -1;

	for (int i = pp->n - 1; i >= 0; i--)
		if (pp->kept[i].area == area) {
			fd = pp->kept[i].fd;
			*p = pp->kept[i].p;
			pp->kept[i] = pp->kept[--pp->n];
			break;
		}
	if (fd < 0 && (fd = new_page(area, p)) < 0)
		return -1;
	tp_shm_init(*p, area);
	return fd;
}

void tp_pages_put(struct tp_pages *pp, int fd, struct tp_shm *p, uint32_t area)
{
	size_t size = tp_shm_size(area);

	if (fd < 0 || p == NULL)
		return;
	if (pp->n < TP_PAGES_KEPT &&
	    fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, (off_t)size) == 0) {
		pp->kept[pp->n].fd = fd;
		pp->kept[pp->n].p = p;
		pp->kept[pp->n++].area = area;
		return;
	}
	munmap(p, size);
	close(fd);
}

void tp_pages_free(struct tp_pages *pp)
{
	for (int i = 0; i < pp->n; i++) {
		munmap(pp->kept[i].p, tp_shm_size(pp->kept[i].area));
		close(pp->kept[i].fd);
	}
	pp->n = 0;
}
