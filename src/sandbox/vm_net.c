/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The vm level's network (--net allow; backend_vm.h, docs/ISOLATION.md):
 * both ends of the guest's one link. On the host side, the holder (root of
 * its own user namespace, in its own network namespace) makes a tap whose
 * fd QEMU is given; on the guest side, moat's init configures the virtio-net
 * device. rtnetlink by hand, as netns.c does in the network plugin (which
 * the guest's libc-only initramfs does not carry).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sandbox/backend_vm.h"
#include "shared/macro.h"

struct rq {
	struct nlmsghdr h;
	char body[256];
};

static int attr(struct rq *r, uint16_t type, const void *data, size_t len)
{
	size_t off = NLMSG_ALIGN(r->h.nlmsg_len);
	if (off + RTA_SPACE(len) > sizeof(*r))
		return -ENOBUFS;
	struct rtattr *a = (struct rtattr *)((char *)r + off);
	a->rta_type = type;
	a->rta_len = (unsigned short)RTA_LENGTH(len);
	memcpy(RTA_DATA(a), data, len);
	r->h.nlmsg_len = (uint32_t)(off + RTA_SPACE(len));
	return 0;
}

/* One request and its acknowledgement. */
static int talk(int nl, struct rq *r)
{
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	char buf[1024];
	r->h.nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
	r->h.nlmsg_seq = 1;
	if (sendto(nl, r, r->h.nlmsg_len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return negerrno();
	for (;;) {
		ssize_t n = recv(nl, buf, sizeof(buf), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return negerrno();
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n);
		     h = NLMSG_NEXT(h, n))
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(h);
				return e->error == -EEXIST ? 0 : e->error;
			}
		if (n == 0)
			return -EPROTO;
	}
}

static int link_up(int nl, unsigned idx)
{
	struct rq r = {.h = {.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg)),
			     .nlmsg_type = RTM_NEWLINK}};
	struct ifinfomsg *i = NLMSG_DATA(&r.h);
	i->ifi_family = AF_UNSPEC;
	i->ifi_index = (int)idx;
	i->ifi_flags = i->ifi_change = IFF_UP;
	return talk(nl, &r);
}

int moat_vm_net_up(const char *ifname, const char *addr, unsigned prefix, const char *gw)
{
	struct in_addr a, g;
	unsigned idx = if_nametoindex(ifname), lo = if_nametoindex("lo");
	if (!idx || !lo)
		return -ENODEV;
	if (inet_pton(AF_INET, addr, &a) != 1 || (gw && inet_pton(AF_INET, gw, &g) != 1))
		return -EINVAL;
	_cleanup_close_ int nl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (nl < 0)
		return negerrno();
	int k = link_up(nl, lo);
	if (k < 0)
		return k;
	struct rq r = {.h = {.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifaddrmsg)),
			     .nlmsg_type = RTM_NEWADDR,
			     .nlmsg_flags = NLM_F_CREATE | NLM_F_REPLACE}};
	struct ifaddrmsg *ia = NLMSG_DATA(&r.h);
	ia->ifa_family = AF_INET;
	ia->ifa_prefixlen = (unsigned char)prefix;
	ia->ifa_scope = RT_SCOPE_UNIVERSE;
	ia->ifa_index = idx;
	if ((k = attr(&r, IFA_LOCAL, &a, 4)) < 0 || (k = attr(&r, IFA_ADDRESS, &a, 4)) < 0 ||
	    (k = talk(nl, &r)) < 0 || (k = link_up(nl, idx)) < 0)
		return k;
	if (!gw)
		return 0;
	/* the default route through the gateway, on-link: with a /32 every
	 * destination, the other 10.0.2.x included, goes to the gateway's
	 * MAC, so each attempt meets the capture rules (none waits on ARP) */
	r = (struct rq){.h = {.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg)),
			      .nlmsg_type = RTM_NEWROUTE,
			      .nlmsg_flags = NLM_F_CREATE | NLM_F_REPLACE}};
	struct rtmsg *rt = NLMSG_DATA(&r.h);
	*rt = (struct rtmsg){.rtm_family = AF_INET,
			     .rtm_table = RT_TABLE_MAIN,
			     .rtm_protocol = RTPROT_BOOT,
			     .rtm_scope = RT_SCOPE_UNIVERSE,
			     .rtm_type = RTN_UNICAST,
			     .rtm_flags = RTNH_F_ONLINK};
	uint32_t oif = idx;
	if ((k = attr(&r, RTA_OIF, &oif, 4)) < 0 || (k = attr(&r, RTA_GATEWAY, &g, 4)) < 0)
		return k;
	return talk(nl, &r);
}

int moat_vm_net_first_link(char *ret_name, size_t len)
{
	struct if_nameindex *ni = if_nameindex();
	if (!ni)
		return negerrno();
	int k = -ENODEV;
	for (struct if_nameindex *i = ni; i->if_index; i++)
		if (!streq(i->if_name, "lo")) {
			snprintf(ret_name, len, "%s", i->if_name);
			k = 0;
			break;
		}
	if_freenameindex(ni);
	return k;
}

static int sysctl_write(const char *path, const char *value)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return negerrno();
	if (write(fd, value, strlen(value)) != (ssize_t)strlen(value))
		return errno ? negerrno() : -EIO;
	return 0;
}

int moat_vm_net_tap(const char *name, char *why, size_t whylen)
{
	_cleanup_close_ int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		snprintf(why, whylen, "cannot open /dev/net/tun");
		return -e;
	}
	struct ifreq ifr = {.ifr_flags = IFF_TAP | IFF_NO_PI};
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		int e = errno;
		snprintf(why, whylen, "cannot create the tap %s", name);
		return -e;
	}
	/* /proc/sys/net is the caller's network namespace: the holder's own.
	 * No IPv6 on the tap (the guest has none: nothing is half-routed), and
	 * route_localnet so that the capture rules can DNAT the guest's
	 * connections to the listeners on 127.0.0.1 (netns.c binds them there
	 * at every level) */
	char p[128];
	snprintf(p, sizeof(p), "/proc/sys/net/ipv6/conf/%s/disable_ipv6", name);
	int k = sysctl_write(p, "1");
	if (k < 0 && k != -ENOENT) {
		snprintf(why, whylen, "cannot disable IPv6 on the tap");
		return k;
	}
	snprintf(p, sizeof(p), "/proc/sys/net/ipv4/conf/%s/route_localnet", name);
	if ((k = sysctl_write(p, "1")) < 0) {
		snprintf(why, whylen, "cannot set route_localnet on the tap");
		return k;
	}
	return TAKE_FD(fd);
}
