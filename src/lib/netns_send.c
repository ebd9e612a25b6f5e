/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The network plugin's part of the sandbox's network setup (see hook_net.c):
 * capture rules and listeners in the sandbox's network namespace, the
 * listeners handed to the supervisor. */
#include <errno.h>

#include "lib/netns.h"
#include "lib/plan.h"
#include "lib/sandbox.h"
#include "shared/macro.h"

int moat_net_sandbox_setup(struct moat_init *sb)
{
	struct moat_netns_fds f;
	int arr[MOAT_NETNS_N_FDS];
	unsigned n;
	int k;

	/* the listeners and the capture rules are the plan's (network part) */
	const struct moat_plan_net *pn = &sb->plan->net;
	struct moat_netns_opts o = {.ruleset = pn->nft};
	for (unsigned i = 0; i < pn->n_listeners; i++) {
		const struct moat_plan_listener *l = &pn->listeners[i];
		if (streq(l->what, "http"))
			o.http_port = l->port;
		else if (streq(l->what, "socks5"))
			o.socks_port = l->port;
		else if (streq(l->what, "transparent"))
			o.transparent_port = l->port;
		else if (streq(l->what, "dns"))
			o.dns_port = l->port;
	}
	if (!pn->nft[0])
		return -EPROTO; /* --net allow without capture rules: never */
	k = moat_netns_setup(&o, &f);
	if (k < 0)
		return k;
	n = moat_netns_fds_to_array(&f, arr);
	for (unsigned i = 0; i < n && k >= 0; i++)
		k = moat_sandbox_send_fd(sb->sock_child, MOAT_FD_NET + (int)i, arr[i]);
	moat_netns_fds_close(&f);
	return k < 0 ? k : 0;
}
