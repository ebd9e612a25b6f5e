/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The sandbox's network namespace (--net allow and --net none).
 *
 * Called by the sandbox's init INSIDE its new user+network namespace while it
 * still holds its namespace capabilities (before they are dropped). Nothing is
 * shelled out: links, addresses and routes go through a raw NETLINK_ROUTE
 * socket, the ruleset through libnftables.
 *
 * After moat_netns_setup() the namespace has only `lo`, with 127.0.0.1/8,
 * ::1, MOAT_NETNS_SRC4/32 and MOAT_NETNS_SRC6/128, default routes over lo, and
 * the nftables table `inet moat`:
 *   - nat/output: every TCP connection to a non-loopback address (IPv4 and
 *     IPv6) is redirected to the transparent port on 127.0.0.1 / ::1;
 *   - filter/output: loopback traffic passes; everything else (UDP, ICMP, raw,
 *     SCTP, …) is counted, logged to nflog group MOAT_NETNS_NFLOG_GROUP and
 *     dropped, so the sender gets EPERM at once instead of a hang.
 * The listening sockets are created in the namespace and returned; whoever
 * holds them later (the proxy worker in the host namespace) serves the sandbox.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#define MOAT_NETNS_SRC4 "198.18.0.1"
#define MOAT_NETNS_SRC6 "2001:2::1" /* RFC 5180 benchmarking range, never routed */
#define MOAT_NETNS_DNS4 "127.0.0.53"
#define MOAT_NETNS_NFLOG_GROUP 7
/* --isolation vm with --net allow (backend_vm.c, docs/ISOLATION.md): the
 * tap in the holder's namespace (its address the guest's gateway, proxy and
 * DNS server) and the guest's own address (a /32, the gateway on-link) */
#define MOAT_NETNS_VM_TAP "moat0"
#define MOAT_NETNS_VM_HOST4 "10.0.2.2"
#define MOAT_NETNS_VM_GUEST4 "10.0.2.15"

struct moat_netns_opts {
	uint16_t http_port; /* 0 = 3128, on 127.0.0.1 */
	uint16_t socks_port; /* 0 = 1080, on 127.0.0.1 */
	uint16_t transparent_port; /* 0 = 3129, on 127.0.0.1 and [::1] */
	uint16_t dns_port; /* 0 = 53, on 127.0.0.53 (UDP and TCP) */
	bool no_nflog; /* do not create the nflog socket (fds->nflog = -1) */
	/* the nftables capture rules to load (the plan's, plan.h); NULL: the
	 * same rules for transparent_port (moat_plan_nft_ruleset) */
	const char *ruleset;
};

/* Every descriptor, in the order they travel over the socketpair. */
struct moat_netns_fds {
	int http; /* TCP listener 127.0.0.1:3128 */
	int socks; /* TCP listener 127.0.0.1:1080 */
	int transparent4; /* TCP listener 127.0.0.1:3129 (IPv4 redirect target) */
	int transparent6; /* TCP listener [::1]:3129 (IPv6 redirect target) */
	int dns_udp; /* UDP 127.0.0.53:53 */
	int dns_tcp; /* TCP listener 127.0.0.53:53 */
	int nflog; /* NETLINK_NETFILTER bound to the nflog group, or -1 */
};
#define MOAT_NETNS_N_FDS 7

/* All fields -1. */
void moat_netns_fds_init(struct moat_netns_fds *fds);
/* Close every open fd and reset it to -1. */
void moat_netns_fds_close(struct moat_netns_fds *fds);
/* To and from an array (for moat_fds_send/recv), in field order; a missing
 * nflog socket (the last field) is simply not sent. to_array returns the count
 * (6 or 7); from_array takes ownership of the n descriptors and returns 0, or
 * -EBADMSG (closing them) when n is not 6 or 7. */
unsigned moat_netns_fds_to_array(const struct moat_netns_fds *fds, int ret_array[MOAT_NETNS_N_FDS]);
int moat_netns_fds_from_array(const int *array, unsigned n, struct moat_netns_fds *ret);

/* Full setup for --net allow (see above). On success *ret owns the new
 * descriptors (all O_CLOEXEC, non-blocking). On failure nothing is left open
 * and the namespace may be half configured: the caller must fail the run. */
int moat_netns_setup(const struct moat_netns_opts *o, struct moat_netns_fds *ret);
/* In the sandbox's network namespace, with its capabilities: moat_netns_setup
 * (moat-nft.so) and each listener sent to the supervisor (netns_send.c). */
struct moat_init;
int moat_net_sandbox_setup(struct moat_init *sb);

/* --net none: only bring `lo` up. */
int moat_netns_setup_loopback(void);
