/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Network namespace setup beyond loopback: the egress proxy's capture rules. */
#include <errno.h>

#include "lib/hooks.h"
#include "lib/netns.h"
#include "lib/sandbox.h"

int moat_hook_network(struct moat_sandbox *sb)
{
	struct moat_netns_fds f;
	int arr[MOAT_NETNS_N_FDS];
	unsigned n;
	int k;

	if (sb->p->net != MOAT_NET_ALLOW)
		return 0;
	/* Still holding the namespace capabilities: routes, nftables (this
	 * allocates inside libnftables; the init is its own process, no other
	 * thread exists), listeners. Their fds go to the supervisor, which
	 * hands them to the proxy worker; the init keeps none. */
	k = moat_netns_setup(NULL, &f);
	if (k < 0) {
		errno = -k;
		return -1;
	}
	n = moat_netns_fds_to_array(&f, arr);
	for (unsigned i = 0; i < n; i++) {
		k = moat_sandbox_send_fd(sb->sock_child, MOAT_FD_NET + (int)i, arr[i]);
		if (k < 0) {
			moat_netns_fds_close(&f);
			errno = -k;
			return -1;
		}
	}
	moat_netns_fds_close(&f);
	return 0;
}
