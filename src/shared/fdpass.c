/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "shared/fdpass.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "shared/macro.h"

int moat_fds_send(int sock, const int *fds, unsigned n_fds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * MOAT_FDPASS_MAX)];
		struct cmsghdr align;
	} u;
	uint8_t count = (uint8_t)n_fds;
	struct iovec iov = {.iov_base = &count, .iov_len = 1};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	struct cmsghdr *c;
	ssize_t n;

	if (n_fds == 0 || n_fds > MOAT_FDPASS_MAX || !fds)
		return -EINVAL;
	memset(&u, 0, sizeof(u));
	msg.msg_control = u.buf;
	msg.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
	memcpy(CMSG_DATA(c), fds, sizeof(int) * n_fds);
	do
		n = sendmsg(sock, &msg, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return negerrno();
	return n == 1 ? 0 : -EIO;
}

static void close_all(const int *fds, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		safe_close(fds[i]);
}

int moat_fds_recv(int sock, int *ret_fds, unsigned max_fds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * MOAT_FDPASS_MAX)];
		struct cmsghdr align;
	} u;
	uint8_t count = 0;
	struct iovec iov = {.iov_base = &count, .iov_len = 1};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	int got[MOAT_FDPASS_MAX];
	unsigned n_got = 0;
	ssize_t n;

	if (max_fds == 0 || max_fds > MOAT_FDPASS_MAX || !ret_fds)
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
	if (n == 0) {
		close_all(got, n_got);
		return -EPIPE;
	}
	if ((msg.msg_flags & (MSG_CTRUNC | MSG_TRUNC)) || count != n_got || n_got == 0 ||
	    n_got > max_fds) {
		close_all(got, n_got);
		return -EBADMSG;
	}
	memcpy(ret_fds, got, sizeof(int) * n_got);
	return (int)n_got;
}
