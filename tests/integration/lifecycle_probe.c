/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Drives libmoat's lifecycle API (create / exec / wait / signal / destroy)
 * for tests/integration/lifecycle.sh. One scenario per run, named by argv[1];
 * it prints what it observed, one "key value" a line, and the script checks
 * it. Exits 0 when the scenario ran to its end, 1 on an API error (printed).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "moat/moat.h"

static struct moat_policy *policy(void)
{
	struct moat_policy *p = moat_policy_new();
	struct moat_error e = {0};
	const char *ws = getenv("LC_WORKSPACE");
	if (!p)
		exit(1);
	if (ws && moat_policy_set_option(p, "--workspace", ws, &e) < 0) {
		fprintf(stderr, "policy: %s\n", e.message);
		exit(1);
	}
	/* LC_OPTS: "OPTION VALUE OPTION VALUE..." (e.g. "--memory 256M") */
	const char *opts = getenv("LC_OPTS");
	char obuf[256];
	snprintf(obuf, sizeof(obuf), "%s", opts ? opts : "");
	char *save = NULL;
	for (char *o = strtok_r(obuf, " ", &save); o; o = strtok_r(NULL, " ", &save)) {
		char *v = strtok_r(NULL, " ", &save);
		if (!v || moat_policy_set_option(p, o, v, &e) < 0) {
			fprintf(stderr, "policy: %s: %s\n", o, v ? e.message : "no value");
			exit(1);
		}
	}
	/* LC_SWITCHES: space-separated policy switches (no values), for benchmarks */
	const char *sw = getenv("LC_SWITCHES");
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", sw ? sw : "");
	for (char *t = strtok(buf, " "); t; t = strtok(NULL, " "))
		if (moat_policy_set_option(p, t, NULL, &e) < 0) {
			fprintf(stderr, "policy: %s\n", e.message);
			exit(1);
		}
	return p;
}

static struct moat_sandbox *create(const struct moat_policy *p)
{
	struct moat_sandbox *sb;
	struct moat_error e = {0};
	if (moat_sandbox_create(p, &sb, &e) < 0) {
		fprintf(stderr, "create: %s: %s\n", e.stage, e.message);
		exit(1);
	}
	return sb;
}

/* Runs argv with stdout into a pipe; returns the process, *ret_out the pipe. */
static struct moat_proc *start(struct moat_sandbox *sb, char *const *argv, char *const *env,
			       const char *cwd, int *ret_out)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		exit(1);
	struct moat_exec x = {.argv = argv, .env = env, .cwd = cwd, .fd = {-1, p[1], 2}};
	struct moat_proc *pr;
	struct moat_error e = {0};
	int k = moat_sandbox_exec(sb, &x, &pr, &e);
	close(p[1]);
	if (k < 0) {
		fprintf(stderr, "exec %s: %s: %s\n", argv[0], e.stage, e.message);
		exit(1);
	}
	if (ret_out)
		*ret_out = p[0];
	else
		close(p[0]);
	return pr;
}

static void read_all(int fd, char *buf, size_t size)
{
	size_t off = 0;
	ssize_t n;
	while (off + 1 < size && (n = read(fd, buf + off, size - 1 - off)) > 0)
		off += (size_t)n;
	buf[off] = '\0';
	while (off && buf[off - 1] == '\n')
		buf[--off] = '\0';
	close(fd);
}

static int wait_code(struct moat_proc *pr)
{
	struct moat_proc_status st;
	if (moat_proc_wait(pr, &st) < 0)
		exit(1);
	return st.exit_code;
}

static void destroy(struct moat_sandbox *sb, const char *name)
{
	struct moat_status st;
	struct moat_error e = {0};
	if (moat_sandbox_destroy(sb, &st, &e) < 0) {
		fprintf(stderr, "destroy: %s\n", e.message);
		exit(1);
	}
	printf("destroyed %s %s\n", name, st.run_id);
}

/* Two sandboxes in one process: each sees only its own files and
 * processes; destroyed in the order given (ab or ba). */
