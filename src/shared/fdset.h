/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The descriptors of a helper process: every process moat starts outside the
 * sandbox's own command (the proxy helper, the network set-up child, the
 * alert hooks, the resolver) holds exactly the descriptors it needs. Before it
 * runs anything else, the helper moves them to 0..n-1 and closes everything
 * above (moat_fdset_compact); a helper that can, then checks the result
 * against what it expects from the kernel's own table (moat_fdset_check),
 * and fails closed on any difference.
 */
#pragma once

#include <stddef.h>

#define MOAT_FDSET_MAX 32

enum moat_fdset_kind {
	MOAT_FDSET_NULL = 1, /* /dev/null */
	MOAT_FDSET_PIPE,
	MOAT_FDSET_SOCKET,
	MOAT_FDSET_MEMFD, /* a memfd with seals (a helper's configuration) */
};

/* Make descriptor i a duplicate of fds[i] (entries may repeat, e.g. one
 * /dev/null for 0, 1 and 2), without FD_CLOEXEC, and close every descriptor
 * >= n. Async-signal-safe (between fork and exec): no allocation. The
 * originals are closed too unless one of them is < n. 0 or -errno. */
int moat_fdset_compact(const int *fds, unsigned n);

/* The calling process holds exactly descriptors 0..n-1, descriptor i of kind
 * want[i], and no other (listed from /proc/self/fd). 0, or -EBADF with @why
 * naming the first difference, or -errno if the table cannot be read. */
int moat_fdset_check(const enum moat_fdset_kind *want, unsigned n, char *why, size_t whylen);

/* The calling process's descriptors as "FD=WHAT" words, space separated, in
 * order, where WHAT is readlink() of /proc/self/fd/FD with the inode number
 * of "socket:[N]" / "pipe:[N]" dropped ("0=/dev/null 3=pipe 5=socket
 * 7=anon_inode:[eventpoll]"), the form tests/lib/fdset.sh prints for another
 * process. Truncated output ends in "..."; 0 or -errno. */
int moat_fdset_describe(char *buf, size_t len);
