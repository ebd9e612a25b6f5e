/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The network plugin's part of the sandbox's network setup (see hook_net.c):
 * capture rules and listeners in the sandbox's network namespace, the
 * listeners handed to the supervisor. */
#include <errno.h>

#include "lib/netns.h"
#include "lib/sandbox.h"

int moat_net_sandbox_setup(struct moat_init *sb)
{
	struct moat_netns_fds f;
	int arr[MOAT_NETNS_N_FDS];
	unsigned n;
	int k;

	k = moat_netns_setup(NULL, &f);
	if (k < 0)
		return k;
	n = moat_netns_fds_to_array(&f, arr);
	for (unsigned i = 0; i < n && k >= 0; i++)
		k = moat_sandbox_send_fd(sb->sock_child, MOAT_FD_NET + (int)i, arr[i]);
	moat_netns_fds_close(&f);
	return k < 0 ? k : 0;
}
