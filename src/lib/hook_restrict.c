/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The kernel restriction layers applied last in the sandbox: Landlock, seccomp. */
#include "lib/hooks.h"
#include "lib/sandbox.h"

int moat_hook_restrict(struct moat_sandbox *sb, int *ret_notify_fd)
{
	(void)sb;
	*ret_notify_fd = -1;
	return 0;
}
