/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* --net none network attempts: description, aggregation, caps (netrec.c). */
#include "harness/tap.h"
#include "audit/audit.h"
#include "network/netrec.h"
#include "moat/moat.h"
#include "shared/macro.h"

#include <arpa/inet.h>
#include <sys/mman.h>
#include <sys/socket.h>

static const uint8_t query_aaaa[] = {
	0x12, 0x34, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	5,    'e',  'x',  'f',	'i',  'l',  7,	  'e',	'x',  'a',  'm',  'p',
	'l',  'e',  3,	  'c',	'o',  'm',  0,	  0x00, 0x1c, 0x00, 0x01,
};

static struct moat_seccomp_event ev;

static void event(const char *sc, const char *proto)
{
	memset(&ev, 0, sizeof(ev));
	ev.type = MOAT_SECCOMP_EVENT_NET;
	snprintf(ev.syscall, sizeof(ev.syscall), "%s", sc);
	snprintf(ev.sock_proto, sizeof(ev.sock_proto), "%s", proto);
	ev.pid = 42;
}

static struct moat_seccomp_net_dest *dest(int family, const char *addr, uint16_t port)
{
	struct moat_seccomp_net_dest *d = &ev.dests[ev.n_dests++];
	d->has_addr = true;
	d->family = (uint16_t)family;
	d->port = port;
	ASSERT_EQ(inet_pton(family, addr, d->addr), 1);
	d->local = moat_seccomp_addr_local(family, d->addr);
	return d;
}

TEST(netrec_describe)
{
	struct moat_netrec_attempt t;

	event("connect", "TCP");
	dest(AF_INET, "192.0.2.1", 80);
	ASSERT_EQ(moat_netrec_describe(&ev, 0, &t), 0);
	ASSERT_STREQ(t.proto, "tcp");
	ASSERT_STREQ(t.addr, "192.0.2.1");
	ASSERT_EQ(t.port, 80);
	ASSERT_STREQ(t.name, "");
	ASSERT_STREQ(t.suggest, "--allow-cidr 192.0.2.1/32");
	ASSERT_STREQ(t.key, "tcp 192.0.2.1:80");
	ASSERT_EQ(moat_netrec_describe(&ev, 1, &t), -EINVAL);

	event("connect", "UDPv6");
	dest(AF_INET6, "::ffff:198.51.100.4", 53);
	ASSERT_EQ(moat_netrec_describe(&ev, 0, &t), 0);
	ASSERT_STREQ(t.proto, "udp");
	ASSERT_STREQ(t.addr, "198.51.100.4"); /* v4-mapped shown as IPv4 */
	ASSERT_STREQ(t.suggest, "--allow-cidr 198.51.100.4/32");

	event("sendto", "UDPv6");
	dest(AF_INET6, "2001:db8::5", 443);
	ASSERT_EQ(moat_netrec_describe(&ev, 0, &t), 0);
	ASSERT_STREQ(t.suggest, "--allow-cidr 2001:db8::5/128");
	ASSERT_STREQ(t.key, "udp [2001:db8::5]:443");

	/* loopback that is not DNS, another family, an ignored address */
	event("sendto", "UDP");
	dest(AF_INET, "127.0.0.1", 9);
	ASSERT_EQ(moat_netrec_describe(&ev, 0, &t), -ENOENT);
	event("connect", "UNIX");
	ev.dests[0].has_addr = true;
	ev.dests[0].family = AF_UNIX;
	ev.n_dests = 1;
	ASSERT_EQ(moat_netrec_describe(&ev, 0, &t), -ENOENT);
	event("sendto", "TCP");
	dest(AF_INET, "192.0.2.1", 80)->ignored = true;
	ASSERT_EQ(moat_netrec_describe(&ev, 0, &t), -ENOENT);

	/* a DNS query to loopback: recorded with its name */
	event("sendmmsg", "UDP");
	struct moat_seccomp_net_dest *d = dest(AF_INET, "127.0.0.1", 53);
	memcpy(d->payload, query_aaaa, sizeof(query_aaaa));
	d->payload_len = sizeof(query_aaaa);
	ASSERT_EQ(moat_netrec_describe(&ev, 0, &t), 0);
	ASSERT_STREQ(t.name, "exfil.example.com");
	ASSERT_STREQ(t.qtype, "AAAA");
	ASSERT_STREQ(t.suggest, "--allow-host exfil.example.com");
	ASSERT_STREQ(t.key, "dns exfil.example.com");
	ASSERT_STREQ(t.addr, "127.0.0.1");
	/* a truncated query is not DNS: loopback, not recorded */
	d->payload_len = 20;
	ASSERT_EQ(moat_netrec_describe(&ev, 0, &t), -ENOENT);
	/* on a connected socket (no address) */
	d->payload_len = sizeof(query_aaaa);
	d->has_addr = false;
	ASSERT_EQ(moat_netrec_describe(&ev, 0, &t), 0);
	ASSERT_STREQ(t.addr, "");
	ASSERT_STREQ(t.name, "exfil.example.com");
	/* a name with bytes outside a host name: no --allow-host for it */
	d->payload[13] = '.';
	ASSERT_EQ(moat_netrec_describe(&ev, 0, &t), 0);
	ASSERT_STREQ(t.suggest, "--net allow");
}