static int two(const char *order)
{
	struct moat_policy *p = policy();
	struct moat_sandbox *a = create(p), *b = create(p);
	char buf[256];
	int fd;
	char *const wa[] = {"sh", "-c", "echo from-a >/tmp/mine; cat /tmp/mine", NULL};
	char *const rb[] = {"sh", "-c", "cat /tmp/mine 2>/dev/null || echo none", NULL};
	/* the list read before anything else is started: the pipe's grep would
	 * race ls (forked or not yet when ls reads /proc) */
	char *const ps[] = {"sh", "-c", "ls /proc >/tmp/procs; grep -c '^[0-9]' /tmp/procs", NULL};
	struct moat_proc *pa = start(a, wa, NULL, NULL, &fd);
	int code = wait_code(pa);
	read_all(fd, buf, sizeof(buf));
	printf("a-wrote %s exit %d\n", buf, code);
	struct moat_proc *pb = start(b, rb, NULL, NULL, &fd);
	code = wait_code(pb);
	read_all(fd, buf, sizeof(buf));
	printf("b-reads %s exit %d\n", buf, code);
	/* a long process in a: b's /proc shows init and its own two only */
	char *const sl[] = {"sleep", "30", NULL};
	struct moat_proc *long_a = start(a, sl, NULL, NULL, NULL);
	struct moat_proc *pc = start(b, ps, NULL, NULL, &fd);
	code = wait_code(pc);
	read_all(fd, buf, sizeof(buf));
	printf("b-procs %s exit %d\n", buf, code);
	printf("ids %s %s %s\n", moat_sandbox_id(a), moat_sandbox_id(b),
	       strcmp(moat_sandbox_id(a), moat_sandbox_id(b)) ? "differ" : "same");
	(void)long_a;
	if (strcmp(order, "ba") == 0) {
		destroy(b, "b");
		destroy(a, "a");
	} else {
		destroy(a, "a");
		destroy(b, "b");
	}
	moat_policy_free(p);
	return 0;
}

/* Several processes at once in one sandbox, each with its own status, and
 * the environment and working directory of one exec. */
static int concurrent(void)
{
	struct moat_policy *p = policy();
	struct moat_sandbox *sb = create(p);
	struct moat_proc *pr[5];
	int fd[5];
	char excode[5][16], script[5][160];
	for (int i = 0; i < 5; i++) {
		snprintf(excode[i], sizeof(excode[i]), "%d", 10 + i);
		/* each waits for a file the last one creates: they overlap */
		snprintf(
			script[i], sizeof(script[i]),
			"i=0; while [ ! -e /tmp/go ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; "
			"echo p%d; exit %s",
			i, excode[i]);
		char *const argv[] = {"sh", "-c", script[i], NULL};
		pr[i] = start(sb, argv, NULL, NULL, &fd[i]);
	}
	char *const go[] = {"touch", "/tmp/go", NULL};
	printf("go exit %d\n", wait_code(start(sb, go, NULL, NULL, NULL)));
	for (int i = 4; i >= 0; i--) {
		char buf[64];
		int code = wait_code(pr[i]);
		read_all(fd[i], buf, sizeof(buf));
		printf("proc %d out %s exit %d\n", i, buf, code);
	}
	char *const env[] = {"LC_FOO=bar baz", "HOME=/elsewhere", NULL};
	char *const show[] = {"sh", "-c", "echo \"$LC_FOO|$HOME|$(pwd)|$USER\"", NULL};
	int efd;
	struct moat_proc *pe = start(sb, show, env, "/tmp", &efd);
	char buf[256];
	int ecode = wait_code(pe);
	read_all(efd, buf, sizeof(buf));
	printf("env %s exit %d\n", buf, ecode);
	/* not found: an error, and the sandbox still works */
	char *const nf[] = {"no-such-command-here", NULL};
	struct moat_exec x = {.argv = nf, .fd = {-1, -1, -1}};
	struct moat_proc *dummy;
	struct moat_error e = {0};
	int k = moat_sandbox_exec(sb, &x, &dummy, &e);
	printf("notfound %d %s\n", k, e.stage);
	char *const t[] = {"true", NULL};
	printf("after exit %d\n", wait_code(start(sb, t, NULL, NULL, NULL)));
	/* a signal to one process */
	char *const sl[] = {"sleep", "30", NULL};
	struct moat_proc *ps = start(sb, sl, NULL, NULL, NULL);
	moat_proc_signal(ps, SIGTERM);
	struct moat_proc_status st;
	moat_proc_wait(ps, &st);
	printf("signaled %d exit %d\n", st.signal, st.exit_code);
	/* a per-exec time limit */
	struct moat_exec tx = {.argv = sl, .fd = {-1, -1, -1}, .timeout_ms = 200};
	struct moat_proc *pt;
	if (moat_sandbox_exec(sb, &tx, &pt, &e) < 0)
		return 1;
	moat_proc_wait(pt, &st);
	printf("timeout reason %s exit %d\n", moat_reason_name(st.reason), st.exit_code);
	destroy(sb, "s");
	moat_policy_free(p);
	return 0;
}

