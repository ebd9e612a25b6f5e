/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <netinet/in.h>

#include "harness/tap.h"
#include "proxy/socks5.h"

TEST(socks5_greeting)
{
	struct moat_socks5_greeting g;
	const uint8_t ok[] = {5, 2, 0x02, 0x00};

	for (size_t i = 0; i < sizeof(ok); i++)
		if (i > 0)
			ASSERT_EQ(moat_socks5_parse_greeting(ok, i, &g), 0);
	ASSERT_EQ(moat_socks5_parse_greeting(ok, 0, &g), 0);
	ASSERT_EQ(moat_socks5_parse_greeting(ok, sizeof(ok), &g), 4);
	ASSERT_EQ(g.n_methods, 2);
	ASSERT_TRUE(g.no_auth_offered);

	const uint8_t userpass[] = {5, 1, 0x02};
	ASSERT_EQ(moat_socks5_parse_greeting(userpass, 3, &g), -MOAT_SOCKS5_E_NO_ACCEPTABLE);
	ASSERT_TRUE(!g.no_auth_offered);
	const uint8_t none[] = {5, 0};
	ASSERT_EQ(moat_socks5_parse_greeting(none, 2, &g), -MOAT_SOCKS5_E_NO_METHODS);
	const uint8_t trailing[] = {5, 1, 0, 5, 1, 0};
	ASSERT_EQ(moat_socks5_parse_greeting(trailing, 6, &g), -MOAT_SOCKS5_E_TRAILING);
	const uint8_t http[] = "GET / HTTP/1.1\r\n";
	ASSERT_EQ(moat_socks5_parse_greeting(http, 16, &g), -MOAT_SOCKS5_E_VERSION);
	ASSERT_EQ(moat_socks5_parse_greeting(http, 16, NULL), -MOAT_SOCKS5_E_VERSION);
	ASSERT_EQ(moat_socks5_parse_greeting(ok, sizeof(ok), NULL), 4);
	/* all 255 methods */
	uint8_t many[257] = {5, 255};
	for (int i = 0; i < 255; i++)
		many[2 + i] = (uint8_t)(254 - i);
	ASSERT_EQ(moat_socks5_parse_greeting(many, 257, &g), 257);
	ASSERT_EQ(moat_socks5_parse_greeting(many, 256, &g), 0);
}

TEST(socks5_socks4_refused)
{
	/* SOCKS4 CONNECT 169.254.169.254:80 and SOCKS4a 0.0.0.1 + name */
	const uint8_t s4[] = {4, 1, 0, 80, 169, 254, 169, 254, 'u', 0};
	const uint8_t s4a[] = {4, 1, 0, 80, 0, 0, 0, 1, 0, 'e', 'v', 'i', 'l', 0};
	uint8_t rej[8];
	ASSERT_EQ(moat_socks5_parse_greeting(s4, sizeof(s4), NULL), -MOAT_SOCKS5_E_SOCKS4);
	ASSERT_EQ(moat_socks5_parse_greeting(s4a, sizeof(s4a), NULL), -MOAT_SOCKS5_E_SOCKS4);
	ASSERT_EQ(moat_socks5_parse_greeting(s4, 1, NULL), -MOAT_SOCKS5_E_SOCKS4);
	ASSERT_EQ(moat_socks5_parse_request(s4, sizeof(s4), NULL), -MOAT_SOCKS5_E_SOCKS4);
	ASSERT_EQ(moat_socks5_build_socks4_reject(rej), 8);
	ASSERT_EQ(rej[0], 0);
	ASSERT_EQ(rej[1], 0x5b);
	ASSERT_STREQ(moat_socks5_strerror(-MOAT_SOCKS5_E_SOCKS4), "socks4");
}

