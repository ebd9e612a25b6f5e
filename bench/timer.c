/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench/timer: times several commands side by side, interleaved in one run.
 *
 *   timer [-n RUNS] [-w WARMUP] [-T SECONDS] [-v] CMD [ARG...] [:: CMD [ARG...]]...
 *
 * Each round runs every command once (fork + execvp + wait4, no shell), in a
 * rotated order (ABC, BCA, CAB, ...) so that no command always runs first or
 * right after the same neighbour. hyperfine runs all repetitions of one
 * command before the next, and spawns through a shell by default: fine for
 * long jobs, too coarse for 1-5 ms start-ups whose ratio we want.
 *
 * Output, one line per command, in microseconds of wall-clock time:
 *   IDX RUNS FAILS MEDIAN P90 MIN MEAN CPU_MEDIAN
 * CPU is user+system time of the child and its waited-for descendants
 * (wait4 rusage). A run whose exit status is not 0 counts as a failure; its
 * time is still recorded. -T stops after the round in which SECONDS of
 * measuring have passed (at least 3 rounds), so every loop is bounded.
 * stdin is /dev/null; stdout and stderr go to /dev/null unless -v.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CMDS 16
#define MAX_RUNS 100000

struct cmd {
	char **argv;
	double *wall;
	double *cpu;
	int fails;
};

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

/* Nearest-rank percentile of a sorted array. */
static double pct(const double *v, int n, double p)
{
	int i = (int)(p * n + 0.999999) - 1;

	if (i < 0)
		i = 0;
	if (i >= n)
		i = n - 1;
	return v[i];
}

static double median(const double *v, int n)
{
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int run_once(struct cmd *c, int devnull, int verbose, double *ret_wall, double *ret_cpu)
{
	struct rusage ru;
	double t0, t1;
	int status;
	pid_t pid;

	t0 = now_us();
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		dup2(devnull, 0);
		if (!verbose) {
			dup2(devnull, 1);
			dup2(devnull, 2);
		}
		execvp(c->argv[0], c->argv);
		_exit(127);
	}
	if (wait4(pid, &status, 0, &ru) < 0)
		return -errno;
	t1 = now_us();
	*ret_wall = t1 - t0;
	*ret_cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
		(double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: timer [-n RUNS] [-w WARMUP] [-T SECONDS] [-v] CMD [ARG...] "
		"[:: CMD [ARG...]]...\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct cmd cmds[MAX_CMDS] = {};
	int runs = 20, warmup = 2, verbose = 0, ncmd = 0, done = 0, opt, devnull;
	double budget = 0, start;

	while ((opt = getopt(argc, argv, "+n:w:T:v")) != -1) {
		switch (opt) {
		case 'n':
			runs = atoi(optarg);
			break;
		case 'w':
			warmup = atoi(optarg);
			break;
		case 'T':
			budget = atof(optarg) * 1e6;
			break;
		case 'v':
			verbose = 1;
			break;
		default:
			usage();
		}
	}
	if (runs < 1 || runs > MAX_RUNS || warmup < 0 || warmup > MAX_RUNS || optind >= argc)
		usage();

	/* Split the remaining arguments at "::" in place. */
	for (int i = optind; i < argc;) {
		if (ncmd == MAX_CMDS)
			usage();
		cmds[ncmd].argv = &argv[i];
		while (i < argc && strcmp(argv[i], "::") != 0)
			i++;
		if (i < argc)
			argv[i++] = NULL;
		if (!cmds[ncmd].argv[0])
			usage();
		cmds[ncmd].wall = calloc((size_t)runs, sizeof(double));
		cmds[ncmd].cpu = calloc((size_t)runs, sizeof(double));
		if (!cmds[ncmd].wall || !cmds[ncmd].cpu)
			return 1;
		ncmd++;
	}

	devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull < 0) {
		perror("timer: /dev/null");
		return 1;
	}

	for (int round = 0; round < warmup; round++)
		for (int k = 0; k < ncmd; k++) {
			double w, c;

			if (run_once(&cmds[k], devnull, verbose, &w, &c) < 0) {
				perror("timer: fork/wait");
				return 1;
			}
		}

	start = now_us();
	for (int round = 0; round < runs; round++) {
		for (int j = 0; j < ncmd; j++) {
			struct cmd *c = &cmds[(round + j) % ncmd];
			int r = run_once(c, devnull, verbose, &c->wall[round], &c->cpu[round]);

			if (r < 0) {
				perror("timer: fork/wait");
				return 1;
			}
			c->fails += r;
		}
		done = round + 1;
		if (budget > 0 && done >= 3 && now_us() - start > budget)
			break;
	}

	for (int k = 0; k < ncmd; k++) {
		double sum = 0;

		qsort(cmds[k].wall, (size_t)done, sizeof(double), cmp_double);
		qsort(cmds[k].cpu, (size_t)done, sizeof(double), cmp_double);
		for (int i = 0; i < done; i++)
			sum += cmds[k].wall[i];
		printf("%d %d %d %.1f %.1f %.1f %.1f %.1f\n", k, done, cmds[k].fails,
		       median(cmds[k].wall, done), pct(cmds[k].wall, done, 0.9), cmds[k].wall[0],
		       sum / done, median(cmds[k].cpu, done));
	}
	return 0;
}
