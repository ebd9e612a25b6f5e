/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <netinet/in.h>

#include "harness/tap.h"
#include "proxy/addr.h"

static unsigned cls(const char *s)
{
	struct sockaddr_storage ss;
	if (moat_addr_parse(s, &ss) < 0)
		moat_tap_fail(__FILE__, __LINE__, "cannot parse %s", s);
	return moat_addr_classify((struct sockaddr *)&ss);
}

static bool has(const char *s, unsigned flag)
{
	return (cls(s) & flag) != 0;
}

static uint32_t loose(const char *s, int want)
{
	uint32_t v = 0xdeadbeef;
	int r = moat_addr_parse_loose_ipv4(s, &v);
	if (r != want)
		moat_tap_fail(__FILE__, __LINE__, "loose(%s) = %d, want %d", s, r, want);
	return v;
}

TEST(addr_parse_canonical)
{
	struct sockaddr_storage ss;
	char buf[MOAT_ADDR_STRLEN];

	ASSERT_EQ(moat_addr_parse("1.2.3.4", &ss), 0);
	ASSERT_EQ(ss.ss_family, AF_INET);
	ASSERT_EQ(moat_addr_format((struct sockaddr *)&ss, false, buf, sizeof(buf)), 7);
	ASSERT_STREQ(buf, "1.2.3.4");
	ASSERT_EQ(moat_addr_parse("0.0.0.0", &ss), 0);
	ASSERT_EQ(moat_addr_parse("255.255.255.255", &ss), 0);
	ASSERT_EQ(moat_addr_parse("::1", &ss), 0);
	ASSERT_EQ(ss.ss_family, AF_INET6);
	ASSERT_EQ(moat_addr_parse("[::1]", &ss), 0);
	ASSERT_EQ(ss.ss_family, AF_INET6);
	ASSERT_EQ(moat_addr_parse("[2001:db8::1]", &ss), 0);
	ASSERT_EQ(moat_addr_parse("::ffff:127.0.0.1", &ss), 0);
	ASSERT_EQ(moat_addr_parse("2001:DB8::A", &ss), 0);
	moat_addr_format((struct sockaddr *)&ss, false, buf, sizeof(buf));
	ASSERT_STREQ(buf, "2001:db8::a");

	/* refused */
	const char *bad[] = {
		"",	      "1.2.3",	      "1.2.3.4.5",	  "01.2.3.4",	"1.2.3.04",
		"256.1.1.1",  "1.2.3.4 ",     " 1.2.3.4",	  "1.2.3.4.",	"0x7f.0.0.1",
		"2130706433", "127.1",	      "[1.2.3.4]",	  "[::1",	"::1]",
		"[]",	      "fe80::1%eth0", "[fe80::1%25eth0]", "1.2.3.4:80", "[::1]:80",
		":::",	      "1::2::3",      "localhost",	  "1.2.3.-4",	"+1.2.3.4",
		"1.2.3.4\n",  "1..2.3"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (moat_addr_parse(bad[i], &ss) != -EINVAL)
			moat_tap_fail(__FILE__, __LINE__, "accepted \"%s\"", bad[i]);
	ASSERT_EQ(moat_addr_parse_n("1.2.3.4\0x", 9, &ss), -EINVAL);
	ASSERT_EQ(moat_addr_parse_n("1.2.3.4xx", 7, &ss), 0);
}

TEST(addr_parse_loose_ipv4)
{
	ASSERT_EQ(loose("2130706433", 0), 0x7f000001);
	ASSERT_EQ(loose("0x7f.1", 0), 0x7f000001);
	ASSERT_EQ(loose("0177.0.0.1", 0), 0x7f000001);
	ASSERT_EQ(loose("127.1", 0), 0x7f000001);
	ASSERT_EQ(loose("127.0.1", 0), 0x7f000001);
	ASSERT_EQ(loose("0x7f000001", 0), 0x7f000001);
	ASSERT_EQ(loose("0X7F.0.0.1", 0), 0x7f000001);
	ASSERT_EQ(loose("017700000001", 0), 0x7f000001);
	ASSERT_EQ(loose("127.0.0.1", 0), 0x7f000001);
	ASSERT_EQ(loose("127.0.0.1.", 0), 0x7f000001);
	ASSERT_EQ(loose("0", 0), 0);
	ASSERT_EQ(loose("0x", 0), 0);
	ASSERT_EQ(loose("169.254.43518", 0), 0xa9fea9fe);
	ASSERT_EQ(loose("0xa9fea9fe", 0), 0xa9fea9fe);
	ASSERT_EQ(loose("4294967295", 0), 0xffffffff);
	ASSERT_EQ(loose("00000000000000000000000000000000000000000177.1", 0), 0x7f000001);
	/* numeric shape, invalid value */
	loose("4294967296", -ERANGE);
	loose("256.1.1.1", -ERANGE);
	loose("1.2.3.256", -ERANGE);
	loose("1.2.65536", -ERANGE);
	loose("1.16777216", -ERANGE);
	loose("08.1.1.1", -ERANGE);
	loose("1.2.3.4.5", -ERANGE);
	loose("99999999999999999999999999", -ERANGE);
	loose("0x100000000", -ERANGE);
	/* not numeric */
	loose("", -EINVAL);
	loose("a.b.c.d", -EINVAL);
	loose("example.com", -EINVAL);
	loose("1.2.3.4a", -EINVAL);
	loose("1..2", -EINVAL);
	loose(".1.2", -EINVAL);
	loose("1.2..", -EINVAL);
	loose("0xg", -EINVAL);
	loose("-1", -EINVAL);
	loose("1.2.3.4:80", -EINVAL);
	uint32_t v;
	ASSERT_EQ(moat_addr_parse_loose_ipv4_n("127.1\0", 6, &v), -EINVAL);
}

TEST(addr_classify_ipv4)
{
	ASSERT_TRUE(has("127.0.0.1", MOAT_ADDR_LOOPBACK));
	ASSERT_TRUE(has("127.255.255.254", MOAT_ADDR_LOOPBACK));
	ASSERT_TRUE(has("10.0.0.1", MOAT_ADDR_PRIVATE));
	ASSERT_TRUE(has("172.16.0.1", MOAT_ADDR_PRIVATE));
	ASSERT_TRUE(has("172.31.255.255", MOAT_ADDR_PRIVATE));
	ASSERT_EQ(cls("172.32.0.1"), 0);
	ASSERT_EQ(cls("172.15.255.255"), 0);
	ASSERT_TRUE(has("192.168.1.1", MOAT_ADDR_PRIVATE));
	ASSERT_TRUE(has("172.17.0.1", MOAT_ADDR_PRIVATE));
	ASSERT_TRUE(has("169.254.1.1", MOAT_ADDR_LINK_LOCAL));
	ASSERT_EQ(cls("169.254.169.254"), MOAT_ADDR_LINK_LOCAL | MOAT_ADDR_METADATA);
	ASSERT_TRUE(has("169.254.170.2", MOAT_ADDR_METADATA));
	ASSERT_TRUE(has("169.254.170.23", MOAT_ADDR_METADATA));
	ASSERT_TRUE(has("169.254.169.253", MOAT_ADDR_METADATA));
	ASSERT_TRUE(has("169.254.169.123", MOAT_ADDR_METADATA));
	ASSERT_TRUE(has("100.64.0.1", MOAT_ADDR_CGNAT));
	ASSERT_TRUE(has("100.127.255.255", MOAT_ADDR_CGNAT));
	ASSERT_EQ(cls("100.128.0.0"), 0);
	ASSERT_EQ(cls("100.63.255.255"), 0);
	ASSERT_EQ(cls("100.100.100.200"), MOAT_ADDR_CGNAT | MOAT_ADDR_METADATA);
	ASSERT_EQ(cls("168.63.129.16"), MOAT_ADDR_METADATA);
	ASSERT_EQ(cls("168.63.129.17"), 0);
	ASSERT_EQ(cls("0.0.0.0"), MOAT_ADDR_UNSPECIFIED);
	ASSERT_EQ(cls("0.1.2.3"), MOAT_ADDR_RESERVED);
	ASSERT_TRUE(has("224.0.0.1", MOAT_ADDR_MULTICAST));
	ASSERT_TRUE(has("239.255.255.250", MOAT_ADDR_MULTICAST));
	ASSERT_TRUE(has("255.255.255.255", MOAT_ADDR_BROADCAST));
	ASSERT_TRUE(has("240.0.0.1", MOAT_ADDR_RESERVED));
	ASSERT_TRUE(has("192.0.0.170", MOAT_ADDR_RESERVED));
	ASSERT_TRUE(has("192.0.2.1", MOAT_ADDR_RESERVED));
	ASSERT_TRUE(has("198.18.0.1", MOAT_ADDR_RESERVED));
	ASSERT_TRUE(has("198.19.255.255", MOAT_ADDR_RESERVED));
	ASSERT_EQ(cls("198.20.0.0"), 0);
	ASSERT_TRUE(has("198.51.100.7", MOAT_ADDR_RESERVED));
	ASSERT_TRUE(has("203.0.113.9", MOAT_ADDR_RESERVED));
	ASSERT_EQ(cls("1.1.1.1"), 0);
	ASSERT_EQ(cls("8.8.8.8"), 0);
	ASSERT_EQ(cls("140.82.112.3"), 0);
	ASSERT_EQ(cls("223.255.255.255"), 0);
	ASSERT_EQ(cls("11.0.0.0"), 0);
}

TEST(addr_classify_ipv6)
{
	ASSERT_EQ(cls("::1"), MOAT_ADDR_LOOPBACK);
	ASSERT_EQ(cls("::"), MOAT_ADDR_UNSPECIFIED);
	ASSERT_TRUE(has("fc00::1", MOAT_ADDR_PRIVATE));
	ASSERT_TRUE(has("fd12::1", MOAT_ADDR_PRIVATE));
	ASSERT_TRUE(has("fe80::1", MOAT_ADDR_LINK_LOCAL));
	ASSERT_TRUE(has("febf::1", MOAT_ADDR_LINK_LOCAL));
	ASSERT_TRUE(has("fec0::1", MOAT_ADDR_PRIVATE));
	ASSERT_TRUE(has("ff02::1", MOAT_ADDR_MULTICAST));
	ASSERT_EQ(cls("fd00:ec2::254"), MOAT_ADDR_PRIVATE | MOAT_ADDR_METADATA);
	ASSERT_EQ(cls("fd00:ec2::23"), MOAT_ADDR_PRIVATE | MOAT_ADDR_METADATA);
	ASSERT_TRUE(has("2001:db8::1", MOAT_ADDR_RESERVED));
	ASSERT_TRUE(has("3fff::1", MOAT_ADDR_RESERVED));
	ASSERT_TRUE(has("100::1", MOAT_ADDR_RESERVED));
	ASSERT_TRUE(has("2001:10::1", MOAT_ADDR_RESERVED));
	ASSERT_TRUE(has("4000::1", MOAT_ADDR_RESERVED));
	ASSERT_EQ(cls("2606:4700:4700::1111"), 0);
	ASSERT_EQ(cls("2606:50c0:8000::153"), 0);
	ASSERT_EQ(cls("2001:4860:4860::8888"), 0);

	/* embedded IPv4 forms */
	ASSERT_TRUE(has("::ffff:127.0.0.1", MOAT_ADDR_LOOPBACK));
	ASSERT_TRUE(has("::ffff:7f00:1", MOAT_ADDR_LOOPBACK));
	ASSERT_TRUE(has("::ffff:169.254.169.254", MOAT_ADDR_METADATA));
	ASSERT_TRUE(has("::ffff:10.1.2.3", MOAT_ADDR_PRIVATE));
	ASSERT_EQ(cls("::ffff:1.1.1.1"), MOAT_ADDR_EMBEDDED_V4);
	ASSERT_TRUE(has("::127.0.0.1", MOAT_ADDR_LOOPBACK));
	ASSERT_TRUE(has("::1.1.1.1", MOAT_ADDR_RESERVED));
	ASSERT_TRUE(has("64:ff9b::a9fe:a9fe", MOAT_ADDR_METADATA));
	ASSERT_TRUE(has("64:ff9b::127.0.0.1", MOAT_ADDR_LOOPBACK));
	ASSERT_EQ(cls("64:ff9b::1.1.1.1"), MOAT_ADDR_EMBEDDED_V4);
	ASSERT_TRUE(has("64:ff9b:1::10.0.0.1", MOAT_ADDR_PRIVATE));
	ASSERT_TRUE(has("2002:7f00:1::", MOAT_ADDR_LOOPBACK));
	ASSERT_TRUE(has("2002:a9fe:a9fe::1", MOAT_ADDR_METADATA));
	ASSERT_EQ(cls("2002:0101:0101::1"), MOAT_ADDR_EMBEDDED_V4);
	/* Teredo: server 1.1.1.1, client ~0x7f000001 = 80ff:fffe */
	ASSERT_TRUE(has("2001:0:101:101::80ff:fffe", MOAT_ADDR_LOOPBACK));
	ASSERT_TRUE(has("2001:0:a00:1::", MOAT_ADDR_PRIVATE)); /* server 10.0.0.1 */
	ASSERT_TRUE(!moat_addr_is_public(NULL));
}

TEST(addr_is_public_and_reason)
{
	struct sockaddr_storage ss;
	ASSERT_EQ(moat_addr_parse("1.1.1.1", &ss), 0);
	ASSERT_TRUE(moat_addr_is_public((struct sockaddr *)&ss));
	ASSERT_EQ(moat_addr_parse("::ffff:1.1.1.1", &ss), 0);
	ASSERT_TRUE(moat_addr_is_public((struct sockaddr *)&ss));
	ASSERT_EQ(moat_addr_parse("::ffff:127.0.0.1", &ss), 0);
	ASSERT_TRUE(!moat_addr_is_public((struct sockaddr *)&ss));
	ss.ss_family = AF_UNIX;
	ASSERT_TRUE(!moat_addr_is_public((struct sockaddr *)&ss));
	ASSERT_STREQ(moat_addr_flags_reason(cls("169.254.169.254")), "metadata");
	ASSERT_STREQ(moat_addr_flags_reason(cls("127.0.0.1")), "loopback");
	ASSERT_STREQ(moat_addr_flags_reason(cls("100.64.0.1")), "cgnat");
	ASSERT_STREQ(moat_addr_flags_reason(cls("10.0.0.1")), "private");
	ASSERT_STREQ(moat_addr_flags_reason(cls("fe80::1")), "link-local");
	ASSERT_STREQ(moat_addr_flags_reason(cls("0.0.0.0")), "unspecified");
	ASSERT_STREQ(moat_addr_flags_reason(cls("1.1.1.1")), "public");
	ASSERT_STREQ(moat_addr_flags_reason(MOAT_ADDR_EMBEDDED_V4), "public");
}

TEST(addr_format_and_unmap)
{
	struct sockaddr_storage ss, u;
	char buf[MOAT_ADDR_STRLEN];

	ASSERT_EQ(moat_addr_parse("2001:db8::1", &ss), 0);
	((struct sockaddr_in6 *)&ss)->sin6_port = htons(443);
	ASSERT_EQ(moat_addr_format((struct sockaddr *)&ss, true, buf, sizeof(buf)), 17);
	ASSERT_STREQ(buf, "[2001:db8::1]:443");
	ASSERT_EQ(moat_addr_format((struct sockaddr *)&ss, true, buf, 5), -ENOBUFS);
	ASSERT_STREQ(buf, "");
	ASSERT_EQ(moat_addr_parse("10.1.2.3", &ss), 0);
	((struct sockaddr_in *)&ss)->sin_port = htons(80);
	moat_addr_format((struct sockaddr *)&ss, true, buf, sizeof(buf));
	ASSERT_STREQ(buf, "10.1.2.3:80");
	ss.ss_family = AF_UNIX;
	ASSERT_EQ(moat_addr_format((struct sockaddr *)&ss, true, buf, sizeof(buf)), -EAFNOSUPPORT);

	ASSERT_EQ(moat_addr_parse("::ffff:10.1.2.3", &ss), 0);
	((struct sockaddr_in6 *)&ss)->sin6_port = htons(8080);
	ASSERT_TRUE(moat_addr_unmap((struct sockaddr *)&ss, &u));
	ASSERT_EQ(u.ss_family, AF_INET);
	moat_addr_format((struct sockaddr *)&u, true, buf, sizeof(buf));
	ASSERT_STREQ(buf, "10.1.2.3:8080");
	ASSERT_EQ(moat_addr_parse("::1", &ss), 0);
	ASSERT_TRUE(!moat_addr_unmap((struct sockaddr *)&ss, &u));
	ASSERT_EQ(u.ss_family, AF_INET6);
}

TEST(addr_cidr)
{
	struct moat_cidr c;
	struct sockaddr_storage ss;
	char buf[64];

	ASSERT_EQ(moat_cidr_parse("10.0.0.0/8", &c), 0);
	ASSERT_EQ(c.prefix, 8);
	moat_addr_parse("10.255.0.1", &ss);
	ASSERT_TRUE(moat_cidr_contains(&c, (struct sockaddr *)&ss));
	moat_addr_parse("11.0.0.1", &ss);
	ASSERT_TRUE(!moat_cidr_contains(&c, (struct sockaddr *)&ss));
	moat_addr_parse("::ffff:10.9.9.9", &ss);
	ASSERT_TRUE(moat_cidr_contains(&c, (struct sockaddr *)&ss));
	moat_addr_parse("::10.9.9.9", &ss); /* compatible form is NOT unmapped */
	ASSERT_TRUE(!moat_cidr_contains(&c, (struct sockaddr *)&ss));
	ASSERT_EQ(moat_cidr_format(&c, buf, sizeof(buf)), 10);
	ASSERT_STREQ(buf, "10.0.0.0/8");

	ASSERT_EQ(moat_cidr_parse("203.0.113.7", &c), 0);
	ASSERT_EQ(c.prefix, 32);
	moat_addr_parse("203.0.113.7", &ss);
	ASSERT_TRUE(moat_cidr_contains(&c, (struct sockaddr *)&ss));
	moat_addr_parse("203.0.113.8", &ss);
	ASSERT_TRUE(!moat_cidr_contains(&c, (struct sockaddr *)&ss));

	ASSERT_EQ(moat_cidr_parse("0.0.0.0/0", &c), 0);
	moat_addr_parse("1.2.3.4", &ss);
	ASSERT_TRUE(moat_cidr_contains(&c, (struct sockaddr *)&ss));
	moat_addr_parse("::1", &ss);
	ASSERT_TRUE(!moat_cidr_contains(&c, (struct sockaddr *)&ss));

	ASSERT_EQ(moat_cidr_parse("2001:db8::/33", &c), 0);
	moat_addr_parse("2001:db8:7fff::1", &ss);
	ASSERT_TRUE(moat_cidr_contains(&c, (struct sockaddr *)&ss));
	moat_addr_parse("2001:db8:8000::1", &ss);
	ASSERT_TRUE(!moat_cidr_contains(&c, (struct sockaddr *)&ss));
	ASSERT_EQ(moat_cidr_parse("::1", &c), 0);
	ASSERT_EQ(c.prefix, 128);

	const char *bad[] = {"10.0.0.1/8",  "10.0.0.0/33",    "10.0.0.0/", "10.0.0.0/08",
			     "10.0.0.0/-1", "10.0.0.0/+8",    "::/129",	   "[::1]/128",
			     "10/8",	    "10.0.0.0/8/8",   "",	   "/8",
			     "10.0.0.0/8 ", "2001:db8::1/32", "127.1/8"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (moat_cidr_parse(bad[i], &c) != -EINVAL)
			moat_tap_fail(__FILE__, __LINE__, "accepted cidr \"%s\"", bad[i]);
	ASSERT_TRUE(!moat_cidr_contains(NULL, (struct sockaddr *)&ss));
}

TEST(addr_special_names)
{
	ASSERT_STREQ(moat_host_special_reason("metadata.google.internal"), "metadata");
	ASSERT_STREQ(moat_host_special_reason("x.metadata.google.internal"), "metadata");
	ASSERT_STREQ(moat_host_special_reason("metadata"), "metadata");
	ASSERT_STREQ(moat_host_special_reason("instance-data"), "metadata");
	ASSERT_STREQ(moat_host_special_reason("metadata.tencentyun.com"), "metadata");
	ASSERT_STREQ(moat_host_special_reason("metadata.goog"), "metadata");
	ASSERT_TRUE(moat_host_is_metadata_name("instance-data.ec2.internal"));
	ASSERT_STREQ(moat_host_special_reason("localhost"), "local-name");
	ASSERT_STREQ(moat_host_special_reason("foo.localhost"), "local-name");
	ASSERT_STREQ(moat_host_special_reason("printer.local"), "local-name");
	ASSERT_STREQ(moat_host_special_reason("host.docker.internal"), "local-name");
	ASSERT_STREQ(moat_host_special_reason("kubernetes.default.svc"), "local-name");
	ASSERT_STREQ(moat_host_special_reason("kubernetes.default.svc.cluster.local"),
		     "local-name");
	ASSERT_STREQ(moat_host_special_reason("router.home.arpa"), "local-name");
	ASSERT_TRUE(moat_host_special_reason("example.com") == NULL);
	ASSERT_TRUE(moat_host_special_reason("metadata.example.com") == NULL);
	ASSERT_TRUE(moat_host_special_reason("notlocalhost") == NULL);
	ASSERT_TRUE(moat_host_special_reason("localhost.example.com") == NULL);
	ASSERT_TRUE(moat_host_special_reason("internal.example.com") == NULL);
	ASSERT_TRUE(moat_host_special_reason("") == NULL);
	ASSERT_TRUE(!moat_host_is_metadata_name("localhost"));
	ASSERT_TRUE(!moat_host_is_metadata_name(NULL));
}
