/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The table the network plugin (moat-net.so: src/lib/net_plugin.c and the
 * network code it links) hands to the moat executable (src/cli/net_loader.c).
 * The executable refuses a table whose version or structure sizes differ
 * from its own: the two must come from the same build.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "moat/moat.h"

struct moat_run;
struct moat_sandbox;

#define MOAT_NET_PLUGIN_ABI "moat-net " MOAT_VERSION " 1"

struct moat_net_plugin {
	const char *abi;
	size_t run_size, policy_size, sandbox_size;
	int (*prepare)(struct moat_run *r);
	int (*env)(struct moat_run *r, int (*push)(struct moat_run *, const char *, const char *));
	int (*take_fd)(struct moat_run *r, int kind, int fd);
	int (*started)(struct moat_run *r);
	int (*start)(struct moat_run *r, int epfd, uint32_t tag);
	void (*dispatch)(struct moat_run *r);
	void (*finish)(struct moat_run *r);
	void (*teardown)(struct moat_run *r);
	int (*hook_network)(struct moat_sandbox *sb);
};

extern const struct moat_net_plugin moat_net_plugin;