/* Driven from one poll() loop: two sandboxes, their processes' end and
 * output seen through moat_sandbox_fd + moat_sandbox_dispatch only. */
static int loop(void)
{
	struct moat_policy *p = policy();
	struct moat_sandbox *sb[2] = {create(p), create(p)};
	struct moat_proc *pr[2];
	int fd[2];
	char out[2][64];
	for (int i = 0; i < 2; i++) {
		char *const argv[] = {"sh", "-c",
				      i ? "sleep 0.3; echo second; exit 7" : "echo first", NULL};
		pr[i] = start(sb[i], argv, NULL, NULL, &fd[i]);
	}
	unsigned rounds = 0;
	while (!(moat_proc_done(pr[0]) && moat_proc_done(pr[1])) && rounds < 10000) {
		struct pollfd pf[2] = {{.fd = moat_sandbox_fd(sb[0]), .events = POLLIN},
				       {.fd = moat_sandbox_fd(sb[1]), .events = POLLIN}};
		if (poll(pf, 2, 5000) <= 0)
			break;
		rounds++;
		for (int i = 0; i < 2; i++)
			if (pf[i].revents && moat_sandbox_dispatch(sb[i]) < 0)
				return 1;
	}
	for (int i = 0; i < 2; i++) {
		struct moat_proc_status st;
		int k = moat_proc_status(pr[i], &st);
		read_all(fd[i], out[i], sizeof(out[i]));
		printf("loop %d done %d out %s exit %d\n", i, k == 0, out[i],
		       k == 0 ? st.exit_code : -1);
	}
	destroy(sb[1], "b");
	destroy(sb[0], "a");
	moat_policy_free(p);
	return 0;
}

/* destroy while processes run (a background one and a foreground one). */
static int destroy_running(char *marker)
{
	struct moat_policy *p = policy();
	struct moat_sandbox *sb = create(p);
	char *const bg[] = {"sh", "-c", "sleep 300 & sleep 300; :", marker, NULL};
	char *const fg[] = {"sh", "-c", "sleep 300", marker, NULL};
	start(sb, bg, NULL, NULL, NULL);
	start(sb, fg, NULL, NULL, NULL);
	printf("running\n");
	fflush(stdout);
	destroy(sb, "s");
	moat_policy_free(p);
	return 0;
}

/* The holder is SIGKILLed by the script once it printed "ready". */
static _Noreturn void hold(char *marker)
{
	struct moat_policy *p = policy();
	struct moat_sandbox *sb = create(p);
	char *const cmd[] = {"sh", "-c", "sleep 300 & exec sleep 300", marker, NULL};
	start(sb, cmd, NULL, NULL, NULL);
	printf("ready %s\n", moat_sandbox_id(sb));
	fflush(stdout);
	for (;;)
		pause();
}

/* A second sandbox created while a process of the first reads its stdin:
 * the second's init must hold nothing of the first's (the relay's end of
 * that stdin), or EOF never reaches the reader (it would end by its 5 s
 * time limit, 124). */
static int eof(void)
{
	struct moat_policy *p = policy();
	struct moat_sandbox *a = create(p);
	int in[2], out[2];
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0)
		return 1;
	char *const cat[] = {"cat", NULL};
	struct moat_exec x = {.argv = cat, .fd = {in[0], out[1], 2}, .timeout_ms = 5000};
	struct moat_proc *pr;
	struct moat_error e = {0};
	if (moat_sandbox_exec(a, &x, &pr, &e) < 0)
		return 1;
	close(in[0]);
	close(out[1]);
	struct moat_sandbox *b = create(p);
	(void)!write(in[1], "through\n", 8);
	close(in[1]);
	int code = wait_code(pr);
	char buf[64];
	read_all(out[0], buf, sizeof(buf));
	printf("eof %s exit %d\n", buf, code);
	destroy(b, "b");
	destroy(a, "a");
	moat_policy_free(p);
	return 0;
}

