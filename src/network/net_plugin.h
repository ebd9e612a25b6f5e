/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The ABI between libmoat and its two network plugins, loaded by
 * src/network/net_loader.c for --net allow only:
 *   moat-net.so  the credential proxy's OpenSSL part (the per-run CA, the
 *                secrets' values, the upstream trust store) and the proxy
 *                helper `moat __proxy` (src/network/net_plugin.c and src/proxy)
 *   moat-nft.so  the capture rules and listeners of the sandbox's network
 *                namespace (src/network/nft_plugin.c + netns.c; libnftables)
 *
 * Each plugin exports exactly one symbol, a function returning its ops table
 * (moat_net_plugin_v2, moat_nft_plugin_v2); everything else in it is local
 * (a version script): it links its own copy of what it needs of libmoat
 * (libmoat-core-pic.a) and binds to nothing in the executable, which
 * exports no symbol. What crosses the boundary is this table, opaque handles
 * the plugin allocates, descriptors, serialized configuration (the policy's
 * "network" and "secrets" sections as JSON, parsed again by the plugin's own
 * policy parser with its limits) and the public struct moat_error: no
 * structure of the library's internals, so no structure size is part of it.
 *
 * The loader refuses a table whose abi_version, size or build string differ
 * from its own: the build string names moat's version, this ABI's number
 * and the flavour, so the test build (-DMOAT_TESTING, moat-testing and its
 * own plugins in build/test/) and the shipped build never load each other's
 * plugins. The proxy helper's configuration carries the same string.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "moat/moat.h"

#ifdef MOAT_TESTING
#define MOAT_NET_PLUGIN_FLAVOUR " testing"
#else
#define MOAT_NET_PLUGIN_FLAVOUR ""
#endif
#define MOAT_NET_PLUGIN_ABI_VERSION 6u
/* "moat-plugin 0.1.0 6" (+ " testing"); the number is ABI_VERSION's */
#define MOAT_NET_PLUGIN_ABI "moat-plugin " MOAT_VERSION " 6" MOAT_NET_PLUGIN_FLAVOUR

/* The listeners of the sandbox's network namespace (netns.h). */
#define MOAT_NET_PLUGIN_MAX_FDS 7

/* The credential proxy's state in the supervisor, owned by moat-net.so. */
struct moat_net_creds;

struct moat_net_plugin_ops {
	uint32_t abi_version; /* MOAT_NET_PLUGIN_ABI_VERSION */
	uint32_t size; /* sizeof(struct moat_net_plugin_ops) */
	const char *abi; /* MOAT_NET_PLUGIN_ABI */

	/* Before clone, for a run that needs the credential proxy: parses
	 * @policy_json (the "network" and "secrets" sections), makes the
	 * secrets' placeholders and the per-run CA named after @run_id.
	 * *ret is the plugin's; free it with creds_free. */
	int (*creds_new)(const char *policy_json, size_t len, const char *run_id,
			 struct moat_net_creds **ret, struct moat_error *err);
	/* The placeholders, to go into the sandbox's environment as NAME=VALUE
	 * (borrowed, valid until creds_free). */
	unsigned (*creds_count)(const struct moat_net_creds *c);
	const char *(*creds_name)(const struct moat_net_creds *c, unsigned i);
	const char *(*creds_placeholder)(const struct moat_net_creds *c, unsigned i);
	/* The system roots (@system_bundle) and the per-run CA into @fd (the
	 * variables that point TLS clients at it are the plan's, plan.h). */
	int (*creds_write_bundle)(const struct moat_net_creds *c, const char *system_bundle,
				  int fd);
	/* After clone, before the command can run: the secrets' values, and a
	 * check that the upstream trust store loads. */
	int (*creds_load)(struct moat_net_creds *c, struct moat_error *err);
	/* The CA and the secrets as records of the helper's configuration
	 * (net_config.h), appended to @fd; *ret_n the number written. */
	int (*creds_config)(const struct moat_net_creds *c, int fd, uint32_t *ret_n);
	/* The values and the CA key out of the supervisor (once the helper has
	 * them), the secrets' source variables out of its environment. */
	void (*creds_drop)(struct moat_net_creds *c);
	/* NULL-safe; returns NULL. */
	struct moat_net_creds *(*creds_free)(struct moat_net_creds *c);

	/* "moat __proxy": the exec'd proxy helper, with the descriptors of
	 * net_config.h. Returns its exit status. */
	int (*helper_main)(void);
};

struct moat_nft_plugin_ops {
	uint32_t abi_version; /* MOAT_NET_PLUGIN_ABI_VERSION */
	uint32_t size; /* sizeof(struct moat_nft_plugin_ops) */
	const char *abi; /* MOAT_NET_PLUGIN_ABI */
	/* In the sandbox's network namespace, with its capabilities: the
	 * capture rules @ruleset (the plan's nftables text, loaded as is), the
	 * listeners on @ports (http, socks5, transparent, dns; 0 = the
	 * default), into @ret_fds (*ret_n of them, in the order of struct
	 * moat_netns_fds, owned by the caller). */
	int (*netns_setup)(const char *ruleset, const uint16_t ports[4],
			   int ret_fds[MOAT_NET_PLUGIN_MAX_FDS], unsigned *ret_n);
};

/* The one exported symbol of each plugin. */
const struct moat_net_plugin_ops *moat_net_plugin_v2(void);
const struct moat_nft_plugin_ops *moat_nft_plugin_v2(void);

/* The loader (net_loader.c, in libmoat): each plugin file found next to the
 * executable (or in ../lib/moat/), checked (a regular file owned by root or
 * by the executable's owner, writable by nobody else), loaded through
 * /proc/self/fd and its table checked; loaded once per process. NULL with
 * @err set (stage "network") on any failure. */
const struct moat_net_plugin_ops *moat_net_plugin_load(struct moat_error *err);
const struct moat_nft_plugin_ops *moat_nft_plugin_load(struct moat_error *err);
/* Both files are there and acceptable, without loading them (before clone:
 * a clear error instead of one after it). */
int moat_net_plugins_present(struct moat_error *err);
