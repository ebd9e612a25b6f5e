/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The tables moat's two network plugins hand to the moat executable
 * (src/cli/net_loader.c):
 *   moat-net.so  the egress proxy, TLS interception, the credential proxy
 *                (src/lib/net_plugin.c, supervise_net.c and src/proxy; OpenSSL)
 *   moat-nft.so  the capture rules and listeners of the sandbox's network
 *                namespace (src/lib/nft_plugin.c + netns.c + netns_send.c;
 *                libnftables), loaded by the sandbox init's network child.
 * The executable refuses a table whose version or structure sizes differ
 * from its own: they must come from the same build.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "moat/moat.h"

struct moat_run;
struct moat_init;

/* The test build (-DMOAT_TESTING: moat-testing and its own plugins in
 * build/test/) has other structure layouts and is marked apart: the shipped
 * moat never loads a test build's plugin, nor the reverse. */
#ifdef MOAT_TESTING
#define MOAT_NET_PLUGIN_FLAVOUR " testing"
#else
#define MOAT_NET_PLUGIN_FLAVOUR ""
#endif
#define MOAT_NET_PLUGIN_ABI "moat-plugin " MOAT_VERSION " 4" MOAT_NET_PLUGIN_FLAVOUR

struct moat_plugin_head {
	const char *abi;
	size_t run_size, policy_size, sandbox_size;
};

#define MOAT_PLUGIN_HEAD \
	{ \
		.abi = MOAT_NET_PLUGIN_ABI, .run_size = sizeof(struct moat_run), \
		.policy_size = sizeof(struct moat_policy), \
		.sandbox_size = sizeof(struct moat_init) \
	}

struct moat_net_plugin {
	struct moat_plugin_head head;
	int (*prepare)(struct moat_run *r);
	int (*env)(struct moat_run *r, int (*push)(struct moat_run *, const char *, const char *));
	int (*take_fd)(struct moat_run *r, int kind, int fd);
	int (*started)(struct moat_run *r);
	int (*start)(struct moat_run *r, int epfd, uint32_t tag);
	void (*dispatch)(struct moat_run *r);
	void (*finish)(struct moat_run *r);
	void (*teardown)(struct moat_run *r);
	int (*helper_main)(void); /* "moat __proxy" */
};

struct moat_nft_plugin {
	struct moat_plugin_head head;
	int (*sandbox_setup)(struct moat_init *sb);
};

extern const struct moat_net_plugin moat_net_plugin;
extern const struct moat_nft_plugin moat_nft_plugin;
