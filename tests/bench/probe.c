/*
 * probe.c — what this machine charges for the steps a tidepool exec is made of,
 * measured without tidepool, so `make bench` can print the machine's own costs
 * beside tidepool's figures (a slow machine against a slow tidepool). Built by
 * `make bench` with cc -O2; prints one "name median_us" line per figure:
 *
 *   cow_fault_us     a forked child writing one byte in each page of a 64 MiB
 *                    buffer its parent wrote: µs per page (copy-on-write fault)
 *   zero_fault_us    writing one byte in each page of a fresh 64 MiB mmap: µs
 *                    per page (zero-fill fault)
 *   fork_us          fork() of this small process, until it returns in the parent
 *   exit_wait_us     a child blocked in read() is woken by one byte, _exits, and
 *                    is reaped by waitpid(): from the write to waitpid's return
 *   vfork_us         vfork() + _exit in the child + waitpid, in all
 *   pipe_rtt_us      one byte to a live child and one byte back, through two pipes
 *                    (wherever the scheduler puts the two)
 *   pipe_xcpu_us     the same with parent and child pinned to two different CPUs
 *                    (absent on one CPU)
 *
 * Both fault buffers are 4 KiB pages (MADV_NOHUGEPAGE). Medians of several runs.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BUF_BYTES (64UL << 20)

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *xs, int n)
{
	qsort(xs, (size_t)n, sizeof *xs, cmp_double);
	return n % 2 ? xs[n / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static char *map_buf(void)
{
	char *p = mmap(NULL, BUF_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		die("mmap");
	madvise(p, BUF_BYTES, MADV_NOHUGEPAGE);
	return p;
}

/* µs per page to write one byte in each page of buf. */
static double touch(char *buf, long page)
{
	size_t pages = BUF_BYTES / (size_t)page;
	double t = now_us();
	for (size_t i = 0; i < pages; i++)
		((volatile char *)buf)[i * (size_t)page] = 1;
	return (now_us() - t) / (double)pages;
}

static double zero_fault(long page)
{
	char *buf = map_buf();
	double us = touch(buf, page);
	munmap(buf, BUF_BYTES);
	return us;
}

static double cow_fault(long page)
{
	char *buf = map_buf();
	int fd[2];
	double us = -1;
	touch(buf, page);
	if (pipe(fd) != 0)
		die("pipe");
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		double t = touch(buf, page);
		if (write(fd[1], &t, sizeof t) != sizeof t)
			_exit(1);
		_exit(0);
	}
	if (read(fd[0], &us, sizeof us) != sizeof us)
		die("read");
	waitpid(pid, NULL, 0);
	close(fd[0]);
	close(fd[1]);
	munmap(buf, BUF_BYTES);
	return us;
}

/* fork() until it returns in the parent; and a woken child's _exit until reaped. */
static void fork_exit(double *fork_us, double *exit_us)
{
	int fd[2], ready[2];
	char b = 0;
	if (pipe(fd) != 0 || pipe(ready) != 0)
		die("pipe");
	double t = now_us();
	pid_t pid = fork();
	if (pid == 0) {
		if (write(ready[1], &b, 1) != 1 || read(fd[0], &b, 1) != 1)
			_exit(1);
		_exit(0);
	}
	*fork_us = now_us() - t;
	if (pid < 0)
		die("fork");
	if (read(ready[0], &b, 1) != 1)
		die("read");
	usleep(200); /* the child is now blocked in read() */
	t = now_us();
	if (write(fd[1], &b, 1) != 1)
		die("write");
	waitpid(pid, NULL, 0);
	*exit_us = now_us() - t;
	close(fd[0]);
	close(fd[1]);
	close(ready[0]);
	close(ready[1]);
}

static double vfork_wait(void)
{
	double t = now_us();
	pid_t pid = vfork();
	if (pid == 0)
		_exit(0);
	if (pid < 0)
		die("vfork");
	waitpid(pid, NULL, 0);
	return now_us() - t;
}

/* cpu[0], cpu[1]: the child's and the parent's CPU, or -1 for anywhere. */
static void pin(int cpu)
{
	cpu_set_t set;
	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof set, &set);
}

static double pipe_rtt(int n, double *xs, const int cpu[2])
{
	int to[2], from[2];
	char b = 0;
	if (pipe(to) != 0 || pipe(from) != 0)
		die("pipe");
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		pin(cpu[0]);
		close(to[1]); /* else read() never sees the end */
		while (read(to[0], &b, 1) == 1)
			if (write(from[1], &b, 1) != 1)
				_exit(1);
		_exit(0);
	}
	pin(cpu[1]);
	for (int i = 0; i < n + 10; i++) {
		double t = now_us();
		if (write(to[1], &b, 1) != 1 || read(from[0], &b, 1) != 1)
			die("pipe round trip");
		if (i >= 10)
			xs[i - 10] = now_us() - t;
	}
	close(to[1]);
	waitpid(pid, NULL, 0);
	close(to[0]);
	close(from[0]);
	close(from[1]);
	return median(xs, n);
}

int main(int argc, char **argv)
{
	int scale = argc > 1 ? atoi(argv[1]) : 1; /* 1 = full, more = quicker */
	long page = sysconf(_SC_PAGESIZE);
	int nfault = scale > 1 ? 3 : 7, nproc = 200 / scale, nrtt = 2000 / scale;
	double *a = calloc((size_t)nrtt, sizeof *a), *b = calloc((size_t)nrtt, sizeof *b);
	if (a == NULL || b == NULL || nproc < 5)
		die("probe");
	alarm(300); /* never hang a bench run */
	setvbuf(stdout, NULL, _IOLBF, 0);

	for (int i = 0; i < nfault; i++)
		a[i] = cow_fault(page);
	printf("cow_fault_us %.3f\n", median(a, nfault));
	for (int i = 0; i < nfault; i++)
		a[i] = zero_fault(page);
	printf("zero_fault_us %.3f\n", median(a, nfault));
	for (int i = 0; i < nproc; i++)
		fork_exit(&a[i], &b[i]);
	printf("fork_us %.1f\n", median(a, nproc));
	printf("exit_wait_us %.1f\n", median(b, nproc));
	for (int i = 0; i < nproc; i++)
		a[i] = vfork_wait();
	printf("vfork_us %.1f\n", median(a, nproc));
	cpu_set_t all;
	int anywhere[2] = { -1, -1 }, two[2] = { -1, -1 };
	printf("pipe_rtt_us %.1f\n", pipe_rtt(nrtt, b, anywhere));
	if (sched_getaffinity(0, sizeof all, &all) == 0 && CPU_COUNT(&all) >= 2) {
		for (int c = 0, k = 0; c < CPU_SETSIZE && k < 2; c++)
			if (CPU_ISSET(c, &all))
				two[k++] = c;
		printf("pipe_xcpu_us %.1f\n", pipe_rtt(nrtt, b, two));
		sched_setaffinity(0, sizeof all, &all);
	}
	printf("page_bytes %ld\n", page);
	free(a);
	free(b);
	return 0;
}
