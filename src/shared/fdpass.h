/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Passing file descriptors over a unix socket (SCM_RIGHTS). Used to hand the
 * listening sockets created inside the sandbox's network namespace to the
 * supervisor and from there to the proxy worker.
 */
#pragma once

#include <stddef.h>

#define MOAT_FDPASS_MAX 16

/* Send n_fds descriptors (1..MOAT_FDPASS_MAX) in one message. The descriptors
 * stay owned by the caller. Returns 0 or -errno. */
int moat_fds_send(int sock, const int *fds, unsigned n_fds);

/* Receive one message of moat_fds_send(): at most max_fds descriptors, which
 * arrive O_CLOEXEC and are owned by the caller. Returns their number (>= 1).
 * More than max_fds, a count that differs from the one announced, a truncated
 * message or EOF is an error (-EBADMSG / -EPIPE), and nothing is left open. */
int moat_fds_recv(int sock, int *ret_fds, unsigned max_fds);
