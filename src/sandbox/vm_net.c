/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The vm level's network (--net allow; backend_vm.h, docs/ISOLATION.md):
 * both ends of the guest's one link. On the host side, the holder (root of
 * its own user namespace, in its own network namespace) makes a tap whose
 * fd QEMU is given; on the guest side, moat's init configures the virtio-net
 * device. rtnetlink by hand (network/netlink.c, which netns.c shares in
 * the nft plugin: the guest's libc-only initramfs carries the core alone).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "network/netlink.h"
#include "sandbox/backend_vm.h"
#include "shared/macro.h"

int moat_vm_net_up(const char *ifname, const char *addr, unsigned prefix, const char *gw)
{
	struct in_addr a, g;
	unsigned idx = if_nametoindex(ifname), lo = if_nametoindex("lo");
	if (!idx || !lo)
		return -ENODEV;
	if (inet_pton(AF_INET, addr, &a) != 1 || (gw && inet_pton(AF_INET, gw, &g) != 1))
		return -EINVAL;
	_cleanup_close_ int nl = moat_rtnl_open();
	if (nl < 0)
		return nl;
	int k;
	if ((k = moat_rtnl_link_up(nl, lo)) < 0 ||
	    (k = moat_rtnl_addr_add(nl, idx, AF_INET, &a, (unsigned char)prefix)) < 0 ||
	    (k = moat_rtnl_link_up(nl, idx)) < 0)
		return k;
	if (!gw)
		return 0;
	/* the default route through the gateway, on-link: with a /32 every
	 * destination, the other 10.0.2.x included, goes to the gateway's
	 * MAC, so each attempt meets the capture rules (none waits on ARP) */
	return moat_rtnl_default_route(nl, idx, AF_INET, &g, NULL);
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
