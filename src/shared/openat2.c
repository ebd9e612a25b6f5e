/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The one openat2(2) wrapper: the struct open_how filled from the caller's
 * flags, mode and resolve bits, then the raw syscall. See openat2.h. */
#include "shared/openat2.h"

#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

long moat_openat2(int dirfd, const char *path, uint64_t flags, mode_t mode, uint64_t resolve)
{
	struct open_how how = {.flags = flags, .mode = mode, .resolve = resolve};
	return syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}
