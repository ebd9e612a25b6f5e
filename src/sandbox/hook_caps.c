/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Setup inside the sandbox that still needs its namespace capabilities. */
#include "sandbox/hooks.h"
#include "sandbox/sandbox.h"

int moat_hook_before_caps(struct moat_init *sb)
{
	(void)sb;
	return 0;
}
