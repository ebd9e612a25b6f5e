/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The one openat2(2) wrapper (glibc has none): an open whose path resolution
 * the caller restricts (RESOLVE_BENEATH, RESOLVE_NO_SYMLINKS, RESOLVE_IN_ROOT...). */
#pragma once

#include <stdint.h>
#include <sys/types.h>

/* openat2(dirfd, path, {flags, mode, resolve}). Returns the fd, or -1 with
 * errno set, like the syscall: it allocates nothing, so the sandbox's init may
 * call it between clone and exec. The caller owns the fd. */
long moat_openat2(int dirfd, const char *path, uint64_t flags, mode_t mode, uint64_t resolve);
