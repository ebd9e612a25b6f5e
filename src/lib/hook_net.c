/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Network namespace setup beyond loopback: the egress proxy's capture rules. */
#include <errno.h>

#include "lib/hooks.h"
#include "lib/sandbox.h"

int moat_hook_network(struct moat_sandbox *sb)
{
	/* --net allow needs the egress proxy, which this build does not have yet:
	 * refuse rather than run with a network that is not what was asked. */
	if (sb->p->net == MOAT_NET_ALLOW) {
		errno = EOPNOTSUPP;
		return -1;
	}
	return 0;
}