/* The file operations: write, read, stat, list, remove, and their errors. */
static int files(void)
{
	struct moat_policy *p = policy();
	struct moat_sandbox *sb = create(p);
	struct moat_error e = {0};
	char *data = NULL;
	size_t len = 0;
	bool cut = false;
	const char body[] = "hello\nworld\t\x01\n";
	printf("write %d\n",
	       moat_sandbox_write_file(sb, "/tmp/a file", body, sizeof(body) - 1, &e));
	int k = moat_sandbox_read_file(sb, "/tmp/a file", 1 << 20, &data, &len, &cut, &e);
	printf("read %d len %zu same %d cut %d\n", k, len,
	       k == 0 && len == sizeof(body) - 1 && memcmp(data, body, len) == 0, cut);
	free(data);
	k = moat_sandbox_read_file(sb, "/tmp/a file", 5, &data, &len, &cut, &e);
	printf("short %d len %zu cut %d\n", k, len, cut);
	free(data);
	struct moat_file_info fi;
	k = moat_sandbox_stat(sb, "/tmp/a file", &fi, &e);
	printf("stat %d type %d size %llu name %s\n", k, fi.type, (unsigned long long)fi.size,
	       fi.name);
	moat_sandbox_write_file(sb, "/tmp/b", "x", 1, &e);
	struct moat_file_info *v = NULL;
	size_t n = 0;
	k = moat_sandbox_list_dir(sb, "/tmp", &v, &n, &e);
	int seen = 0;
	for (size_t i = 0; i < n; i++)
		seen += strcmp(v[i].name, "a file") == 0 || strcmp(v[i].name, "b") == 0;
	printf("list %d seen %d\n", k, seen);
	free(v);
	printf("remove %d\n", moat_sandbox_remove(sb, "/tmp/a file", false, &e));
	data = NULL;
	printf("gone %d\n", moat_sandbox_read_file(sb, "/tmp/a file", 100, &data, &len, &cut, &e));
	printf("outside %d\n", moat_sandbox_write_file(sb, "/usr/moat-x", "x", 1, &e));
	printf("relative %d\n", moat_sandbox_write_file(sb, "tmp/x", "x", 1, &e));
	destroy(sb, "s");
	moat_policy_free(p);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* bench/lifecycle.sh: N rounds, each one exec + wait of /bin/true in one
 * ready sandbox and, side by side, one start of argv[...] (bubblewrap) as a
 * child; prints both medians and 90th percentiles in microseconds. */
static int bench(unsigned n, char **peer)
{
	struct moat_policy *p = policy();
	struct moat_sandbox *sb = create(p);
	uint64_t *t = calloc(n, sizeof(*t)), *b = calloc(n, sizeof(*b));
	char *const argv[] = {"/bin/true", NULL};
	if (!t || !b || n == 0)
		return 1;
	for (unsigned i = 0; i < n; i++) {
		uint64_t t0 = now_us();
		struct moat_exec x = {.argv = argv, .fd = {-1, -1, -1}};
		struct moat_proc *pr;
		struct moat_error e = {0};
		if (moat_sandbox_exec(sb, &x, &pr, &e) < 0 || wait_code(pr) != 0) {
			fprintf(stderr, "exec: %s\n", e.message);
			return 1;
		}
		moat_proc_release(pr);
		t[i] = now_us() - t0;
		if (!peer || !peer[0])
			continue;
		t0 = now_us();
		pid_t pid = fork();
		if (pid == 0) {
			int fd = open("/dev/null", O_RDWR);
			dup2(fd, 0), dup2(fd, 1), dup2(fd, 2);
			execvp(peer[0], peer);
			_exit(127);
		}
		int st;
		if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "%s failed\n", peer[0]);
			return 1;
		}
		b[i] = now_us() - t0;
	}
	qsort(t, n, sizeof(*t), cmp_u64);
	qsort(b, n, sizeof(*b), cmp_u64);
	printf("exec_us median %llu p90 %llu\n", (unsigned long long)t[n / 2],
	       (unsigned long long)t[n * 9 / 10]);
	if (peer && peer[0])
		printf("peer_us median %llu p90 %llu\n", (unsigned long long)b[n / 2],
		       (unsigned long long)b[n * 9 / 10]);
	free(t);
	free(b);
	destroy(sb, "s");
	moat_policy_free(p);
	return 0;
}

/* PSS (kB) of a process from smaps_rollup, 0 if unreadable. */
static unsigned long pss_kb(pid_t pid)
{
	char path[64], line[256];
	unsigned long v = 0;
	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Pss: %lu kB", &v) == 1)
			break;
	fclose(f);
	return v;
}

/* The memory of N idle sandboxes held by this process: its own PSS growth
 * plus each child's (the inits; no helper runs without --net allow), and the
 * time it took to create all N. Unprivileged, the inits are not dumpable and
 * their smaps_rollup is not the user's to read: with LC_IDLE_WAIT set this
 * prints their pids ("idle_pids ...") and waits for a line on stdin before
 * destroying them, so that root can read their PSS meanwhile
 * (bench/lifecycle.sh). */
