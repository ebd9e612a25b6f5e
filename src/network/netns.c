/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Network namespace setup inside the sandbox (see netns.h). rtnetlink by hand
 * (netlink.c, shared with the vm level's link): four small requests do not
 * justify another library.
 */
#include "network/netns.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_addr.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_log.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <nftables/libnftables.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "network/netlink.h"
#include "policy/plan.h"
#include "shared/macro.h"

int moat_netns_setup_loopback(void)
{
	_cleanup_close_ int nl = moat_rtnl_open();
	unsigned lo = if_nametoindex("lo");

	if (nl < 0)
		return nl;
	if (lo == 0)
		return -ENODEV;
	return moat_rtnl_link_up(nl, lo);
}

static int routes_setup(void)
{
	_cleanup_close_ int nl = moat_rtnl_open();
	unsigned lo = if_nametoindex("lo");
	struct in_addr a4;
	struct in6_addr a6;
	int r;

	if (nl < 0)
		return nl;
	if (lo == 0)
		return -ENODEV;
	r = moat_rtnl_link_up(nl, lo);
	if (r < 0)
		return r;
	/* Without a non-loopback source address the kernel picks 0.0.0.0 for a
	 * connection to a "remote" address and the handshake never completes. */
	if (inet_pton(AF_INET, MOAT_NETNS_SRC4, &a4) != 1 ||
	    inet_pton(AF_INET6, MOAT_NETNS_SRC6, &a6) != 1)
		return -EINVAL;
	r = moat_rtnl_addr_add(nl, lo, AF_INET, &a4, 32);
	if (r < 0)
		return r;
	r = moat_rtnl_default_route(nl, lo, AF_INET, NULL, &a4);
	if (r < 0)
		return r;
	r = moat_rtnl_addr_add(nl, lo, AF_INET6, &a6, 128);
	if (r < 0)
		return r;
	return moat_rtnl_default_route(nl, lo, AF_INET6, NULL, &a6);
}

static int nft_load(const char *ruleset)
{
	struct nft_ctx *ctx = nft_ctx_new(NFT_CTX_DEFAULT);
	int r;

	if (!ctx)
		return -ENOMEM;
	/* Keep libnftables quiet: the library never prints. */
	if (nft_ctx_buffer_output(ctx) < 0 || nft_ctx_buffer_error(ctx) < 0) {
		nft_ctx_free(ctx);
		return -ENOMEM;
	}
	r = nft_run_cmd_from_buffer(ctx, ruleset);
	nft_ctx_free(ctx);
	/* libnftables does not return the errno; EPERM is the usual cause
	 * (no CAP_NET_ADMIN in the namespace). */
	return r == 0 ? 0 : -EPERM;
}

/* The capture rules: the plan's text (moat_plan_nft_ruleset, plan_parts.c),
 * or the same generator's for the default ports when no plan is given. */
static int ruleset_setup(const struct moat_netns_opts *o, uint16_t tport)
{
	char rs[MOAT_PLAN_NFT_MAX];

	if (o->ruleset)
		return nft_load(o->ruleset);
	int r = moat_plan_nft_ruleset(tport, rs, sizeof(rs));
	return r < 0 ? r : nft_load(rs);
}

/* nfnetlink_log: bind the group, copy the first 128 bytes of each packet. */
static int nflog_cfg(int fd, uint16_t group, uint16_t family, uint8_t cmd, int what)
{
	struct moat_nl_req r;
	struct nfgenmsg *g;
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	char buf[512];
	ssize_t n;
	int k;

	g = moat_nl_begin(&r, (NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_CONFIG, 0, sizeof(*g));
	g->nfgen_family = (uint8_t)family;
	g->version = NFNETLINK_V0;
	g->res_id = htons(group);
	if (what == 2) {
		/* Deliver each packet at once (default: batches of 100 or 1 s). */
		uint32_t one = htonl(1);
		k = moat_nl_attr(&r, NFULA_CFG_QTHRESH, &one, sizeof(one));
	} else if (what == 1) {
		struct nfulnl_msg_config_mode m = {.copy_range = htonl(128),
						   .copy_mode = NFULNL_COPY_PACKET};
		k = moat_nl_attr(&r, NFULA_CFG_MODE, &m, sizeof(m));
	} else {
		struct nfulnl_msg_config_cmd c = {.command = cmd};
		k = moat_nl_attr(&r, NFULA_CFG_CMD, &c, sizeof(c));
	}
	if (k < 0)
		return k;
	if (sendto(fd, r.buf, r.h->nlmsg_len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return negerrno();
	n = recv(fd, buf, sizeof(buf), 0);
	if (n < 0)
		return negerrno();
	for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n);
	     h = NLMSG_NEXT(h, n))
		if (h->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = NLMSG_DATA(h);
			return e->error;
		}
	return -EBADMSG;
}

static int nflog_open(void)
{
	_cleanup_close_ int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER);
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	int r, rcv = 1 << 20;

	if (fd < 0)
		return negerrno();
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return negerrno();
	r = nflog_cfg(fd, MOAT_NETNS_NFLOG_GROUP, AF_UNSPEC, NFULNL_CFG_CMD_BIND, 0);
	if (r < 0)
		return r;
	r = nflog_cfg(fd, MOAT_NETNS_NFLOG_GROUP, AF_UNSPEC, 0, 1);
	if (r < 0)
		return r;
	r = nflog_cfg(fd, MOAT_NETNS_NFLOG_GROUP, AF_UNSPEC, 0, 2);
	if (r < 0)
		return r;
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
	if (fcntl(fd, F_SETFL, O_NONBLOCK) < 0)
		return negerrno();
	return TAKE_FD(fd);
}

static int listen_on(int family, int type, const char *addr, uint16_t port)
{
	union {
		struct sockaddr_in in;
		struct sockaddr_in6 in6;
	} sa;
	socklen_t len;
	int one = 1;
	_cleanup_close_ int fd = socket(family, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return negerrno();
	memset(&sa, 0, sizeof(sa));
	if (family == AF_INET) {
		sa.in.sin_family = AF_INET;
		sa.in.sin_port = htons(port);
		if (inet_pton(AF_INET, addr, &sa.in.sin_addr) != 1)
			return -EINVAL;
		len = sizeof(sa.in);
	} else {
		sa.in6.sin6_family = AF_INET6;
		sa.in6.sin6_port = htons(port);
		if (inet_pton(AF_INET6, addr, &sa.in6.sin6_addr) != 1)
			return -EINVAL;
		len = sizeof(sa.in6);
		if (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0)
			return negerrno();
	}
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
		return negerrno();
	if (bind(fd, (struct sockaddr *)&sa, len) < 0)
		return negerrno();
	if (type == SOCK_STREAM && listen(fd, 1024) < 0)
		return negerrno();
	return TAKE_FD(fd);
}

int moat_netns_setup(const struct moat_netns_opts *o, struct moat_netns_fds *ret)
{
	static const struct moat_netns_opts defaults;
	struct moat_netns_fds f;
	uint16_t http, socks, tport, dport;
	int r;

	if (!o)
		o = &defaults;
	http = o->http_port ? o->http_port : 3128;
	socks = o->socks_port ? o->socks_port : 1080;
	tport = o->transparent_port ? o->transparent_port : 3129;
	dport = o->dns_port ? o->dns_port : 53;
	moat_netns_fds_init(&f);
	moat_netns_fds_init(ret);

	r = routes_setup();
	if (r < 0)
		return r;
	r = ruleset_setup(o, tport);
	if (r < 0)
		return r;
	/* Sockets last: once they exist the namespace is fully fenced. */
	if ((r = f.http = listen_on(AF_INET, SOCK_STREAM, "127.0.0.1", http)) < 0 ||
	    (r = f.socks = listen_on(AF_INET, SOCK_STREAM, "127.0.0.1", socks)) < 0 ||
	    (r = f.transparent4 = listen_on(AF_INET, SOCK_STREAM, "127.0.0.1", tport)) < 0 ||
	    (r = f.transparent6 = listen_on(AF_INET6, SOCK_STREAM, "::1", tport)) < 0 ||
	    (r = f.dns_udp = listen_on(AF_INET, SOCK_DGRAM, MOAT_NETNS_DNS4, dport)) < 0 ||
	    (r = f.dns_tcp = listen_on(AF_INET, SOCK_STREAM, MOAT_NETNS_DNS4, dport)) < 0)
		goto fail;
	if (!o->no_nflog && (r = f.nflog = nflog_open()) < 0)
		goto fail;
	*ret = f;
	return 0;
fail:
	moat_netns_fds_close(&f);
	return r;
}
