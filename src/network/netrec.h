/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Network attempts under --net none (issue 13, item 7). The seccomp listener
 * reads connect/sendto/sendmsg/sendmmsg destinations (seccomp.c, record_net);
 * this file turns one into an attempt (protocol, address, port, the name of a
 * DNS query, the flag that would allow it), and records it: the first attempt
 * per destination as a `net` event with "denied":true and reason
 * "network-none" plus an alert, later ones only counted, at most
 * MOAT_NETREC_MAX_DESTS destinations (then one `limit` event). The kernel has
 * already refused each of them (the sandbox's network namespace has only
 * loopback); this only records.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernel/seccomp.h"

#define MOAT_NETREC_MAX_DESTS 256 /* distinct destinations recorded per run */

struct moat_netrec_attempt {
	char proto[12]; /* "tcp", "udp", "icmp", "raw", "mptcp", "unknown" */
	char addr[48]; /* numeric, v4-mapped IPv6 shown as IPv4; "" for a connected socket */
	uint16_t port; /* 0 if unknown */
	char name[256]; /* the DNS query's name, "" when not a DNS query */
	char qtype[12]; /* "A", "AAAA", … or the number; "" when not DNS */
	char suggest[300]; /* the flag that would allow it: --allow-host NAME, --allow-cidr A/32 */
	char key[300]; /* what counts as one destination */
};

/* Describe destination i of a NET event. Returns 0, or -ENOENT when it is
 * not an attempt to leave the sandbox (loopback other than a DNS query,
 * another family, an address the kernel ignores). Pure. */
int moat_netrec_describe(const struct moat_seccomp_event *ev, unsigned i,
			 struct moat_netrec_attempt *ret);

struct moat_netrec;
struct moat_audit;
struct moat_netrec *moat_netrec_new(void);
struct moat_netrec *moat_netrec_free(struct moat_netrec *n);

/* Record the attempts of one NET event into a (may be NULL). Returns how many
 * attempts it held. */
unsigned moat_netrec_record(struct moat_netrec *n, struct moat_audit *a,
			    const struct moat_seccomp_event *ev);
/* The most frequent destinations into out[0..max), the most frequent
 * first (moat_status.top_denied). Returns how many it wrote. */
struct moat_denied;
unsigned moat_netrec_top(struct moat_netrec *n, struct moat_denied *out, unsigned max);
