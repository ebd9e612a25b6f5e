/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Netlink requests by hand (no library: a few small messages each), shared by
 * the sandbox's network namespace (netns.c, in moat-nft.so) and the vm level's
 * link on both sides (sandbox/vm_net.c, in the core that the guest's libc-only
 * initramfs carries): a request with its attributes, sent and acknowledged,
 * and the three rtnetlink requests both make (a link up, an address, a
 * default route). Each returns 0 or -errno.
 */
#pragma once

#include <linux/netlink.h>
#include <stddef.h>
#include <stdint.h>

#define MOAT_NL_BUF 512

/* One request: its header at the start of buf. */
struct moat_nl_req {
	struct nlmsghdr *h;
	char buf[MOAT_NL_BUF];
};

/* Starts a request of type with NLM_F_REQUEST | NLM_F_ACK | flags and a
 * zeroed family header of hdr_len bytes; returns that header. */
void *moat_nl_begin(struct moat_nl_req *r, uint16_t type, uint16_t flags, size_t hdr_len);
/* Appends an attribute; -ENOBUFS if it does not fit. */
int moat_nl_attr(struct moat_nl_req *r, uint16_t type, const void *data, size_t len);
/* Sends the request and waits for its acknowledgement: 0 (an -EEXIST from
 * the kernel too, for idempotent adds), the kernel's -errno, or -EPROTO if
 * the socket ends first. */
int moat_nl_talk(int fd, struct moat_nl_req *r);

/* A NETLINK_ROUTE socket (O_CLOEXEC, the caller's to close), or -errno. */
int moat_rtnl_open(void);
/* Sets the link up. */
int moat_rtnl_link_up(int nl, unsigned ifindex);
/* Adds (or replaces) addr/prefix on the link, of family AF_INET or AF_INET6
 * (without duplicate address detection). */
int moat_rtnl_addr_add(int nl, unsigned ifindex, int family, const void *addr,
		       unsigned char prefix);
/* The default route of family over the link: through gw (on-link) if not
 * NULL, with the preferred source src if not NULL. */
int moat_rtnl_default_route(int nl, unsigned ifindex, int family, const void *gw, const void *src);