static size_t count_lines(int fd, const char *needle)
{
	static char buf[1 << 20];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	size_t c = 0;
	ASSERT_TRUE(n >= 0);
	buf[n] = 0;
	for (char *p = buf; (p = strstr(p, needle)); p++)
		c++;
	return c;
}

TEST(netrec_aggregates_and_caps)
{
	int fd = memfd_create("netrec", MFD_CLOEXEC);
	int rd = dup(fd);
	struct moat_audit *a = NULL;
	ASSERT_TRUE(fd >= 0 && rd >= 0);
	ASSERT_EQ(moat_audit_open_fd(fd, "t", 0, &a), 0);
	struct moat_netrec *n = moat_netrec_new();
	ASSERT_TRUE(n != NULL);

	/* one destination, 100 times: one event, one alert, 100 counted */
	for (int i = 0; i < 100; i++) {
		event("connect", "TCP");
		dest(AF_INET, "192.0.2.1", 80);
		ASSERT_EQ(moat_netrec_record(n, a, &ev), 1u);
	}
	ASSERT_EQ(count_lines(rd, "\"type\":\"net\""), 1u);
	ASSERT_EQ(count_lines(rd, "\"cause\":\"net_denied\""), 1u);
	ASSERT_EQ(count_lines(rd, "\"reason\":\"network-none\""), 2u);

	/* A and AAAA of one name in one sendmmsg, then a retry: one attempt each */
	event("sendmmsg", "UDP");
	for (int i = 0; i < 2; i++) {
		struct moat_seccomp_net_dest *d = dest(AF_INET, "127.0.0.1", 53);
		memcpy(d->payload, query_aaaa, sizeof(query_aaaa));
		d->payload_len = sizeof(query_aaaa);
	}
	ASSERT_EQ(moat_netrec_record(n, a, &ev), 1u);
	ASSERT_EQ(moat_netrec_record(n, a, &ev), 1u);
	ASSERT_EQ(count_lines(rd, "\"host\":\"exfil.example.com\""), 2u); /* net + alert */

	/* past the cap of destinations: one limit event, the rest counted */
	char ip[32];
	for (int i = 0; i < MOAT_NETREC_MAX_DESTS + 50; i++) {
		event("sendto", "UDP");
		snprintf(ip, sizeof(ip), "198.51.%d.%d", i / 250, i % 250 + 1);
		dest(AF_INET, ip, 9);
		ASSERT_EQ(moat_netrec_record(n, a, &ev), 1u);
	}
	ASSERT_EQ(count_lines(rd, "\"type\":\"net\""), (size_t)MOAT_NETREC_MAX_DESTS);
	ASSERT_EQ(count_lines(rd, "\"what\":\"net_records\""), 1u);

	/* the most frequent first, at most what the caller has room for */
	struct moat_denied top[MOAT_TOP_DENIED_MAX + 1];
	memset(top, 0xa5, sizeof(top));
	ASSERT_EQ(moat_netrec_top(n, top, MOAT_TOP_DENIED_MAX), (unsigned)MOAT_TOP_DENIED_MAX);
	ASSERT_EQ(top[0].count, 100u);
	ASSERT_STREQ(top[0].destination, "192.0.2.1:80/tcp");
	ASSERT_STREQ(top[0].rule, "--allow-cidr 192.0.2.1/32");
	ASSERT_EQ(top[1].count, 2u);
	ASSERT_STREQ(top[1].destination, "exfil.example.com (dns)");
	ASSERT_STREQ(top[1].rule, "--allow-host exfil.example.com");
	for (unsigned i = 2; i < MOAT_TOP_DENIED_MAX; i++) {
		ASSERT_EQ(top[i].count, 1u);
		ASSERT_TRUE(startswith(top[i].destination, "198.51."));
	}
	ASSERT_EQ((unsigned char)top[MOAT_TOP_DENIED_MAX].destination[0], 0xa5u); /* untouched */
	ASSERT_EQ(moat_netrec_top(n, top, 1), 1u);
	ASSERT_EQ(top[0].count, 100u);
	ASSERT_EQ(moat_netrec_top(n, top, 0), 0u);
	ASSERT_EQ(moat_netrec_top(NULL, top, 1), 0u);

	/* nothing to record: AF_UNIX */
	event("connect", "UNIX");
	ev.n_dests = 1;
	ev.dests[0].has_addr = true;
	ev.dests[0].family = AF_UNIX;
	ASSERT_EQ(moat_netrec_record(n, a, &ev), 0u);
	ASSERT_EQ(moat_netrec_record(NULL, a, &ev), 0u);
	moat_netrec_free(n);
	moat_audit_free(a);
	close(rd);
}
