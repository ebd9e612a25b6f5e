/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The sandbox network namespace, for real: each test enters a fresh user+net
 * namespace (as the current user, and as an unprivileged uid when run as root)
 * and checks that a connection to a TEST-NET address lands on the transparent
 * listener with its original destination, that UDP elsewhere is refused and
 * logged, and that the listeners survive a trip over SCM_RIGHTS. The namespace
 * has no interface but lo, so nothing can leave it.
 */
#include <net/if.h> /* before the kernel's headers: they defer to it for struct ifreq */

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_log.h>
#include <linux/netfilter_ipv4.h>
#include <linux/netfilter_ipv6/ip6_tables.h>
#include <linux/netlink.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness/tap.h"
#include "network/netns.h"
#include "sandbox/backend_vm.h"
#include "shared/fdpass.h"
#include "shared/macro.h"

static void write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		moat_tap_fail(__FILE__, __LINE__, "write %s: %m", path);
	close(fd);
}

/* Enter a new user+net namespace mapping the current ids to root. */
static void enter_netns(bool drop_to_nobody)
{
	char map[64];
	uid_t uid;
	gid_t gid;

	if (drop_to_nobody) {
		if (getuid() != 0)
			SKIP("needs root to switch to an unprivileged uid");
		ASSERT_EQ(setgroups(0, NULL), 0);
		ASSERT_EQ(setresgid(65534, 65534, 65534), 0);
		ASSERT_EQ(setresuid(65534, 65534, 65534), 0);
		/* The uid change made us non-dumpable: /proc/self would stay root's. */
		ASSERT_EQ(prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), 0);
	}
	uid = getuid();
	gid = getgid();
	if (unshare(CLONE_NEWUSER | CLONE_NEWNET) < 0)
		moat_tap_fail(__FILE__, __LINE__, "unshare(NEWUSER|NEWNET): %m");
	write_file("/proc/self/setgroups", "deny");
	snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)uid);
	write_file("/proc/self/uid_map", map);
	snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)gid);
	write_file("/proc/self/gid_map", map);
}

static int accept_wait(int lfd)
{
	struct pollfd p = {.fd = lfd, .events = POLLIN};
	if (poll(&p, 1, 2000) != 1)
		return -1;
	return accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
}

static void check_redirect(const struct moat_netns_fds *f)
{
	struct sockaddr_in dst = {.sin_family = AF_INET, .sin_port = htons(80)};
	struct sockaddr_in orig;
	struct sockaddr_in6 dst6 = {.sin6_family = AF_INET6, .sin6_port = htons(443)};
	struct sockaddr_in6 orig6;
	socklen_t len = sizeof(orig);
	char s[INET6_ADDRSTRLEN];

	inet_pton(AF_INET, "203.0.113.5", &dst.sin_addr);
	_cleanup_close_ int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_TRUE(c >= 0);
	if (connect(c, (struct sockaddr *)&dst, sizeof(dst)) < 0)
		moat_tap_fail(__FILE__, __LINE__, "connect 203.0.113.5:80: %m");
	_cleanup_close_ int a = accept_wait(f->transparent4);
	ASSERT_TRUE(a >= 0);
	ASSERT_EQ(getsockopt(a, SOL_IP, SO_ORIGINAL_DST, &orig, &len), 0);
	ASSERT_STREQ(inet_ntop(AF_INET, &orig.sin_addr, s, sizeof(s)), "203.0.113.5");
	ASSERT_EQ(ntohs(orig.sin_port), 80);
	/* Bytes flow both ways. */
	ASSERT_EQ(write(c, "ping", 4), 4);
	char buf[8] = "";
	ASSERT_EQ(read(a, buf, sizeof(buf)), 4);
	ASSERT_EQ(write(a, "pong", 4), 4);
	ASSERT_EQ(read(c, buf, sizeof(buf)), 4);

	/* IPv6 goes to [::1]:3129. */
	inet_pton(AF_INET6, "2001:db8::5", &dst6.sin6_addr);
	_cleanup_close_ int c6 = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_TRUE(c6 >= 0);
	if (connect(c6, (struct sockaddr *)&dst6, sizeof(dst6)) < 0)
		moat_tap_fail(__FILE__, __LINE__, "connect [2001:db8::5]:443: %m");
	_cleanup_close_ int a6 = accept_wait(f->transparent6);
	ASSERT_TRUE(a6 >= 0);
	len = sizeof(orig6);
	ASSERT_EQ(getsockopt(a6, SOL_IPV6, IP6T_SO_ORIGINAL_DST, &orig6, &len), 0);
	ASSERT_STREQ(inet_ntop(AF_INET6, &orig6.sin6_addr, s, sizeof(s)), "2001:db8::5");
	ASSERT_EQ(ntohs(orig6.sin6_port), 443);
}

