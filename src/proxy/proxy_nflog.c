/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* NFLOG: packets the sandbox's ruleset dropped (UDP, ICMP, ...), each one event,
 * at most NFLOG_EVENTS_PER_TICK per tick and a count of the rest. */
#include "proxy/proxy_int.h"

#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_log.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/ip6.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "proxy/event.h"

static void nflog_packet(struct proxy *p, const uint8_t *pl, size_t len)
{
	struct moat_proxy_event e = {.reason = "dropped", .proto = "ip"};
	struct sockaddr_storage ss;
	char a[MOAT_ADDR_STRLEN];
	uint8_t proto = 0;
	size_t hl = 0;

	memset(&ss, 0, sizeof(ss));
	if (len >= sizeof(struct iphdr) && (pl[0] >> 4) == 4) {
		const struct iphdr *ip = (const void *)pl;
		ss.ss_family = AF_INET;
		memcpy(&((struct sockaddr_in *)&ss)->sin_addr, &ip->daddr, 4);
		proto = ip->protocol;
		hl = (size_t)ip->ihl * 4;
	} else if (len >= sizeof(struct ip6_hdr) && (pl[0] >> 4) == 6) {
		const struct ip6_hdr *ip6 = (const void *)pl;
		ss.ss_family = AF_INET6;
		memcpy(&((struct sockaddr_in6 *)&ss)->sin6_addr, &ip6->ip6_dst, 16);
		proto = ip6->ip6_nxt; /* extension headers are not followed */
		hl = sizeof(struct ip6_hdr);
	} else {
		return;
	}
	if (moat_addr_format((struct sockaddr *)&ss, false, a, sizeof(a)) > 0)
		e.addr = a;
	if (proto == IPPROTO_UDP || proto == IPPROTO_TCP) {
		e.proto = proto == IPPROTO_UDP ? "udp" : "tcp";
		if (hl + 4 <= len)
			e.port = (uint16_t)(pl[hl + 2] << 8 | pl[hl + 3]);
	} else if (proto == IPPROTO_ICMP || proto == IPPROTO_ICMPV6) {
		e.proto = "icmp";
	}
	(void)moat_proxy_event_write(p->event_fd, &e);
}

void moat_proxy_on_nflog(struct moat_loop *l, int fd, uint32_t events, void *data)
{
	struct proxy *p = data;
	uint8_t buf[8192] __attribute__((aligned(NLMSG_ALIGNTO)));

	for (int i = 0; i < ACCEPT_BATCH; i++) {
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n <= 0)
			return;
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n);
		     h = NLMSG_NEXT(h, n)) {
			size_t off = NLMSG_LENGTH(sizeof(struct nfgenmsg));
			if (h->nlmsg_type != ((NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_PACKET))
				continue;
			if (p->nflog_budget == 0) {
				p->nflog_suppressed++;
				continue;
			}
			p->nflog_budget--;
			while (off + sizeof(struct nlattr) <= h->nlmsg_len) {
				const struct nlattr *a = (const void *)((const uint8_t *)h + off);
				if (a->nla_len < sizeof(*a) || off + a->nla_len > h->nlmsg_len)
					break;
				if ((a->nla_type & NLA_TYPE_MASK) == NFULA_PAYLOAD)
					nflog_packet(p, (const uint8_t *)a + NLA_HDRLEN,
						     a->nla_len - NLA_HDRLEN);
				off += NLA_ALIGN(a->nla_len);
			}
		}
	}
}

void moat_proxy_nflog_tick(struct proxy *p)
{
	p->nflog_budget = NFLOG_EVENTS_PER_TICK;
	if (p->nflog_suppressed) {
		struct moat_proxy_event e = {.proto = "ip", .reason = "dropped"};
		char m[64];
		snprintf(m, sizeof(m), "%u more not logged", p->nflog_suppressed);
		e.rule = m;
		(void)moat_proxy_event_write(p->event_fd, &e);
		p->nflog_suppressed = 0;
	}
}
