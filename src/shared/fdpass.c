/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "shared/fdpass.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "shared/macro.h"

int moat_msg_send(int sock, const void *buf, size_t len, const int *fds, unsigned n_fds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * MOAT_FDPASS_MAX)];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = (void *)(uintptr_t)buf, .iov_len = len};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	ssize_t n;

	if (len == 0 || n_fds > MOAT_FDPASS_MAX || (n_fds && !fds))
		return -EINVAL;
	if (n_fds == 0) {
		do
			n = write(sock, buf, len);
		while (n < 0 && errno == EINTR);
	} else {
		memset(&u, 0, sizeof(u));
		msg.msg_control = u.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * n_fds);
		do
			n = sendmsg(sock, &msg, MSG_NOSIGNAL);
		while (n < 0 && errno == EINTR);
	}
	if (n < 0)
		return negerrno();
	return (size_t)n == len ? 0 : -EIO;
}

static void close_all(const int *fds, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		safe_close(fds[i]);
}

ssize_t moat_msg_recv(int sock, void *buf, size_t len, int *fds, unsigned max_fds,
		      unsigned *ret_n_fds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * MOAT_FDPASS_MAX)];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	int got[MOAT_FDPASS_MAX];
	unsigned n_got = 0;
	ssize_t n;

	*ret_n_fds = 0;
	if (len == 0 || max_fds > MOAT_FDPASS_MAX)
		return -EINVAL;
	memset(&u, 0, sizeof(u));
	msg.msg_control = u.buf;
	msg.msg_controllen = sizeof(u.buf);
	do
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return negerrno();
	/* Collect whatever arrived first, so that every path closes it. */
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		unsigned k = (unsigned)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (unsigned i = 0; i < k; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (n_got < MOAT_FDPASS_MAX)
				got[n_got++] = fd;
			else
				safe_close(fd);
		}
	}
	if ((msg.msg_flags & (MSG_CTRUNC | MSG_TRUNC)) || n_got > max_fds) {
		close_all(got, n_got);
		return -EBADMSG;
	}
	if (n_got)
		memcpy(fds, got, sizeof(int) * n_got);
	*ret_n_fds = n_got;
	return n;
}

int moat_fds_send(int sock, const int *fds, unsigned n_fds)
{
	uint8_t count = (uint8_t)n_fds;
	if (n_fds == 0 || n_fds > MOAT_FDPASS_MAX || !fds)
		return -EINVAL;
	return moat_msg_send(sock, &count, 1, fds, n_fds);
}

int moat_fds_recv(int sock, int *ret_fds, unsigned max_fds)
{
	uint8_t count = 0;
	int got[MOAT_FDPASS_MAX];
	unsigned n_got = 0;

	if (max_fds == 0 || max_fds > MOAT_FDPASS_MAX || !ret_fds)
		return -EINVAL;
	ssize_t n = moat_msg_recv(sock, &count, 1, got, max_fds, &n_got);
	if (n < 0)
		return (int)n;
	if (n == 0) {
		close_all(got, n_got);
		return -EPIPE;
	}
	if (count != n_got || n_got == 0) {
		close_all(got, n_got);
		return -EBADMSG;
	}
	memcpy(ret_fds, got, sizeof(int) * n_got);
	return (int)n_got;
}
