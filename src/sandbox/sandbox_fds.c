/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The fd hand-over between the sandbox's init (and its network child) and
 * the supervisor during set-up: one tagged fd per message (sandbox.h). A
 * leaf both sides call, so that neither calls into the other's file.
 */
#include <errno.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "sandbox/sandbox.h"
#include "shared/fdpass.h"
#include "shared/macro.h"

int moat_sandbox_send_fds(int sock, const int32_t *kinds, unsigned n, const int *fds,
			  unsigned n_fds)
{
	/* without an fd a plain write(), which never reaches the seccomp
	 * listener, whatever the policy denies (network recording watches
	 * sendmsg, a --deny-syscall may name sendto: moat_sandbox_offer_fd) */
	if (n == 0 || n > MOAT_SANDBOX_BATCH_MAX || n_fds > n || (n_fds && !fds))
		return -EINVAL;
	return moat_msg_send(sock, kinds, n * sizeof(int32_t), fds, n_fds);
}

int moat_sandbox_send_fd(int sock, int kind, int fd)
{
	int32_t k = kind;
	return moat_sandbox_send_fds(sock, &k, 1, &fd, fd >= 0 ? 1 : 0);
}

int moat_sandbox_recv_fds(int sock, int32_t *ret_kinds, int *ret_fds, unsigned *ret_n)
{
	int got[MOAT_SANDBOX_BATCH_MAX];
	unsigned n_fds = 0;
	*ret_n = 0;
	ssize_t n = moat_msg_recv(sock, ret_kinds, MOAT_SANDBOX_BATCH_MAX * sizeof(int32_t), got,
				  MOAT_SANDBOX_BATCH_MAX, &n_fds);
	if (n < 0)
		return (int)n;
	unsigned nk = (unsigned)((size_t)n / sizeof(int32_t));
	if (n == 0 || (size_t)n % sizeof(int32_t) || n_fds > nk) {
		for (unsigned i = 0; i < n_fds; i++)
			close(got[i]);
		return n == 0 ? -EPIPE : -EBADMSG;
	}
	/* the fds belong to the first n_fds kinds, in order */
	for (unsigned i = 0; i < nk; i++)
		ret_fds[i] = i < n_fds ? got[i] : -1;
	*ret_n = nk;
	return 0;
}

int moat_sandbox_offer_fd(int sock, int kind, int fd)
{
	int32_t ack = 0;
	ssize_t n;
	int k;

	/* moat takes the fd with pidfd_getfd(): it needs ptrace access, which an
	 * unprivileged moat has to a dumpable process of its own uid only. The
	 * init is dumpable for the few calls until the answer; nothing else runs
	 * in the sandbox yet. */
	if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0)
		return negerrno();
	if ((k = moat_sandbox_send_fd(sock, kind, -1)) < 0 ||
	    (k = moat_sandbox_send_fd(sock, fd, -1)) < 0)
		goto out;
	while ((n = read(sock, &ack, sizeof(ack))) < 0 && errno == EINTR)
		;
	k = n == sizeof(ack) && ack == 1 ? 0 : n == sizeof(ack) ? -EPERM : -EPROTO;
out:
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 && k >= 0)
		k = negerrno();
	return k;
}

int moat_sandbox_recv_fd(int sock, int *ret_kind, int *ret_fd)
{
	int32_t k = 0;
	unsigned n_fds = 0;
	ssize_t n = moat_msg_recv(sock, &k, sizeof(k), ret_fd, 1, &n_fds);
	if (n < 0)
		return (int)n;
	if (n == 0) {
		if (n_fds)
			close(*ret_fd);
		return -EPIPE;
	}
	if (n != sizeof(k)) {
		if (n_fds)
			close(*ret_fd);
		return -EBADMSG;
	}
	if (!n_fds)
		*ret_fd = -1;
	*ret_kind = k;
	return 0;
}
