/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The nftables plugin's entry table (see net_plugin.h and src/cli/net_loader.c). */
#include "lib/net_plugin.h"

#include "lib/netns.h"
#include "lib/policy.h"
#include "lib/run.h"
#include "lib/sandbox.h"

__attribute__((visibility("default"))) const struct moat_nft_plugin moat_nft_plugin = {
	.head = MOAT_PLUGIN_HEAD,
	.sandbox_setup = moat_net_sandbox_setup,
};
