/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Shared helpers of the red-team probes (tests/redteam/probes/, one .c file each).
 *
 * A probe is a small static program that performs the attempts of one catalogue
 * entry (../shared/redteam/CATALOGUE.md) and reports each of them on stdout as
 * exactly one machine-readable line:
 *
 *     RESULT <attempt> <BLOCKED|CONTAINED|FAIL|SKIP|INCONCLUSIVE> <detail>
 *
 * e.g. "RESULT RT-008/mount BLOCKED errno=EPERM". The attempt name is stable,
 * so the runner can match the same attempt run unsandboxed (the positive
 * control) and inside moat. The probe reports what it observes and never knows
 * where it runs: the same code must say FAIL outside (the attack path works on
 * this machine) and BLOCKED inside, otherwise the test would be vacuous.
 *
 * "try-syscall" (catalogue 0.2): dangerous calls are made with a bad fd,
 * pointer or flag, so a call that reaches the kernel fails harmlessly with
 * EBADF/EFAULT/EINVAL (= FAIL: the filter did not stop it), while a call stopped
 * by the filter fails with EPERM or ENOSYS (= BLOCKED).
 *
 * Exit status: 0 nothing failed, 1 some attempt FAILed, 3 only inconclusive
 * results, 77 every attempt skipped, 2 usage error.
 * Option "--control" is accepted by every probe; probes that need a different
 * target outside the sandbox (their own child instead of pid 1, ...) read it
 * with probe_control().
 */
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static int probe_n_fail, probe_n_ok, probe_n_skip, probe_n_incon;
static bool probe_is_control;
static int probe_argc;
static char **probe_argv;

static inline bool probe_control(void)
{
	return probe_is_control;
}

/* Value of "--name VALUE" on the command line, or NULL. */
static inline const char *probe_opt(const char *name)
{
	for (int i = 1; i + 1 < probe_argc; i++)
		if (strcmp(probe_argv[i], name) == 0)
			return probe_argv[i + 1];
	return NULL;
}

static inline bool probe_flag(const char *name)
{
	for (int i = 1; i < probe_argc; i++)
		if (strcmp(probe_argv[i], name) == 0)
			return true;
	return false;
}

static inline void probe_init(int argc, char **argv)
{
	probe_argc = argc;
	probe_argv = argv;
	probe_is_control = probe_flag("--control");
	setvbuf(stdout, NULL, _IOLBF, 0);
}

static inline const char *probe_errname(int e)
{
	const char *n = e ? strerrorname_np(e) : "0";
	return n ? n : "E?";
}

__attribute__((format(printf, 3, 4))) static inline void
probe_result(const char *id, const char *cls, const char *fmt, ...)
{
	char detail[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof detail, fmt, ap);
	va_end(ap);
	/* One line per result: no newline may leak from the detail. */
	for (char *p = detail; *p; p++)
		if (*p == '\n' || *p == '\r' || *p == '\t')
			*p = ' ';
	printf("RESULT %s %s %s\n", id, cls, detail[0] ? detail : "-");
	if (strcmp(cls, "FAIL") == 0)
		probe_n_fail++;
	else if (strcmp(cls, "SKIP") == 0)
		probe_n_skip++;
	else if (strcmp(cls, "INCONCLUSIVE") == 0)
		probe_n_incon++;
	else
		probe_n_ok++;
}

#define BLOCKED(id, ...) probe_result(id, "BLOCKED", __VA_ARGS__)
#define CONTAINED(id, ...) probe_result(id, "CONTAINED", __VA_ARGS__)
#define FAILED(id, ...) probe_result(id, "FAIL", __VA_ARGS__)
#define SKIPPED(id, ...) probe_result(id, "SKIP", __VA_ARGS__)
#define INCONCL(id, ...) probe_result(id, "INCONCLUSIVE", __VA_ARGS__)

static inline bool probe_errno_in(int e, const int *set)
{
	for (; *set; set++)
		if (*set == e)
			return true;
	return false;
}

/*
 * Classifies one attempt: success is FAIL, an errno of `safe` (0-terminated)
 * is BLOCKED, any other errno means the call reached the kernel: FAIL.
 */
static inline void probe_classify(const char *id, const char *what, long rc, int err,
				  const int *safe)
{
	if (rc >= 0)
		FAILED(id, "%s succeeded (rc=%ld)", what, rc);
	else if (probe_errno_in(err, safe))
		BLOCKED(id, "%s errno=%s", what, probe_errname(err));
	else
		FAILED(id, "%s reached the kernel: errno=%s", what, probe_errname(err));
}