static void check_udp(const struct moat_netns_fds *f)
{
	struct sockaddr_in dst = {.sin_family = AF_INET, .sin_port = htons(53)};
	char buf[64];

	_cleanup_close_ int u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ASSERT_TRUE(u >= 0);
	/* The DNS stub is reachable. */
	inet_pton(AF_INET, MOAT_NETNS_DNS4, &dst.sin_addr);
	ASSERT_EQ(sendto(u, "q", 1, 0, (struct sockaddr *)&dst, sizeof(dst)), 1);
	struct pollfd p = {.fd = f->dns_udp, .events = POLLIN};
	ASSERT_EQ(poll(&p, 1, 2000), 1);
	ASSERT_EQ(recv(f->dns_udp, buf, sizeof(buf), 0), 1);
	/* Anything else is refused at once, and logged. */
	inet_pton(AF_INET, "203.0.113.5", &dst.sin_addr);
	ASSERT_ERRNO(sendto(u, "x", 1, 0, (struct sockaddr *)&dst, sizeof(dst)), EPERM);
	if (f->nflog >= 0) {
		char nb[2048];
		struct pollfd q = {.fd = f->nflog, .events = POLLIN};
		ASSERT_EQ(poll(&q, 1, 2000), 1);
		ssize_t n = recv(f->nflog, nb, sizeof(nb), 0);
		ASSERT_TRUE(n > (ssize_t)sizeof(struct nlmsghdr));
		struct nlmsghdr *h = (struct nlmsghdr *)nb;
		ASSERT_EQ(h->nlmsg_type, (NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_PACKET);
	}
	/* ICMP (ping socket or raw) never gets out either. */
	_cleanup_close_ int ic = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_ICMP);
	if (ic >= 0) {
		char echo[8] = {8, 0, 0, 0, 0, 0, 0, 0};
		errno = 0;
		ASSERT_TRUE(sendto(ic, echo, sizeof(echo), 0, (struct sockaddr *)&dst,
				   sizeof(dst)) < 0);
	}
}

static void run_full(bool nobody)
{
	struct moat_netns_fds f;
	int r;

	enter_netns(nobody);
	r = moat_netns_setup(NULL, &f);
	if (r < 0)
		moat_tap_fail(__FILE__, __LINE__, "moat_netns_setup: %s", strerror(-r));
	check_redirect(&f);
	check_udp(&f);
	moat_netns_fds_close(&f);
}

TEST(netns_setup_redirect_current_user)
{
	run_full(false);
}

TEST(netns_setup_redirect_unprivileged)
{
	run_full(true);
}

TEST(netns_loopback_only)
{
	struct sockaddr_in dst = {.sin_family = AF_INET, .sin_port = htons(80)};

	enter_netns(false);
	ASSERT_EQ(moat_netns_setup_loopback(), 0);
	/* lo works... */
	_cleanup_close_ int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in la = {.sin_family = AF_INET};
	socklen_t len = sizeof(la);
	inet_pton(AF_INET, "127.0.0.1", &la.sin_addr);
	ASSERT_EQ(bind(l, (struct sockaddr *)&la, sizeof(la)), 0);
	ASSERT_EQ(listen(l, 1), 0);
	ASSERT_EQ(getsockname(l, (struct sockaddr *)&la, &len), 0);
	_cleanup_close_ int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_EQ(connect(c, (struct sockaddr *)&la, sizeof(la)), 0);
	/* ...and nothing else is routable. */
	inet_pton(AF_INET, "203.0.113.5", &dst.sin_addr);
	_cleanup_close_ int d = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_ERRNO(connect(d, (struct sockaddr *)&dst, sizeof(dst)), ENETUNREACH);
}

TEST(netns_fds_survive_scm_rights)
{
	struct moat_netns_fds f, g;
	int sp[2], arr[MOAT_NETNS_N_FDS], got[MOAT_FDPASS_MAX];
	unsigned n;
	int r;

	enter_netns(false);
	r = moat_netns_setup(NULL, &f);
	if (r < 0)
		moat_tap_fail(__FILE__, __LINE__, "moat_netns_setup: %s", strerror(-r));
	ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
	n = moat_netns_fds_to_array(&f, arr);
	ASSERT_EQ(n, 7);
	ASSERT_EQ(moat_fds_send(sp[0], arr, n), 0);
	moat_netns_fds_close(&f);
	r = moat_fds_recv(sp[1], got, MOAT_FDPASS_MAX);
	ASSERT_EQ(r, 7);
	ASSERT_EQ(moat_netns_fds_from_array(got, (unsigned)r, &g), 0);
	ASSERT_TRUE(fcntl(g.transparent4, F_GETFD) & FD_CLOEXEC);
	check_redirect(&g);
	moat_netns_fds_close(&g);
	/* A message with too many descriptors is refused and leaves nothing open. */
	int many[3] = {0, 1, 2};
	ASSERT_EQ(moat_fds_send(sp[0], many, 3), 0);
	ASSERT_EQ(moat_fds_recv(sp[1], got, 2), -EBADMSG);
	close(sp[0]);
	ASSERT_EQ(moat_fds_recv(sp[1], got, 2), -EPIPE);
	close(sp[1]);
}