TEST(socks5_request_ipv4)
{
	struct moat_socks5_request r;
	const uint8_t req[] = {5, 1, 0, 1, 140, 82, 112, 3, 0x01, 0xbb, 'X'};

	for (size_t i = 0; i < 10; i++)
		ASSERT_EQ(moat_socks5_parse_request(req, i, &r), 0);
	ASSERT_EQ(moat_socks5_parse_request(req, sizeof(req), &r), 10); /* payload follows */
	ASSERT_EQ(r.cmd, MOAT_SOCKS5_CMD_CONNECT);
	ASSERT_EQ(r.host_kind, MOAT_HOST_IPV4);
	ASSERT_STREQ(r.host, "140.82.112.3");
	ASSERT_EQ(r.port, 443);
	ASSERT_EQ(r.addr.ss_family, AF_INET);
	ASSERT_EQ(ntohs(((struct sockaddr_in *)&r.addr)->sin_port), 443);
	ASSERT_STREQ(r.raw_name, "");

	const uint8_t port0[] = {5, 1, 0, 1, 1, 1, 1, 1, 0, 0};
	ASSERT_EQ(moat_socks5_parse_request(port0, sizeof(port0), &r), -MOAT_SOCKS5_E_PORT);
	const uint8_t rsv[] = {5, 1, 1, 1, 1, 1, 1, 1, 0, 80};
	ASSERT_EQ(moat_socks5_parse_request(rsv, sizeof(rsv), &r), -MOAT_SOCKS5_E_RESERVED);
	const uint8_t atyp[] = {5, 1, 0, 2, 1, 1, 1, 1, 0, 80};
	ASSERT_EQ(moat_socks5_parse_request(atyp, sizeof(atyp), &r), -MOAT_SOCKS5_E_ATYP);
	ASSERT_EQ(moat_socks5_err_reply(-MOAT_SOCKS5_E_ATYP), 0x08);
}

TEST(socks5_request_ipv6)
{
	struct moat_socks5_request r;
	uint8_t req[22] = {5, 1, 0, 4};
	/* ::ffff:127.0.0.1 */
	req[4 + 10] = 0xff;
	req[4 + 11] = 0xff;
	req[4 + 12] = 127;
	req[4 + 15] = 1;
	req[20] = 0x46;
	req[21] = 0xa0;
	ASSERT_EQ(moat_socks5_parse_request(req, 21, &r), 0);
	ASSERT_EQ(moat_socks5_parse_request(req, 22, &r), 22);
	ASSERT_EQ(r.host_kind, MOAT_HOST_IPV6);
	ASSERT_STREQ(r.host, "::ffff:127.0.0.1");
	ASSERT_EQ(r.port, 18080);
	ASSERT_EQ(r.addr.ss_family, AF_INET6);
}

static int domain_req(const char *name, size_t nlen, struct moat_socks5_request *r)
{
	uint8_t buf[300] = {5, 1, 0, 3, (uint8_t)nlen};
	memcpy(buf + 5, name, nlen);
	buf[5 + nlen] = 0x01;
	buf[6 + nlen] = 0xbb;
	return moat_socks5_parse_request(buf, 7 + nlen, r);
}

TEST(socks5_request_domain)
{
	struct moat_socks5_request r;

	ASSERT_EQ(domain_req("Api.Example.COM.", 16, &r), 23);
	ASSERT_EQ(r.host_kind, MOAT_HOST_NAME);
	ASSERT_STREQ(r.host, "api.example.com");
	ASSERT_STREQ(r.raw_name, "Api.Example.COM.");
	ASSERT_EQ(r.port, 443);
	ASSERT_EQ(r.addr.ss_family, AF_UNSPEC);

	/* names that are really addresses are classified as addresses */
	ASSERT_EQ(domain_req("127.0.0.1", 9, &r), 16);
	ASSERT_EQ(r.host_kind, MOAT_HOST_IPV4);
	ASSERT_TRUE(!r.host_loose_ipv4);
	ASSERT_EQ(r.addr.ss_family, AF_INET);
	ASSERT_EQ(domain_req("0x7f.1", 6, &r), 13);
	ASSERT_EQ(r.host_kind, MOAT_HOST_IPV4);
	ASSERT_TRUE(r.host_loose_ipv4);
	ASSERT_STREQ(r.host, "127.0.0.1");
	ASSERT_EQ(domain_req("[::1]", 5, &r), 12);
	ASSERT_EQ(r.host_kind, MOAT_HOST_IPV6);
	ASSERT_EQ(r.addr.ss_family, AF_INET6);
	ASSERT_EQ(domain_req("::1", 3, &r), 10);
	ASSERT_EQ(r.host_kind, MOAT_HOST_IPV6);

	/* refused names */
	ASSERT_EQ(domain_req("", 0, &r), -MOAT_SOCKS5_E_NAME);
	ASSERT_EQ(domain_req("evil\0.allowed.test", 18, &r), -MOAT_SOCKS5_E_NAME);
	ASSERT_STREQ(r.raw_name, "evil?.allowed.test");
	ASSERT_EQ(domain_req("a b", 3, &r), -MOAT_SOCKS5_E_NAME);
	ASSERT_EQ(domain_req("a..b", 4, &r), -MOAT_SOCKS5_E_NAME);
	ASSERT_EQ(domain_req("256.0.0.1", 9, &r), -MOAT_SOCKS5_E_NAME);
	ASSERT_EQ(domain_req("a.com:80", 8, &r), -MOAT_SOCKS5_E_NAME);
	char longname[255];
	memset(longname, 'a', sizeof(longname));
	ASSERT_EQ(domain_req(longname, 255, &r), -MOAT_SOCKS5_E_NAME);

	/* length byte larger than the data: need more, never over-read */
	const uint8_t shortname[] = {5, 1, 0, 3, 200, 'a', 'b'};
	ASSERT_EQ(moat_socks5_parse_request(shortname, sizeof(shortname), &r), 0);
}

