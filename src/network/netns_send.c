/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The sandbox's network setup for --net allow (see hook_net.c), in the init's
 * network child: the capture rules and listeners from moat-nft.so
 * (net_plugin.h), each listener handed to the supervisor. */
#include <errno.h>
#include <unistd.h>

#include "network/net_plugin.h"
#include "network/netns.h"
#include "policy/plan.h"
#include "sandbox/sandbox.h"
#include "shared/macro.h"

int moat_net_sandbox_setup(struct moat_init *sb)
{
	const struct moat_nft_plugin_ops *nft;
	struct moat_error e = {0};
	int arr[MOAT_NET_PLUGIN_MAX_FDS];
	unsigned n = 0;
	int k;

	/* the listeners and the capture rules are the plan's (network part) */
	const struct moat_plan_net *pn = &sb->plan->net;
	uint16_t ports[4] = {0, 0, 0, 0};
	for (unsigned i = 0; i < pn->n_listeners; i++) {
		const struct moat_plan_listener *l = &pn->listeners[i];
		if (streq(l->what, "http"))
			ports[0] = l->port;
		else if (streq(l->what, "socks5"))
			ports[1] = l->port;
		else if (streq(l->what, "transparent"))
			ports[2] = l->port;
		else if (streq(l->what, "dns"))
			ports[3] = l->port;
	}
	if (!pn->nft[0])
		return -EPROTO; /* --net allow without capture rules: never */
	nft = moat_nft_plugin_load(&e);
	if (!nft)
		return e.err ? -e.err : -ELIBBAD;
	k = nft->netns_setup(pn->nft, ports, arr, &n);
	if (k < 0)
		return k;
	if (n > MOAT_NET_PLUGIN_MAX_FDS)
		return -EPROTO;
	for (unsigned i = 0; i < n && k >= 0; i++)
		k = moat_sandbox_send_fd(sb->sock_child, MOAT_FD_NET + (int)i, arr[i]);
	for (unsigned i = 0; i < n; i++)
		if (arr[i] >= 0)
			close(arr[i]);
	return k < 0 ? k : 0;
}
