/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/integration/stdio.sh: acts on an inherited standard fd as a hostile
 * command would, to show whether the file behind it is the caller's.
 *   stdio_probe out FD   clear O_APPEND, seek to 0, truncate, punch a hole,
 *                        pwrite at 0, reopen /proc/self/fd/FD with O_TRUNC,
 *                        then write "PROBE-OUTPUT\n" to FD
 *   stdio_probe in       the same on fd 0 (reopened for writing), then seek
 *                        to the end, then copies what it can read to stdout
 *   stdio_probe lock FD  flock(FD) exclusively, say LOCKED on the other
 *                        output fd, hold it for 3 s
 * Prints nothing else: the test compares the files byte for byte.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

static void attack(int fd)
{
	char path[64];
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		(void)fcntl(fd, F_SETFL, fl & ~O_APPEND);
	(void)lseek(fd, 0, SEEK_SET);
	(void)!ftruncate(fd, 0);
	(void)fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 1 << 20);
	(void)!pwrite(fd, "CLOBBER\n", 8, 0);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	int o = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (o >= 0) {
		(void)!write(o, "REOPENED\n", 9);
		close(o);
	}
	/* a pipe: shrink the caller's */
	(void)fcntl(fd, F_SETPIPE_SZ, 4096);
}

int main(int argc, char **argv)
{
	if (argc >= 3 && strcmp(argv[1], "out") == 0) {
		int fd = atoi(argv[2]);
		attack(fd);
		(void)!write(fd, "PROBE-OUTPUT\n", 13);
		return 0;
	}
	if (argc >= 2 && strcmp(argv[1], "in") == 0) {
		char buf[4096];
		ssize_t n;
		attack(0);
		(void)lseek(0, 0, SEEK_END);
		while ((n = read(0, buf, sizeof(buf))) > 0)
			(void)!write(1, buf, (size_t)n);
		return 0;
	}
	if (argc >= 3 && strcmp(argv[1], "lock") == 0) {
		int fd = atoi(argv[2]);
		int other = fd == 1 ? 2 : 1;
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			(void)!write(other, "LOCKED\n", 7);
		else
			(void)!write(other, "NOLOCK\n", 7);
		sleep(3);
		return 0;
	}
	fprintf(stderr, "usage: stdio_probe out FD | in | lock FD\n");
	return 2;
}
