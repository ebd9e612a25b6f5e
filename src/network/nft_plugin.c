/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * moat-nft.so (see net_plugin.h): the capture rules and listeners of the
 * sandbox's network namespace (netns.c, libnftables), for the sandbox
 * init's network child (netns_send.c). It exports only moat_nft_plugin_v2().
 */
#include "network/net_plugin.h"

#include "network/netns.h"

_Static_assert(MOAT_NET_PLUGIN_MAX_FDS == MOAT_NETNS_N_FDS, "listener count");

static int netns_setup(const char *ruleset, const uint16_t ports[4],
		       int ret_fds[MOAT_NET_PLUGIN_MAX_FDS], unsigned *ret_n)
{
	struct moat_netns_fds f;
	struct moat_netns_opts o = {.http_port = ports[0],
				    .socks_port = ports[1],
				    .transparent_port = ports[2],
				    .dns_port = ports[3],
				    .ruleset = ruleset};
	int k = moat_netns_setup(&o, &f);

	if (k < 0)
		return k;
	/* the array owns them now */
	*ret_n = moat_netns_fds_to_array(&f, ret_fds);
	return 0;
}

static const struct moat_nft_plugin_ops ops = {
	.abi_version = MOAT_NET_PLUGIN_ABI_VERSION,
	.size = sizeof(struct moat_nft_plugin_ops),
	.abi = MOAT_NET_PLUGIN_ABI,
	.netns_setup = netns_setup,
};

__attribute__((visibility("default"))) const struct moat_nft_plugin_ops *moat_nft_plugin_v2(void)
{
	return &ops;
}

/* What the loader reads before clone, without loading this file. */
__attribute__((section(".moat_abi"), used)) static const char abi_marker[] = MOAT_NET_PLUGIN_ABI;
