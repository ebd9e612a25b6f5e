/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench/sysload: a syscall-heavy workload for bench/syscalls.sh.
 *
 *   sysload MODE DIR COUNT
 *
 * MODE files: COUNT times create DIR/f<i%64>, write 4 KiB, close, reopen,
 *             read it back, fstat, close, and unlink every 64th file;
 *             every path goes through open (Landlock's path hooks).
 * MODE plain: COUNT rounds of cheap syscalls that touch no path
 *             (getppid, clock_gettime via syscall, read/write on a pipe):
 *             the seccomp filter's cost on allowed calls.
 * MODE exec:  COUNT times fork + execve("/bin/true") + wait.
 * Exit status 0 when every call succeeded.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int fail(const char *what)
{
	fprintf(stderr, "sysload: %s: %s\n", what, strerror(errno));
	return 1;
}

static int do_files(const char *dir, long count)
{
	static char buf[4096];
	char path[4096];
	struct stat st;

	memset(buf, 'x', sizeof(buf));
	for (long i = 0; i < count; i++) {
		int fd;

		snprintf(path, sizeof(path), "%s/f%ld", dir, i % 64);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0)
			return fail("open for writing");
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			return fail("write");
		close(fd);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return fail("open for reading");
		if (read(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			return fail("read");
		if (fstat(fd, &st) < 0)
			return fail("fstat");
		close(fd);
		if (i % 64 == 63 && unlink(path) < 0)
			return fail("unlink");
	}
	for (long i = 0; i < 64 && i < count; i++) {
		snprintf(path, sizeof(path), "%s/f%ld", dir, i);
		(void)unlink(path);
	}
	return 0;
}

static int do_plain(long count)
{
	struct timespec ts;
	int p[2];
	char c = 'x';

	if (pipe2(p, O_CLOEXEC) < 0)
		return fail("pipe2");
	for (long i = 0; i < count; i++) {
		if (syscall(SYS_getppid) < 0)
			return fail("getppid");
		if (syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts) < 0)
			return fail("clock_gettime");
		if (write(p[1], &c, 1) != 1 || read(p[0], &c, 1) != 1)
			return fail("pipe");
	}
	return 0;
}

static int do_exec(long count)
{
	for (long i = 0; i < count; i++) {
		int status;
		pid_t pid = fork();

		if (pid < 0)
			return fail("fork");
		if (pid == 0) {
			char *const argv[] = {(char *)"true", NULL};

			execve("/bin/true", argv, (char *const[]){NULL});
			_exit(127);
		}
		if (waitpid(pid, &status, 0) < 0)
			return fail("waitpid");
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			fprintf(stderr, "sysload: /bin/true failed\n");
			return 1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	long count;

	if (argc != 4) {
		fprintf(stderr, "usage: sysload files|plain|exec DIR COUNT\n");
		return 2;
	}
	count = strtol(argv[3], NULL, 10);
	if (count < 1 || count > 100000000) {
		fprintf(stderr, "sysload: COUNT out of range\n");
		return 2;
	}
	if (strcmp(argv[1], "files") == 0)
		return do_files(argv[2], count);
	if (strcmp(argv[1], "plain") == 0)
		return do_plain(count);
	if (strcmp(argv[1], "exec") == 0)
		return do_exec(count);
	fprintf(stderr, "sysload: unknown mode %s\n", argv[1]);
	return 2;
}
