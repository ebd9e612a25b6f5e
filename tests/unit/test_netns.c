/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The sandbox network namespace, for real: each test enters a fresh user+net
 * namespace (as the current user, and as an unprivileged uid when run as root)
 * and checks that a connection to a TEST-NET address lands on the transparent
 * listener with its original destination, that UDP elsewhere is refused and
 * logged, and that the listeners survive a trip over SCM_RIGHTS. The namespace
 * has no interface but lo, so nothing can leave it.
 */
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
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness/tap.h"
#include "network/netns.h"
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
