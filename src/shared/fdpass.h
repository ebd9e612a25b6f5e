/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Passing file descriptors over a unix socket (SCM_RIGHTS). Used to hand the
 * listening sockets created inside the sandbox's network namespace to the
 * supervisor and from there to the proxy worker.
 */
#pragma once

#include <stddef.h>

#define MOAT_FDPASS_MAX 16

#include <sys/types.h>

/* The one SCM_RIGHTS primitive: a message of len bytes (>= 1) with n_fds
 * descriptors (0..MOAT_FDPASS_MAX; they stay the caller's). Without fds it
 * is a plain write(), which no seccomp listener sees (the sandbox's init
 * uses it under network recording). Returns 0 or -errno. */
int moat_msg_send(int sock, const void *buf, size_t len, const int *fds, unsigned n_fds);
/* One message: at most len bytes into buf, at most max_fds descriptors into
 * fds (O_CLOEXEC, the caller's), their number in *ret_n_fds. Returns the
 * bytes (0 at EOF). A truncated message or more descriptors than max_fds is
 * -EBADMSG, and nothing is left open. No allocation (the init uses it). */
ssize_t moat_msg_recv(int sock, void *buf, size_t len, int *fds, unsigned max_fds,
		      unsigned *ret_n_fds);

/* Send n_fds descriptors (1..MOAT_FDPASS_MAX) in one message. The descriptors
 * stay owned by the caller. Returns 0 or -errno. */
int moat_fds_send(int sock, const int *fds, unsigned n_fds);

/* Receive one message of moat_fds_send(): at most max_fds descriptors, which
 * arrive O_CLOEXEC and are owned by the caller. Returns their number (>= 1).
 * More than max_fds, a count that differs from the one announced, a truncated
 * message or EOF is an error (-EBADMSG / -EPIPE), and nothing is left open. */
int moat_fds_recv(int sock, int *ret_fds, unsigned max_fds);