#define PROBE_ERRS(...) ((const int[]){__VA_ARGS__, 0})
/* The filter's answers: EPERM for denied calls, ENOSYS for feature probes. */
#define PROBE_FILTERED PROBE_ERRS(EPERM, ENOSYS)

/* TRY(id, expr, errno...): evaluate a syscall expression and classify it. */
#define TRY(id, expr, ...) \
	do { \
		errno = 0; \
		long try_rc_ = (long)(expr); \
		int try_e_ = errno; \
		probe_classify(id, #expr, try_rc_, try_e_, PROBE_ERRS(__VA_ARGS__)); \
	} while (0)

/*
 * Exit codes a probe_in_child() function may return besides 0 and -1/errno:
 * UNABLE: the attempt cannot even be made from here (an ns file cannot be
 * opened, an extra filter cannot be installed): the attacker is stopped, BLOCKED.
 * SETUP: the probe's own preparation failed: INCONCLUSIVE, never a pass.
 */
#define PROBE_CHILD_UNABLE 250
#define PROBE_CHILD_SETUP 251

/*
 * Runs fn(arg) in a forked child, so attempts that change the process (unshare,
 * personality, chroot, a filter) do not leak into the next attempt. The child
 * reports through its exit status: 0 success, otherwise the errno (< 250), one
 * of the PROBE_CHILD_* codes, or killed by a signal. Returns the raw wait status, or -1.
 */
static inline int probe_in_child(int (*fn)(void *), void *arg)
{
	int st;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		errno = 0;
		int r = fn(arg);
		_exit(r < 0 ? (errno ? errno & 0xff : 255) : r);
	}
	if (waitpid(pid, &st, 0) < 0)
		return -1;
	return st;
}

/* Classifies a probe_in_child() status like probe_classify(). */
static inline void probe_classify_child(const char *id, const char *what, int st, const int *safe)
{
	if (st == -1)
		INCONCL(id, "%s: fork/wait failed: %s", what, strerror(errno));
	else if (WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS)
		BLOCKED(id, "%s killed by SIGSYS", what);
	else if (WIFSIGNALED(st))
		INCONCL(id, "%s killed by signal %d", what, WTERMSIG(st));
	else if (WEXITSTATUS(st) == PROBE_CHILD_UNABLE)
		BLOCKED(id, "%s could not be attempted from here", what);
	else if (WEXITSTATUS(st) == PROBE_CHILD_SETUP)
		INCONCL(id, "%s: the probe's own setup failed", what);
	else
		probe_classify(id, what, WEXITSTATUS(st) ? -1 : 0, WEXITSTATUS(st), safe);
}

/* Reads up to size-1 bytes of a file into buf (NUL-terminated). -errno on error. */
static inline ssize_t probe_read_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	ssize_t n = 0, total = 0;

	if (fd < 0)
		return -errno;
	while ((size_t)total + 1 < size &&
	       (n = read(fd, buf + total, size - 1 - (size_t)total)) > 0)
		total += n;
	if (n < 0 && total == 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	close(fd);
	buf[total] = '\0';
	return total;
}

/* The value after "Key:" in a /proc/<x>/status style file, or NULL. */
static inline const char *probe_status_field(const char *text, const char *key, char *out,
					     size_t size)
{
	size_t klen = strlen(key);
	const char *p = text;

	while (p && *p) {
		if (strncmp(p, key, klen) == 0 && p[klen] == ':') {
			p += klen + 1;
			while (*p == ' ' || *p == '\t')
				p++;
			size_t n = strcspn(p, "\n");
			if (n >= size)
				n = size - 1;
			memcpy(out, p, n);
			out[n] = '\0';
			return out;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return NULL;
}

static inline int probe_done(void)
{
	printf("SUMMARY ok=%d fail=%d skip=%d inconclusive=%d\n", probe_n_ok, probe_n_fail,
	       probe_n_skip, probe_n_incon);
	if (probe_n_fail)
		return 1;
	if (probe_n_incon)
		return 3;
	if (probe_n_skip && !probe_n_ok)
		return 77;
	return 0;
}

/* Calls fn(value) for every "--name VALUE" on the command line. */
static inline void probe_each_opt(const char *name, void (*fn)(const char *))
{
	for (int i = 1; i + 1 < probe_argc; i++)
		if (strcmp(probe_argv[i], name) == 0)
			fn(probe_argv[++i]);
}

/* Forks a child that just waits to be killed; a stand-in target of our own. */
static inline pid_t probe_sleeper(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		for (;;)
			pause();
	}
	return pid;
}