/* A link's flags, IPv4 address and netmask ("" when it has none). */
static int link_state(const char *name, char addr[INET_ADDRSTRLEN], char mask[INET_ADDRSTRLEN])
{
	struct ifreq ifr = {0};
	_cleanup_close_ int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		return -1;
	int flags = ifr.ifr_flags;
	addr[0] = mask[0] = 0;
	if (ioctl(s, SIOCGIFADDR, &ifr) == 0)
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ifr.ifr_addr)->sin_addr, addr,
			  INET_ADDRSTRLEN);
	if (ioctl(s, SIOCGIFNETMASK, &ifr) == 0)
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ifr.ifr_netmask)->sin_addr, mask,
			  INET_ADDRSTRLEN);
	return flags;
}

/* The default route's link and gateway (hex, as /proc/net/route has it);
 * 0 if there is one. */
static int default_route(char ifname[IF_NAMESIZE], char gw[16])
{
	FILE *f = fopen("/proc/net/route", "re");
	char line[256], i[IF_NAMESIZE], d[16], g[16];
	int k = -1;
	while (f && k < 0 && fgets(line, sizeof(line), f))
		if (sscanf(line, "%15s %15s %15s", i, d, g) == 3 && streq(d, "00000000")) {
			snprintf(ifname, IF_NAMESIZE, "%s", i);
			snprintf(gw, 16, "%s", g);
			k = 0;
		}
	if (f)
		fclose(f);
	return k;
}

static void read_sysctl(const char *path, char *buf, size_t len)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, len - 1);
	buf[n > 0 ? n : 0] = 0;
}

/* The vm level's link (sandbox/vm_net.c), for real in a namespace of its
 * own: the holder's tap (IPv6 off, route_localnet on) with its address and
 * no route of its own making; the guest's side (a second tap stands in for
 * its virtio-net device) with its /32 and the default route through the
 * gateway on-link. The control: before, neither link is up or has an
 * address, and there is no default route. */
TEST(netns_vm_link)
{
	char why[200] = "", name[IF_NAMESIZE] = "", a[INET_ADDRSTRLEN], m[INET_ADDRSTRLEN];
	char gw[16] = "", v[16];
	enter_netns(false);
	int host = moat_vm_net_tap(MOAT_NETNS_VM_TAP, why, sizeof(why));
	if (host < 0)
		moat_tap_fail(__FILE__, __LINE__, "moat_vm_net_tap: %s: %s", why, strerror(-host));
	int guest = moat_vm_net_tap("moatg", why, sizeof(why));
	ASSERT_TRUE(guest >= 0);
	ASSERT_EQ(moat_vm_net_first_link(name, sizeof(name)), 0);
	ASSERT_STREQ(name, MOAT_NETNS_VM_TAP);
	read_sysctl("/proc/sys/net/ipv4/conf/" MOAT_NETNS_VM_TAP "/route_localnet", v, sizeof(v));
	ASSERT_STREQ(v, "1\n");
	read_sysctl("/proc/sys/net/ipv6/conf/" MOAT_NETNS_VM_TAP "/disable_ipv6", v, sizeof(v));
	ASSERT_STREQ(v, "1\n");
	/* control */
	ASSERT_TRUE(!(link_state("lo", a, m) & IFF_UP));
	ASSERT_TRUE(!(link_state(MOAT_NETNS_VM_TAP, a, m) & IFF_UP));
	ASSERT_STREQ(a, "");
	ASSERT_TRUE(default_route(name, gw) < 0);

	/* the holder's side: an address, no gateway */
	ASSERT_EQ(moat_vm_net_up(MOAT_NETNS_VM_TAP, MOAT_NETNS_VM_HOST4, 24, NULL), 0);
	ASSERT_TRUE(link_state("lo", a, m) & IFF_UP);
	ASSERT_TRUE(link_state(MOAT_NETNS_VM_TAP, a, m) & IFF_UP);
	ASSERT_STREQ(a, MOAT_NETNS_VM_HOST4);
	ASSERT_STREQ(m, "255.255.255.0");
	ASSERT_TRUE(default_route(name, gw) < 0);
	/* the guest's (another subnet: the gateway must not be an address of
	 * this namespace), twice: a repeated add is no error */
	for (int i = 0; i < 2; i++)
		ASSERT_EQ(moat_vm_net_up("moatg", "10.0.3.15", 32, "10.0.3.2"), 0);
	ASSERT_TRUE(link_state("moatg", a, m) & IFF_UP);
	ASSERT_STREQ(a, "10.0.3.15");
	ASSERT_STREQ(m, "255.255.255.255");
	ASSERT_EQ(default_route(name, gw), 0);
	ASSERT_STREQ(name, "moatg");
	ASSERT_STREQ(gw, "0203000A"); /* 10.0.3.2, little-endian */
	/* a link that does not exist, an address that is not one */
	ASSERT_EQ(moat_vm_net_up("nosuch0", "10.0.4.1", 24, NULL), -ENODEV);
	ASSERT_EQ(moat_vm_net_up("moatg", "10.0.3.x", 32, NULL), -EINVAL);
	close(guest);
	close(host);
}
