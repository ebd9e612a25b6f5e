/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench/timer: times several commands side by side, interleaved in one run.
 *
 *   timer [-n RUNS] [-w WARMUP] [-T SECONDS] [-v] CMD [ARG...] [:: CMD [ARG...]]...
 *   timer -x CMD [ARG...]
 *
 * A command may start with words "<N:PATH": the child opens PATH read-only
 * as its descriptor N before the exec (in the timed window: one open), for
 * programs that read a file from a descriptor number, e.g. bubblewrap's
 * `--seccomp N` (a descriptor inherited from the timer would be at its end
 * after the first run). -x runs one command so, once, with the timer's
 * stdio, by exec: its exit status is the command's (the probe of
 * bench_run).
 *
 * Each round runs every command once (fork + execvp + waitpid, no shell), in a
 * rotated order (ABC, BCA, CAB, ...) so that no command always runs first or
 * right after the same neighbour. hyperfine runs all repetitions of one
 * command before the next, and spawns through a shell by default: fine for
 * long jobs, too coarse for 1-5 ms start-ups whose ratio we want.
 *
 * Output, one line per command, in microseconds of wall-clock time:
 *   IDX RUNS FAILS MEDIAN P90 MIN MEAN CPU_MEDIAN LINGERING
 * Wall-clock time ends when the command's top process has exited. CPU is
 * user+system time of the command and every descendant, also those it did
 * not wait for (the timer is a child subreaper and reaps them, see
 * reap_orphans); LINGERING counts runs that left processes after 2 s. A run whose exit status is not 0 counts as a failure; its
 * time is still recorded. -T stops after the round in which SECONDS of
 * measuring have passed (at least 3 rounds), so every loop is bounded.
 * stdin is /dev/null; stdout and stderr go to /dev/null unless -v.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CMDS 16
#define MAX_RUNS 100000

#define MAX_FDS 4

struct cmd {
	char **argv;
	int fds[MAX_FDS]; /* "<N:PATH" prefixes: N */
	const char *paths[MAX_FDS];
	int nfds;
	double *wall;
	double *cpu;
	int fails;
	int lingering;
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

static double tv_us(const struct timeval *tv)
{
	return (double)tv->tv_sec * 1e6 + (double)tv->tv_usec;
}

static double children_cpu_us(void)
{
	struct rusage ru;

	getrusage(RUSAGE_CHILDREN, &ru);
	return tv_us(&ru.ru_utime) + tv_us(&ru.ru_stime);
}

/*
 * Reaps what the command left behind: the timer is a child subreaper, so a
 * sandbox's processes that outlive the command's top process (bubblewrap's
 * init, a proxy) are re-parented here. They are waited for (at most 2 s), so
 * that their CPU time counts and the next run does not overlap their
 * teardown; what still runs then is counted as lingering.
 */
static int reap_orphans(void)
{
	double deadline = now_us() + 2e6;

	while (now_us() < deadline) {
		pid_t r = waitpid(-1, NULL, WNOHANG);

		if (r > 0)
			continue;
		if (r < 0 && errno == ECHILD)
			return 0;
		usleep(200);
	}
	return 1;
}

/* Takes the "<N:PATH" words off the front of c->argv. */
static int parse_fds(struct cmd *c)
{
	while (c->argv[0] && c->argv[0][0] == '<') {
		char *end;
		long n = strtol(c->argv[0] + 1, &end, 10);
		if (end == c->argv[0] + 1 || *end != ':' || n < 3 || n > 255 || c->nfds == MAX_FDS)
			return -1;
		c->fds[c->nfds] = (int)n;
		c->paths[c->nfds++] = end + 1;
		c->argv++;
	}
	return c->argv[0] ? 0 : -1;
}

/* In the child, before the exec: the command's descriptors, then exec. */
static void exec_cmd(const struct cmd *c)
{
	for (int i = 0; i < c->nfds; i++) {
		int fd = open(c->paths[i], O_RDONLY | O_CLOEXEC);
		if (fd < 0 || (fd != c->fds[i] && dup2(fd, c->fds[i]) < 0)) {
			fprintf(stderr, "timer: %s: %s\n", c->paths[i], strerror(errno));
			_exit(127);
		}
		if (fd == c->fds[i])
			fcntl(fd, F_SETFD, 0);
		else
			close(fd);
	}
	execvp(c->argv[0], c->argv);
	fprintf(stderr, "timer: %s: %s\n", c->argv[0], strerror(errno));
	_exit(127);
}

static int run_once(struct cmd *c, int devnull, int verbose, double *ret_wall, double *ret_cpu)
{
	double t0, t1, cpu0;
	int status;
	pid_t pid;

	cpu0 = children_cpu_us();
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
		exec_cmd(c);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	t1 = now_us();
	*ret_wall = t1 - t0;
	c->lingering += reap_orphans();
	*ret_cpu = children_cpu_us() - cpu0;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: timer [-n RUNS] [-w WARMUP] [-T SECONDS] [-v] CMD [ARG...] "
		"[:: CMD [ARG...]]...\n       timer -x CMD [ARG...]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct cmd cmds[MAX_CMDS] = {};
	int runs = 20, warmup = 2, verbose = 0, ncmd = 0, done = 0, opt, devnull, once = 0;
	double budget = 0, start;

	while ((opt = getopt(argc, argv, "+n:w:T:vx")) != -1) {
		switch (opt) {
		case 'x':
			once = 1;
			break;
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
	if (once) {
		struct cmd c = {.argv = &argv[optind]};
		if (parse_fds(&c) < 0)
			usage();
		exec_cmd(&c);
	}

	/* Split the remaining arguments at "::" in place. */
	for (int i = optind; i < argc;) {
		if (ncmd == MAX_CMDS)
			usage();
		cmds[ncmd].argv = &argv[i];
		while (i < argc && strcmp(argv[i], "::") != 0)
			i++;
		if (i < argc)
			argv[i++] = NULL;
		if (!cmds[ncmd].argv[0] || parse_fds(&cmds[ncmd]) < 0)
			usage();
		cmds[ncmd].wall = calloc((size_t)runs, sizeof(double));
		cmds[ncmd].cpu = calloc((size_t)runs, sizeof(double));
		if (!cmds[ncmd].wall || !cmds[ncmd].cpu)
			return 1;
		ncmd++;
	}

	/* Orphans of the timed commands come to us (see reap_orphans). */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
		perror("timer: PR_SET_CHILD_SUBREAPER");
		return 1;
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
		printf("%d %d %d %.1f %.1f %.1f %.1f %.1f %d\n", k, done, cmds[k].fails,
		       median(cmds[k].wall, done), pct(cmds[k].wall, done, 0.9), cmds[k].wall[0],
		       sum / done, median(cmds[k].cpu, done), cmds[k].lingering);
	}
	return 0;
}