static int idle(unsigned n)
{
	struct moat_policy *p = policy();
	struct moat_sandbox **sb = calloc(n, sizeof(*sb));
	if (!sb)
		return 1;
	unsigned long before = pss_kb(getpid());
	uint64_t t0 = now_us();
	for (unsigned i = 0; i < n; i++)
		sb[i] = create(p);
	uint64_t create_us = now_us() - t0;
	printf("idle created %u in_us %llu per_us %llu\n", n, (unsigned long long)create_us,
	       (unsigned long long)(n ? create_us / n : 0));
	unsigned long self = pss_kb(getpid()), kids = 0, nk = 0;
	char path[64], buf[65536], pids[65536];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)getpid(), (int)getpid());
	FILE *f = fopen(path, "re");
	size_t len = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	if (f)
		fclose(f);
	buf[len] = '\0';
	memcpy(pids, buf, len + 1);
	unsigned long unreadable = 0;
	for (char *tok = strtok(buf, " \n"); tok; tok = strtok(NULL, " \n")) {
		unsigned long k = pss_kb((pid_t)atoi(tok));
		kids += k;
		unreadable += k == 0;
		nk++;
	}
	if (unreadable || nk != n) {
		/* e.g. unprivileged: the inits are not dumpable, their smaps not ours */
		printf("idle sandboxes %u children %lu unreadable %lu supervisor_kb %lu (%lu -> "
		       "%lu)\n",
		       n, nk, unreadable, self > before ? self - before : 0, before, self);
		if (getenv("LC_IDLE_WAIT")) {
			for (char *q = pids; *q; q++)
				if (*q == '\n')
					*q = ' ';
			printf("idle_pids %s\n", pids);
			char line[16];
			if (!fgets(line, sizeof(line), stdin))
				fprintf(stderr, "idle: no line on stdin\n");
		}
		for (unsigned i = 0; i < n; i++)
			destroy(sb[i], "s");
		free(sb);
		moat_policy_free(p);
		return 0;
	}
	printf("idle sandboxes %u children %lu supervisor_kb %lu (%lu -> %lu) inits_kb %lu per_sandbox_kb %lu\n",
	       n, nk, self > before ? self - before : 0, before, self, kids,
	       (self + kids > before ? self + kids - before : 0) / n);
	for (unsigned i = 0; i < n; i++)
		destroy(sb[i], "s");
	free(sb);
	moat_policy_free(p);
	return 0;
}

/* The number of open fds of this process. */
static unsigned count_fds(void)
{
	unsigned n = 0;
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	while (d && (de = readdir(d)))
		n += de->d_name[0] != '.';
	if (d)
		closedir(d);
	return n ? n - 1 : 0; /* not the directory's own fd */
}

/* This process's children (pids into v, at most max); their number. */
static unsigned children(pid_t *v, unsigned max)
{
	char path[64], buf[8192];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)getpid(), (int)getpid());
	FILE *f = fopen(path, "re");
	size_t len = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	if (f)
		fclose(f);
	buf[len] = '\0';
	unsigned n = 0;
	for (char *tok = strtok(buf, " \n"); tok; tok = strtok(NULL, " \n"))
		if (n < max)
			v[n++] = (pid_t)atoi(tok);
	return n;
}

/* The real uid of pid on the host, or -1. */
static long host_uid(pid_t pid)
{
	char path[64], line[256];
	long uid = -1;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Uid: %ld", &uid) == 1)
			break;
	if (f)
		fclose(f);
	return uid;
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return x < y ? -1 : x > y;
}

/* Processes on the host whose real uid is one of the n (sorted) uids. */
static unsigned procs_of_uids(const long *uids, unsigned n)
{
	unsigned found = 0;
	DIR *d = opendir("/proc");
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		long u = host_uid((pid_t)atoi(de->d_name));
		found += u >= 0 && bsearch(&u, uids, n, sizeof(*uids), cmp_long) != NULL;
	}
	if (d)
		closedir(d);
	return found;
}

/* Leak test (issue 15): N sequential create / exec / destroy cycles. Each
 * cycle's command writes through a relay pipe and leaves a process marked
 * with mark running in the background; the host uid of each
 * sandbox's init is noted. At the end this process must hold the fds it
 * started with and no child, and no process may run as a uid a sandbox had
 * (root mode: one per sandbox); tests/lib/leaks.sh checks the rest (mounts,
 * cgroups, records, temporaries) by the run ids printed. */