TEST(socks5_commands_refused)
{
	struct moat_socks5_request r;
	const uint8_t bind[] = {5, 2, 0, 1, 1, 2, 3, 4, 0, 80};
	const uint8_t udp[] = {5, 3, 0, 1, 0, 0, 0, 0, 0, 0};
	const uint8_t unk[] = {5, 9, 0, 1, 1, 2, 3, 4, 0, 80};

	ASSERT_EQ(moat_socks5_parse_request(bind, 9, &r), 0); /* only when complete */
	ASSERT_EQ(moat_socks5_parse_request(bind, sizeof(bind), &r), -MOAT_SOCKS5_E_COMMAND);
	ASSERT_EQ(r.cmd, MOAT_SOCKS5_CMD_BIND);
	ASSERT_EQ(moat_socks5_err_reply(-MOAT_SOCKS5_E_COMMAND), MOAT_SOCKS5_REP_CMD_UNSUPPORTED);
	ASSERT_EQ(moat_socks5_parse_request(udp, sizeof(udp), &r), -MOAT_SOCKS5_E_COMMAND);
	ASSERT_EQ(r.cmd, MOAT_SOCKS5_CMD_UDP_ASSOCIATE);
	ASSERT_EQ(moat_socks5_parse_request(unk, sizeof(unk), &r), -MOAT_SOCKS5_E_COMMAND);
	ASSERT_EQ(moat_socks5_err_reply(-MOAT_SOCKS5_E_NAME), MOAT_SOCKS5_REP_GENERAL_FAILURE);
}

TEST(socks5_replies)
{
	uint8_t buf[MOAT_SOCKS5_REPLY_MAX];
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(1080)};
	struct sockaddr_in6 sin6 = {.sin6_family = AF_INET6, .sin6_port = htons(443)};

	inet_pton(AF_INET, "127.0.0.53", &sin.sin_addr);
	ASSERT_EQ(moat_socks5_build_reply(buf, sizeof(buf), MOAT_SOCKS5_REP_SUCCEEDED,
					  (struct sockaddr *)&sin),
		  10);
	const uint8_t want4[] = {5, 0, 0, 1, 127, 0, 0, 53, 0x04, 0x38};
	ASSERT_TRUE(memcmp(buf, want4, 10) == 0);
	ASSERT_EQ(moat_socks5_build_reply(buf, sizeof(buf), MOAT_SOCKS5_REP_NOT_ALLOWED, NULL), 10);
	const uint8_t want_deny[] = {5, 2, 0, 1, 0, 0, 0, 0, 0, 0};
	ASSERT_TRUE(memcmp(buf, want_deny, 10) == 0);
	inet_pton(AF_INET6, "::1", &sin6.sin6_addr);
	ASSERT_EQ(moat_socks5_build_reply(buf, sizeof(buf), 0, (struct sockaddr *)&sin6), 22);
	ASSERT_EQ(buf[3], 4);
	ASSERT_EQ(buf[19], 1);
	ASSERT_EQ(buf[20], 0x01);
	ASSERT_EQ(buf[21], 0xbb);
	ASSERT_EQ(moat_socks5_build_reply(buf, 21, 0, (struct sockaddr *)&sin6), -ENOBUFS);
	ASSERT_EQ(moat_socks5_build_reply(buf, 9, 0, NULL), -ENOBUFS);
	ASSERT_EQ(MOAT_SOCKS5_METHOD_REPLY_NONE[1], 0xff);
	ASSERT_STREQ(moat_socks5_strerror(77), "unknown");
}
