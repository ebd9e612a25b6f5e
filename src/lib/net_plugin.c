/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The network plugin's entry table (see net_plugin.h and src/cli/net_loader.c). */
#include "lib/net_plugin.h"

#include "lib/policy.h"
#include "lib/run.h"
#include "lib/sandbox.h"
#include "lib/supervise_net.h"

__attribute__((visibility("default"))) const struct moat_net_plugin moat_net_plugin = {
	.head = MOAT_PLUGIN_HEAD,
	.prepare = moat_net_prepare,
	.env = moat_net_env,
	.take_fd = moat_net_take_fd,
	.started = moat_net_started,
	.start = moat_net_start,
	.dispatch = moat_net_dispatch,
	.finish = moat_net_finish,
	.teardown = moat_net_teardown,
	.helper_main = moat_net_helper_main,
};