static int cycles(unsigned n, char *mark)
{
	struct moat_policy *p = policy();
	/* a process left in the background, marked: destroy must kill it */
	char *const argv[] = {"/bin/sh", "-c",
			      "(sleep 100; :) </dev/null >/dev/null 2>&1 & echo ok", mark, NULL};
	unsigned fds0 = count_fds(), bad = 0, nuid = 0, ctl_uid = 0, ctl_kids = 0;
	long *uids = calloc(n ? n : 1, sizeof(*uids));
	uint64_t *t = calloc(n ? n : 1, sizeof(*t)), t_all = now_us();
	if (!t || !uids)
		return 1;
	for (unsigned i = 0; i < n; i++) {
		uint64_t t0 = now_us();
		struct moat_sandbox *sb = create(p);
		pid_t kids[4];
		if (children(kids, 4) >= 1) {
			long u = host_uid(kids[0]);
			if (u >= 0 && (uid_t)u != getuid())
				uids[nuid++] = u; /* root mode: the sandbox's own host uid */
		}
		int out;
		char buf[64];
		struct moat_proc *pr = start(sb, argv, NULL, NULL, &out);
		int code = wait_code(pr); /* drives the relay: a few bytes fit the pipe */
		read_all(out, buf, sizeof(buf));
		moat_proc_release(pr);
		bad += code != 0 || strcmp(buf, "ok") != 0;
		if (i == 0) { /* positive control: the checks below see a live sandbox */
			ctl_kids = children(kids, 4);
			ctl_uid = nuid ? procs_of_uids(uids, 1) : 0;
		}
		struct moat_status st;
		struct moat_error e = {0};
		if (moat_sandbox_destroy(sb, &st, &e) < 0) {
			fprintf(stderr, "destroy: %s\n", e.message);
			return 1;
		}
		t[i] = now_us() - t0;
		printf("cycle %u %s\n", i, st.run_id);
	}
	t_all = now_us() - t_all;
	pid_t kids[16];
	unsigned nk = children(kids, 16), left = 0, distinct = 0;
	qsort(uids, nuid, sizeof(*uids), cmp_long);
	for (unsigned k = 0; k < nuid; k++)
		if (k == 0 || uids[k] != uids[distinct - 1])
			uids[distinct++] = uids[k];
	nuid = distinct;
	left = procs_of_uids(uids, nuid);
	if (n)
		qsort(t, n, sizeof(*t), cmp_u64);
	printf("cycles %u failed %u\n", n, bad);
	printf("fds %u %u\n", fds0, count_fds());
	printf("children %u\n", nk);
	printf("uids %u processes %u\n", nuid, left);
	printf("control children %u uid_processes %u\n", ctl_kids, ctl_uid);
	printf("cycle_us median %llu p90 %llu total_ms %llu\n",
	       (unsigned long long)(n ? t[n / 2] : 0), (unsigned long long)(n ? t[n * 9 / 10] : 0),
	       (unsigned long long)(t_all / 1000));
	free(t);
	free(uids);
	moat_policy_free(p);
	return 0;
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 3 && strcmp(argv[1], "two") == 0)
		return two(argv[2]);
	if (argc >= 2 && strcmp(argv[1], "concurrent") == 0)
		return concurrent();
	if (argc >= 3 && strcmp(argv[1], "bench") == 0)
		return bench((unsigned)strtoul(argv[2], NULL, 10), argv + 3);
	if (argc >= 3 && strcmp(argv[1], "idle") == 0)
		return idle((unsigned)strtoul(argv[2], NULL, 10));
	if (argc >= 3 && strcmp(argv[1], "cycles") == 0)
		return cycles((unsigned)strtoul(argv[2], NULL, 10),
			      argc >= 4 ? argv[3] : "moat-cycle");
	if (argc >= 2 && strcmp(argv[1], "eof") == 0)
		return eof();
	if (argc >= 2 && strcmp(argv[1], "files") == 0)
		return files();
	if (argc >= 2 && strcmp(argv[1], "loop") == 0)
		return loop();
	if (argc >= 3 && strcmp(argv[1], "destroy-running") == 0)
		return destroy_running(argv[2]);
	if (argc >= 3 && strcmp(argv[1], "hold") == 0)
		hold(argv[2]);
	fprintf(stderr,
		"usage: lifecycle_probe two ab|ba | concurrent | loop | cycles N [MARK] | "
		"destroy-running MARK | hold MARK\n");
	return 2;
}
