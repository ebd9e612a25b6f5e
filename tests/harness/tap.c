/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The TAP runner: forks every registered test, with a timeout, and prints TAP. */
#include "tap.h"

#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_TESTS 2048
#define EXIT_SKIP 77
#define TIMEOUT_S 60

struct test {
	const char *name, *file;
	moat_tap_fn fn;
};
static struct test tests[MAX_TESTS];
static size_t n_tests;
static int skip_fd = -1;

void moat_tap_register(const char *name, const char *file, moat_tap_fn fn)
{
	if (n_tests < MAX_TESTS)
		tests[n_tests++] = (struct test){name, file, fn};
}

const char *moat_tap_dir(void)
{
	const char *d = getenv("MOAT_TEST_DIR");
	return d && *d ? d : "tests";
}

void moat_tap_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	fprintf(stdout, "#   %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stdout, fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
	_exit(1);
}

void moat_tap_skip(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > 0 && skip_fd >= 0)
		(void)!write(skip_fd, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
	fflush(stdout);
	_exit(EXIT_SKIP);
}

static void write_proc(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		moat_tap_fail(__FILE__, __LINE__, "write %s: %m", path);
	close(fd);
}

void moat_tap_enter_userns(int more_ns)
{
	char map[64];
	uid_t uid = getuid();
	gid_t gid = getgid();
	if (unshare(CLONE_NEWUSER | more_ns) < 0)
		moat_tap_fail(__FILE__, __LINE__,
			      "unshare(user|0x%x): %m (user namespaces are required by moat)",
			      (unsigned)more_ns);
	write_proc("/proc/self/setgroups", "deny");
	snprintf(map, sizeof(map), "0 %u 1", (unsigned)uid);
	write_proc("/proc/self/uid_map", map);
	snprintf(map, sizeof(map), "0 %u 1", (unsigned)gid);
	write_proc("/proc/self/gid_map", map);
}

int main(int argc, char **argv)
{
	const char *filter = argc > 1 ? argv[1] : NULL;
	unsigned n = 0, failed = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (size_t i = 0; i < n_tests; i++)
		if (!filter || strstr(tests[i].name, filter))
			n++;
	printf("1..%u\n", n);
	n = 0;
	for (size_t i = 0; i < n_tests; i++) {
		struct test *t = &tests[i];
		int pfd[2], status = 0;
		char reason[512] = "";

		if (filter && !strstr(t->name, filter))
			continue;
		n++;
		if (pipe2(pfd, O_CLOEXEC) < 0)
			return 2;
		fflush(stdout);
		pid_t pid = fork();
		if (pid < 0)
			return 2;
		if (pid == 0) {
			close(pfd[0]);
			skip_fd = pfd[1];
			alarm(TIMEOUT_S);
			t->fn();
			fflush(stdout);
			_exit(0);
		}
		close(pfd[1]);
		ssize_t r = read(pfd[0], reason, sizeof(reason) - 1);
		reason[r > 0 ? r : 0] = 0;
		close(pfd[0]);
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
			printf("ok %u - %s\n", n, t->name);
		} else if (WIFEXITED(status) && WEXITSTATUS(status) == EXIT_SKIP) {
			printf("ok %u - %s # SKIP %s\n", n, t->name, reason);
		} else {
			failed++;
			if (WIFSIGNALED(status))
				printf("#   %s: killed by signal %d%s\n", t->file, WTERMSIG(status),
				       WTERMSIG(status) == SIGALRM ? " (timeout)" : "");
			printf("not ok %u - %s\n", n, t->name);
		}
	}
	return failed ? 1 : 0;
}
