/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * RT-011 netfilter and link configuration in the sandbox's own netns: an
 * nf_tables NEWTABLE batch over NETLINK_NETFILTER, and RTM_NEWADDR on lo over
 * NETLINK_ROUTE. An ACK with error 0 means the change was made (FAIL).
 */
#include <arpa/inet.h>
#include <linux/if_addr.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/socket.h>

#include "probe.h"

struct buf {
	char data[1024];
	size_t len;
};

static struct nlmsghdr *put_msg(struct buf *b, uint16_t type, uint16_t flags, uint32_t seq)
{
	struct nlmsghdr *h = (struct nlmsghdr *)(b->data + b->len);
	memset(h, 0, sizeof *h);
	h->nlmsg_len = NLMSG_HDRLEN;
	h->nlmsg_type = type;
	h->nlmsg_flags = NLM_F_REQUEST | flags;
	h->nlmsg_seq = seq;
	return h;
}

static void put(struct nlmsghdr *h, const void *data, size_t n)
{
	memcpy((char *)h + h->nlmsg_len, data, n);
	h->nlmsg_len += NLMSG_ALIGN(n);
}

static void put_attr(struct nlmsghdr *h, uint16_t type, const void *data, size_t n)
{
	struct nlattr a = {.nla_len = (uint16_t)(NLA_HDRLEN + n), .nla_type = type};
	char pad[64] = {0};
	memcpy((char *)h + h->nlmsg_len, &a, sizeof a);
	memcpy((char *)h + h->nlmsg_len + NLA_HDRLEN, data, n);
	memcpy((char *)h + h->nlmsg_len + NLA_HDRLEN + n, pad, NLA_ALIGN(n) - n);
	h->nlmsg_len += NLA_ALIGN(NLA_HDRLEN + n);
}

static void end(struct buf *b, struct nlmsghdr *h)
{
	b->len += NLMSG_ALIGN(h->nlmsg_len);
}

/* Sends b, returns the errno of the ACK for seq or of an earlier error (0 = done). */
static int talk(int fd, struct buf *b, uint32_t seq)
{
	char rx[8192];
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};

	if (sendto(fd, b->data, b->len, 0, (struct sockaddr *)&kernel, sizeof kernel) < 0)
		return errno;
	for (int tries = 0; tries < 16; tries++) {
		ssize_t n = recv(fd, rx, sizeof rx, 0);
		if (n < 0)
			return errno;
		for (struct nlmsghdr *h = (struct nlmsghdr *)rx; NLMSG_OK(h, (size_t)n);
		     h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr *e = NLMSG_DATA(h);
				if (h->nlmsg_seq == seq || e->error != 0)
					return -e->error;
			}
		}
	}
	return ETIMEDOUT;
}

static void nft_newtable(void)
{
	const char *id = "RT-011/nft-newtable";
	struct buf b = {.len = 0};
	struct nfgenmsg g = {.nfgen_family = AF_UNSPEC,
			     .version = NFNETLINK_V0,
			     .res_id = htons(NFNL_SUBSYS_NFTABLES)};
	struct nlmsghdr *h;
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER);
	struct timeval tv = {.tv_sec = 2};
	int r;

	if (fd < 0) {
		probe_classify(id, "socket(NETLINK_NETFILTER)", -1, errno,
			       PROBE_ERRS(EPERM, EAFNOSUPPORT, EPROTONOSUPPORT));
		return;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	h = put_msg(&b, NFNL_MSG_BATCH_BEGIN, 0, 1);
	put(h, &g, sizeof g);
	end(&b, h);
	g.nfgen_family = NFPROTO_IPV4;
	g.res_id = 0;
	h = put_msg(&b, (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWTABLE, NLM_F_CREATE | NLM_F_ACK,
		    2);
	put(h, &g, sizeof g);
	put_attr(h, NFTA_TABLE_NAME, "rt011", 6);
	end(&b, h);
	g.nfgen_family = AF_UNSPEC;
	g.res_id = htons(NFNL_SUBSYS_NFTABLES);
	h = put_msg(&b, NFNL_MSG_BATCH_END, 0, 3);
	put(h, &g, sizeof g);
	end(&b, h);
	r = talk(fd, &b, 2);
	close(fd);
	if (r == 0)
		FAILED(id, "nf_tables table created");
	else
		probe_classify(id, "NFT_MSG_NEWTABLE", -1, r, PROBE_ERRS(EPERM));
}

static void rtm_newaddr(void)
{
	const char *id = "RT-011/rtm-newaddr";
	struct buf b = {.len = 0};
	struct ifaddrmsg ifa = {
		.ifa_family = AF_INET, .ifa_prefixlen = 32, .ifa_index = if_nametoindex("lo")};
	struct in_addr a;
	struct nlmsghdr *h;
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	struct timeval tv = {.tv_sec = 2};
	int r;

	if (fd < 0) {
		probe_classify(id, "socket(NETLINK_ROUTE)", -1, errno,
			       PROBE_ERRS(EPERM, EAFNOSUPPORT));
		return;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	inet_pton(AF_INET, "198.51.100.77", &a);
	h = put_msg(&b, RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK, 7);
	put(h, &ifa, sizeof ifa);
	put_attr(h, IFA_LOCAL, &a, sizeof a);
	put_attr(h, IFA_ADDRESS, &a, sizeof a);
	end(&b, h);
	r = talk(fd, &b, 7);
	close(fd);
	if (r == 0)
		FAILED(id, "address added to lo");
	else
		probe_classify(id, "RTM_NEWADDR on lo", -1, r, PROBE_ERRS(EPERM));
}

int main(int argc, char **argv)
{
	probe_init(argc, argv);
	nft_newtable();
	rtm_newaddr();
	return probe_done();
}
