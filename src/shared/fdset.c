/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "shared/fdset.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "shared/macro.h"

int moat_fdset_compact(const int *fds, unsigned n)
{
	int tmp[MOAT_FDSET_MAX];

	if (n > MOAT_FDSET_MAX)
		return -E2BIG;
	/* First above the target range, so that no target overwrites a source
	 * still to be moved; then into place (dup2 clears FD_CLOEXEC). */
	for (unsigned i = 0; i < n; i++) {
		tmp[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, (int)n);
		if (tmp[i] < 0)
			return -errno;
	}
	for (unsigned i = 0; i < n; i++)
		if (dup2(tmp[i], (int)i) < 0)
			return -errno;
	/* close_range (5.9+): also what the caller's caller leaked to us */
	if (syscall(SYS_close_range, n, ~0U, 0) < 0)
		return -errno;
	return 0;
}

static bool is_kind(int fd, enum moat_fdset_kind k)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return false;
	switch (k) {
	case MOAT_FDSET_NULL:
		return S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3);
	case MOAT_FDSET_PIPE:
		return S_ISFIFO(st.st_mode);
	case MOAT_FDSET_SOCKET:
		return S_ISSOCK(st.st_mode);
	case MOAT_FDSET_MEMFD:
		return S_ISREG(st.st_mode) && fcntl(fd, F_GET_SEALS) > 0;
	}
	return false;
}

static const char *kind_name(enum moat_fdset_kind k)
{
	static const char *const names[] = {"?", "/dev/null", "a pipe", "a socket", "a memfd"};
	return (unsigned)k < ELEMENTSOF(names) ? names[k] : "?";
}

/* Each open descriptor of this process, in the order of the kernel's table,
 * except the directory's own; fn returns < 0 to stop. */
static int each_fd(int (*fn)(int fd, void *data), void *data)
{
	char buf[4096];
	int dfd = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	long n;
	int r = 0;

	if (dfd < 0)
		return -errno;
	while (r >= 0 && (n = syscall(SYS_getdents64, dfd, buf, sizeof(buf))) > 0) {
		for (long off = 0; r >= 0 && off < n;) {
			struct dirent64 *d = (struct dirent64 *)(buf + off);
			char *end;
			long fd;
			off += d->d_reclen;
			if (d->d_name[0] == '.')
				continue;
			errno = 0;
			fd = strtol(d->d_name, &end, 10);
			if (errno || *end || fd < 0 || fd == dfd)
				continue;
			r = fn((int)fd, data);
		}
	}
	if (n < 0 && r >= 0)
		r = -errno;
	close(dfd);
	return r;
}

struct check_ctx {
	const enum moat_fdset_kind *want;
	unsigned n, seen;
	char *why;
	size_t whylen;
};

static int check_one(int fd, void *data)
{
	struct check_ctx *c = data;

	if ((unsigned)fd >= c->n) {
		snprintf(c->why, c->whylen, "descriptor %d is open, only 0-%u may be", fd,
			 c->n - 1);
		return -EBADF;
	}
	if (!is_kind(fd, c->want[fd])) {
		snprintf(c->why, c->whylen, "descriptor %d is not %s", fd, kind_name(c->want[fd]));
		return -EBADF;
	}
	c->seen++;
	return 0;
}

int moat_fdset_check(const enum moat_fdset_kind *want, unsigned n, char *why, size_t whylen)
{
	struct check_ctx c = {.want = want, .n = n, .why = why, .whylen = whylen};
	char dummy[1];
	int r;

	if (!why || !whylen) {
		c.why = dummy;
		c.whylen = sizeof(dummy);
	}
	c.why[0] = 0;
	r = each_fd(check_one, &c);
	if (r < 0) {
		if (r != -EBADF)
			snprintf(c.why, c.whylen, "cannot list /proc/self/fd: %s", strerror(-r));
		return r;
	}
	if (c.seen != n) {
		snprintf(c.why, c.whylen, "%u of descriptors 0-%u are open", c.seen, n ? n - 1 : 0);
		return -EBADF;
	}
	return 0;
}

struct describe_ctx {
	char *buf;
	size_t len, used;
};

static int describe_one(int fd, void *data)
{
	struct describe_ctx *c = data;
	char path[64], target[256];
	ssize_t k;
	int w;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	k = readlink(path, target, sizeof(target) - 1);
	if (k < 0)
		return 0; /* closed meanwhile */
	target[k] = 0;
	if (startswith(target, "socket:[") || startswith(target, "pipe:["))
		*strchr(target, ':') = 0;
	w = snprintf(c->buf + c->used, c->len - c->used, "%s%d=%s", c->used ? " " : "", fd, target);
	if (w < 0 || (size_t)w >= c->len - c->used) {
		if (c->len >= 4)
			memcpy(c->buf + c->len - 4, "...", 4);
		return -ENOBUFS;
	}
	c->used += (size_t)w;
	return 0;
}

int moat_fdset_describe(char *buf, size_t len)
{
	struct describe_ctx c = {.buf = buf, .len = len};
	int r;

	if (!len)
		return -ENOBUFS;
	buf[0] = 0;
	r = each_fd(describe_one, &c);
	return r == -ENOBUFS ? 0 : r;
}
