/*
 * test_pages.c — the workers' shared pages kept for the next worker
 * (host/pages.c): a kept page comes back with a fresh header and every other
 * byte zero, whatever the last worker wrote into it; it stays sealed; a page
 * is kept only for a worker of its size, and no more than TP_PAGES_KEPT are.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pages.h"
#include "tap.h"

#define AREA (64u << 10)

static size_t nonzero_after_header(const struct tp_shm *p, uint32_t area)
{
	const unsigned char *b = (const unsigned char *)p;
	size_t n = 0;
	for (size_t i = sizeof *p; i < tp_shm_size(area); i++)
		n += b[i] != 0;
	return n;
}

static int fresh_header(const struct tp_shm *p, uint32_t area)
{
	struct tp_shm ref;
	tp_shm_init(&ref, area);
	return memcmp(&ref, p, sizeof ref) == 0;
}

static void test_kept_page_is_zero(void)
{
	struct tp_pages pp = { .n = 0 };
	struct tp_shm *p = NULL, *q = NULL;
	int fd = tp_pages_get(&pp, AREA, &p);
	CHECK(fd >= 0 && p != NULL);
	if (fd < 0)
		return;
	struct stat st;
	CHECK(fstat(fd, &st) == 0 && (size_t)st.st_size == tp_shm_size(AREA));
	CHECK_EQ_INT(fcntl(fd, F_GET_SEALS), F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	CHECK(fresh_header(p, AREA));
	CHECK_EQ_INT(nonzero_after_header(p, AREA), 0);

	/* A worker's own mapping writes everywhere, the header too, and ends. */
	void *wm = mmap(NULL, tp_shm_size(AREA), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(wm != MAP_FAILED);
	if (wm != MAP_FAILED) {
		memset(wm, 0xa5, tp_shm_size(AREA));
		munmap(wm, tp_shm_size(AREA));
	}
	CHECK_EQ_INT(nonzero_after_header(p, AREA), 2 * AREA); /* the host sees it */
	tp_pages_put(&pp, fd, p, AREA);
	CHECK_EQ_INT(pp.n, 1);

	int fd2 = tp_pages_get(&pp, AREA, &q);
	CHECK_EQ_INT(fd2, fd); /* the same page */
	CHECK(q == p);
	CHECK_EQ_INT(pp.n, 0);
	CHECK(fresh_header(q, AREA));
	CHECK_EQ_INT(nonzero_after_header(q, AREA), 0);
	CHECK_EQ_INT(fcntl(fd2, F_GET_SEALS), F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	CHECK(ftruncate(fd2, 4096) != 0 && errno == EPERM); /* still sealed */

	/* Another size gets a page of its own. */
	struct tp_shm *r = NULL;
	tp_pages_put(&pp, fd2, q, AREA);
	int fd3 = tp_pages_get(&pp, 2 * AREA, &r);
	CHECK(fd3 >= 0 && fd3 != fd2 && r != q);
	CHECK_EQ_INT(pp.n, 1);
	tp_pages_put(&pp, fd3, r, 2 * AREA);
	CHECK_EQ_INT(pp.n, 2);
	tp_pages_free(&pp);
	CHECK_EQ_INT(pp.n, 0);
	CHECK(fcntl(fd2, F_GETFD) == -1 && errno == EBADF);
	CHECK(fcntl(fd3, F_GETFD) == -1 && errno == EBADF);
}

static void test_at_most_kept(void)
{
	struct tp_pages pp = { .n = 0 };
	int fds[TP_PAGES_KEPT + 2];
	struct tp_shm *ps[TP_PAGES_KEPT + 2];
	for (int i = 0; i < TP_PAGES_KEPT + 2; i++) {
		fds[i] = tp_pages_get(&pp, AREA, &ps[i]);
		CHECK(fds[i] >= 0);
	}
	for (int i = 0; i < TP_PAGES_KEPT + 2; i++)
		tp_pages_put(&pp, fds[i], ps[i], AREA);
	CHECK_EQ_INT(pp.n, TP_PAGES_KEPT);
	/* The last two found no room: closed. */
	CHECK(fcntl(fds[TP_PAGES_KEPT], F_GETFD) == -1 && errno == EBADF);
	CHECK(fcntl(fds[TP_PAGES_KEPT + 1], F_GETFD) == -1 && errno == EBADF);
	CHECK(fcntl(fds[0], F_GETFD) >= 0);
	tp_pages_free(&pp);
	CHECK(fcntl(fds[0], F_GETFD) == -1 && errno == EBADF);
}

int main(void)
{
	test_kept_page_is_zero();
	test_at_most_kept();
	return tp_test_done("test_pages");
}
