/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Blocking I/O helpers on plain descriptors: no allocation, no stdio, so they
 * are also safe between clone and exec. */
#pragma once

#include <stddef.h>

/* Write all @len bytes of @buf to the blocking descriptor @fd, retrying after
 * EINTR and short writes. Returns 0, or -errno (-EIO if write() returns 0);
 * on error an unknown prefix of @buf may have been written. */
int moat_write_all(int fd, const void *buf, size_t len);
