/*
 * proc.c — what /proc says of a process the host started (a worker, a
 * zygote): its state and its CPU time. It calls nothing else of the host.
 */
#include "host_int.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* A process's state letter and CPU time (utime+stime, ms) from /proc/PID/stat. */
int tp_proc_stat(pid_t pid, char *state, double *cpu_ms)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* The name (field 2) may hold anything: the fields after its last ')'. */
	char *p = strrchr(buf, ')');
	unsigned long long ut, st;
	if (p == NULL || sscanf(p + 1, " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
				state, &ut, &st) != 3)
		return -1;
	static long hz;
	if (hz <= 0)
		hz = sysconf(_SC_CLK_TCK);
	*cpu_ms = (double)(ut + st) * 1000.0 / (double)(hz > 0 ? hz : 100);
	return 0;
}

double tp_proc_cpu_ms(pid_t pid)
{
	char path[64];
	unsigned long long ns;
	char state;
	double ms;

	/* The scheduler's run time, in ns (CONFIG_SCHED_INFO); stat's is in ticks. */
	snprintf(path, sizeof path, "/proc/%d/schedstat", (int)pid);
	FILE *f = fopen(path, "re");
	int got = f != NULL && fscanf(f, "%llu", &ns) == 1;
	if (f != NULL)
		fclose(f);
	if (got)
		return (double)ns / 1e6;
	return tp_proc_stat(pid, &state, &ms) == 0 ? ms : -1;
}
