/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Netlink requests by hand (see netlink.h). */
#include "network/netlink.h"

#include <errno.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <string.h>
#include <sys/socket.h>

#include "shared/macro.h"

void *moat_nl_begin(struct moat_nl_req *r, uint16_t type, uint16_t flags, size_t hdr_len)
{
	memset(r->buf, 0, sizeof(r->buf));
	r->h = (struct nlmsghdr *)r->buf;
	r->h->nlmsg_len = NLMSG_LENGTH(hdr_len);
	r->h->nlmsg_type = type;
	r->h->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
	r->h->nlmsg_seq = 1;
	return NLMSG_DATA(r->h);
}

int moat_nl_attr(struct moat_nl_req *r, uint16_t type, const void *data, size_t len)
{
	size_t off = NLMSG_ALIGN(r->h->nlmsg_len);
	struct rtattr *a;

	if (off + RTA_SPACE(len) > sizeof(r->buf))
		return -ENOBUFS;
	a = (struct rtattr *)(r->buf + off);
	a->rta_type = type;
	a->rta_len = (unsigned short)RTA_LENGTH(len);
	memcpy(RTA_DATA(a), data, len);
	r->h->nlmsg_len = (uint32_t)(off + RTA_SPACE(len));
	return 0;
}

int moat_nl_talk(int fd, struct moat_nl_req *r)
{
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	char buf[1024];

	if (sendto(fd, r->buf, r->h->nlmsg_len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return negerrno();
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return negerrno();
		if (n == 0)
			return -EPROTO;
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n);
		     h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(h);
				return e->error == -EEXIST ? 0 : e->error;
			}
			if (h->nlmsg_type == NLMSG_DONE)
				return 0;
		}
	}
}

int moat_rtnl_open(void)
{
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	return fd < 0 ? negerrno() : fd;
}

int moat_rtnl_link_up(int nl, unsigned ifindex)
{
	struct moat_nl_req r;
	struct ifinfomsg *ifi = moat_nl_begin(&r, RTM_NEWLINK, 0, sizeof(*ifi));

	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = (int)ifindex;
	ifi->ifi_flags = IFF_UP;
	ifi->ifi_change = IFF_UP;
	return moat_nl_talk(nl, &r);
}

int moat_rtnl_addr_add(int nl, unsigned ifindex, int family, const void *addr, unsigned char prefix)
{
	struct moat_nl_req r;
	struct ifaddrmsg *ifa =
		moat_nl_begin(&r, RTM_NEWADDR, NLM_F_CREATE | NLM_F_REPLACE, sizeof(*ifa));
	size_t len = family == AF_INET ? 4 : 16;
	int k;

	ifa->ifa_family = (unsigned char)family;
	ifa->ifa_prefixlen = prefix;
	ifa->ifa_scope = RT_SCOPE_UNIVERSE;
	ifa->ifa_index = ifindex;
	if (family == AF_INET6)
		ifa->ifa_flags = IFA_F_NODAD;
	if ((k = moat_nl_attr(&r, IFA_LOCAL, addr, len)) < 0 ||
	    (k = moat_nl_attr(&r, IFA_ADDRESS, addr, len)) < 0)
		return k;
	return moat_nl_talk(nl, &r);
}

int moat_rtnl_default_route(int nl, unsigned ifindex, int family, const void *gw, const void *src)
{
	struct moat_nl_req r;
	struct rtmsg *rt =
		moat_nl_begin(&r, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_REPLACE, sizeof(*rt));
	size_t len = family == AF_INET ? 4 : 16;
	uint32_t oif = ifindex;
	int k;

	*rt = (struct rtmsg){.rtm_family = (unsigned char)family,
			     .rtm_table = RT_TABLE_MAIN,
			     .rtm_protocol = RTPROT_BOOT,
			     .rtm_scope = RT_SCOPE_UNIVERSE,
			     .rtm_type = RTN_UNICAST,
			     /* a gateway on the link itself: no subnet route needed */
			     .rtm_flags = gw ? RTNH_F_ONLINK : 0};
	if ((k = moat_nl_attr(&r, RTA_OIF, &oif, sizeof(oif))) < 0 ||
	    (gw && (k = moat_nl_attr(&r, RTA_GATEWAY, gw, len)) < 0) ||
	    (src && (k = moat_nl_attr(&r, RTA_PREFSRC, src, len)) < 0))
		return k;
	return moat_nl_talk(nl, &r);
}
