/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <netinet/in.h>

#include "harness/tap.h"
#include "proxy/addr.h"
#include "proxy/dns.h"

/* Build a query for @name (dotted) with @qtype into @buf; returns length. */
static size_t mkquery(uint8_t *buf, const char *name, uint16_t qtype)
{
	size_t pos = 12;
	memset(buf, 0, 12);
	buf[0] = 0xbe;
	buf[1] = 0xef;
	buf[2] = 0x01; /* RD */
	buf[5] = 1;
	while (*name) {
		const char *dot = strchr(name, '.');
		size_t l = dot ? (size_t)(dot - name) : strlen(name);
		buf[pos++] = (uint8_t)l;
		memcpy(buf + pos, name, l);
		pos += l;
		name += l;
		if (*name == '.')
			name++;
	}
	buf[pos++] = 0;
	buf[pos++] = (uint8_t)(qtype >> 8);
	buf[pos++] = (uint8_t)qtype;
	buf[pos++] = 0;
	buf[pos++] = 1;
	return pos;
}

TEST(dns_parse_query)
{
	uint8_t m[512];
	struct moat_dns_query q;
	size_t n = mkquery(m, "API.Example.COM", MOAT_DNS_TYPE_AAAA);

	ASSERT_EQ(moat_dns_parse_query(m, n, &q), 0);
	ASSERT_EQ(q.id, 0xbeef);
	ASSERT_TRUE(q.rd);
	ASSERT_EQ(q.qtype, MOAT_DNS_TYPE_AAAA);
	ASSERT_EQ(q.qclass, MOAT_DNS_CLASS_IN);
	ASSERT_STREQ(q.name, "api.example.com");
	ASSERT_TRUE(q.name_plain);
	ASSERT_EQ(q.qname_wire_len, 17);
	ASSERT_TRUE(memcmp(q.qname_wire,
			   "\x03"
			   "API",
			   4) == 0);
	ASSERT_TRUE(!q.has_edns);

	/* every truncation fails cleanly */
	for (size_t i = 0; i < n; i++) {
		int r = moat_dns_parse_query(m, i, &q);
		if (r >= 0)
			moat_tap_fail(__FILE__, __LINE__, "prefix %zu parsed", i);
	}
	ASSERT_EQ(moat_dns_parse_query(m, 11, &q), -MOAT_DNS_E_SHORT);
	ASSERT_EQ(moat_dns_parse_query(m, n - 1, &q), -MOAT_DNS_E_TRUNCATED);

	/* root */
	n = mkquery(m, "", MOAT_DNS_TYPE_NS);
	ASSERT_EQ(moat_dns_parse_query(m, n, &q), 0);
	ASSERT_STREQ(q.name, "");
	ASSERT_EQ(q.qname_wire_len, 1);

	/* EDNS OPT tolerated */
	n = mkquery(m, "a.test", MOAT_DNS_TYPE_A);
	m[11] = 1;
	ASSERT_EQ(moat_dns_parse_query(m, n, &q), 0);
	ASSERT_TRUE(q.has_edns);
}

TEST(dns_parse_refused)
{
	uint8_t m[512];
	struct moat_dns_query q;
	size_t n = mkquery(m, "a.test", MOAT_DNS_TYPE_A);

	m[2] |= 0x80; /* QR */
	ASSERT_EQ(moat_dns_parse_query(m, n, &q), -MOAT_DNS_E_RESPONSE);
	ASSERT_EQ(moat_dns_err_rcode(-MOAT_DNS_E_RESPONSE), -1);
	m[2] = 0x01 | (2 << 3); /* opcode STATUS */
	ASSERT_EQ(moat_dns_parse_query(m, n, &q), -MOAT_DNS_E_OPCODE);
	ASSERT_EQ(moat_dns_err_rcode(-MOAT_DNS_E_OPCODE), MOAT_DNS_RCODE_NOTIMP);
	m[2] = 0x01;
	m[5] = 2;
	ASSERT_EQ(moat_dns_parse_query(m, n, &q), -MOAT_DNS_E_COUNTS);
	m[5] = 0;
	ASSERT_EQ(moat_dns_parse_query(m, n, &q), -MOAT_DNS_E_COUNTS);
	m[5] = 1;
	m[7] = 1;
	ASSERT_EQ(moat_dns_parse_query(m, n, &q), -MOAT_DNS_E_COUNTS);
	m[7] = 0;
	m[9] = 1;
	ASSERT_EQ(moat_dns_parse_query(m, n, &q), -MOAT_DNS_E_COUNTS);
	m[9] = 0;
	m[11] = 2;
	ASSERT_EQ(moat_dns_parse_query(m, n, &q), -MOAT_DNS_E_COUNTS);
	ASSERT_EQ(moat_dns_err_rcode(-MOAT_DNS_E_COUNTS), MOAT_DNS_RCODE_FORMERR);
	m[11] = 0;
	m[12] = 0x41; /* extended label type */
	ASSERT_EQ(moat_dns_parse_query(m, n, &q), -MOAT_DNS_E_NAME);
	m[12] = 0x81;
	ASSERT_EQ(moat_dns_parse_query(m, n, &q), -MOAT_DNS_E_NAME);
	m[12] = 60; /* label longer than the message */
	ASSERT_EQ(moat_dns_parse_query(m, n, &q), -MOAT_DNS_E_TRUNCATED);
	ASSERT_STREQ(moat_dns_strerror(-MOAT_DNS_E_POINTER), "bad-compression");
}

TEST(dns_compression)
{
	uint8_t m[512];
	struct moat_dns_query q;
	size_t n;

	/* self pointer at offset 12 */
	n = mkquery(m, "", MOAT_DNS_TYPE_A);
	m[12] = 0xc0;
	m[13] = 12;
	ASSERT_EQ(moat_dns_parse_query(m, n + 1, &q), -MOAT_DNS_E_POINTER);
	/* pointer into the header */
	m[13] = 2;
	ASSERT_EQ(moat_dns_parse_query(m, n + 1, &q), -MOAT_DNS_E_POINTER);
	/* forward pointer */
	m[13] = 20;
	ASSERT_EQ(moat_dns_parse_query(m, n + 1, &q), -MOAT_DNS_E_POINTER);

	/* a loop: label "a" then a pointer back to its own start */
	memset(m, 0, sizeof(m));
	m[5] = 1;
	m[12] = 1;
	m[13] = 'a';
	m[14] = 0xc0;
	m[15] = 12;
	ASSERT_EQ(moat_dns_parse_query(m, 20, &q), -MOAT_DNS_E_POINTER);
	/* In a one-question query nothing but the header precedes the name, so
	 * there is no legal pointer target at all: every pointer is refused. */
	m[12] = 0xc0;
	m[13] = 11;
	ASSERT_EQ(moat_dns_parse_query(m, 20, &q), -MOAT_DNS_E_POINTER);
	m[12] = 0xff;
	m[13] = 0xff;
	ASSERT_EQ(moat_dns_parse_query(m, 20, &q), -MOAT_DNS_E_POINTER);
}

TEST(dns_name_limits_and_escapes)
{
	uint8_t m[600];
	struct moat_dns_query q;
	char name[400];
	size_t n;

	/* 4 labels of 63 = 4*64+1 = 257 wire bytes: too long */
	memset(name, 'a', sizeof(name));
	for (int i = 63; i < 4 * 64; i += 64)
		name[i] = '.';
	name[4 * 64 - 1] = '\0';
	n = mkquery(m, name, MOAT_DNS_TYPE_A);
	ASSERT_EQ(moat_dns_parse_query(m, n, &q), -MOAT_DNS_E_NAME);
	/* 3*64 + 62 = 254 content+length bytes + root = 255: fits */
	name[3 * 64 + 61] = '\0';
	n = mkquery(m, name, MOAT_DNS_TYPE_A);
	ASSERT_EQ(moat_dns_parse_query(m, n, &q), 0);
	ASSERT_EQ(q.qname_wire_len, 255);

	/* binary label: escaped, not plain */
	n = mkquery(m, "x.test", MOAT_DNS_TYPE_A);
	m[13] = '.';
	ASSERT_EQ(moat_dns_parse_query(m, n, &q), 0);
	ASSERT_STREQ(q.name, "\\046.test");
	ASSERT_TRUE(!q.name_plain);
	m[13] = 0;
	ASSERT_EQ(moat_dns_parse_query(m, n, &q), 0);
	ASSERT_STREQ(q.name, "\\000.test");
	m[13] = 0xff;
	ASSERT_EQ(moat_dns_parse_query(m, n, &q), 0);
	ASSERT_STREQ(q.name, "\\255.test");
	m[13] = '_';
	ASSERT_EQ(moat_dns_parse_query(m, n, &q), 0);
	ASSERT_STREQ(q.name, "_.test");
	ASSERT_TRUE(q.name_plain);

	/* worst-case escaping fits the text buffer */
	memset(m, 0, sizeof(m));
	m[5] = 1;
	size_t pos = 12;
	for (int l = 0; l < 4; l++) {
		int len = l < 3 ? 63 : 61;
		m[pos++] = (uint8_t)len;
		memset(m + pos, 0xfe, (size_t)len);
		pos += (size_t)len;
	}
	m[pos++] = 0;
	m[pos++] = 0;
	m[pos++] = 1;
	m[pos++] = 0;
	m[pos++] = 1;
	ASSERT_EQ(moat_dns_parse_query(m, pos, &q), 0);
	ASSERT_EQ(strlen(q.name), 250 * 4 + 3);
}

TEST(dns_build_answers)
{
	uint8_t m[512], out[600];
	struct moat_dns_query q;
	struct sockaddr_storage addrs[3];
	size_t n = mkquery(m, "Allowed.Test", MOAT_DNS_TYPE_A);
	int r;

	ASSERT_EQ(moat_dns_parse_query(m, n, &q), 0);
	moat_addr_parse("198.18.0.7", &addrs[0]);
	moat_addr_parse("fd00::7", &addrs[1]);
	moat_addr_parse("198.18.0.8", &addrs[2]);
	r = moat_dns_build_addr_response(&q, addrs, 3, 5, out, sizeof(out));
	ASSERT_EQ(r, (int)n + 2 * 16);
	ASSERT_EQ(out[0], 0xbe);
	ASSERT_EQ(out[1], 0xef);
	ASSERT_EQ(out[2], 0x85); /* QR AA RD */
	ASSERT_EQ(out[3], 0x80); /* RA, NOERROR */
	ASSERT_EQ(out[5], 1);
	ASSERT_EQ(out[7], 2);
	ASSERT_TRUE(memcmp(out + 12, m + 12, n - 12) == 0); /* question echoed as sent */
	const uint8_t rr[] = {0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 5, 0, 4, 198, 18, 0, 7};
	ASSERT_TRUE(memcmp(out + n, rr, sizeof(rr)) == 0);

	/* AAAA */
	n = mkquery(m, "allowed.test", MOAT_DNS_TYPE_AAAA);
	ASSERT_EQ(moat_dns_parse_query(m, n, &q), 0);
	r = moat_dns_build_addr_response(&q, addrs, 3, 5, out, sizeof(out));
	ASSERT_EQ(r, (int)n + 28);
	ASSERT_EQ(out[7], 1);
	/* NODATA: AAAA with only IPv4 addresses, and other qtypes */
	r = moat_dns_build_addr_response(&q, addrs, 1, 5, out, sizeof(out));
	ASSERT_EQ(r, (int)n);
	ASSERT_EQ(out[3] & 0xf, 0);
	ASSERT_EQ(out[7], 0);
	n = mkquery(m, "allowed.test", MOAT_DNS_TYPE_TXT);
	ASSERT_EQ(moat_dns_parse_query(m, n, &q), 0);
	ASSERT_EQ(moat_dns_build_addr_response(&q, addrs, 3, 5, out, sizeof(out)), (int)n);

	/* truncation: answers that do not fit set TC */
	n = mkquery(m, "allowed.test", MOAT_DNS_TYPE_A);
	ASSERT_EQ(moat_dns_parse_query(m, n, &q), 0);
	r = moat_dns_build_addr_response(&q, addrs, 3, 5, out, n + 16 + 4);
	ASSERT_EQ(r, (int)n);
	ASSERT_TRUE(out[2] & 0x02);
	ASSERT_EQ(out[7], 0);
	ASSERT_EQ(moat_dns_build_addr_response(&q, addrs, 3, 5, out, n - 1), -ENOBUFS);
}

TEST(dns_build_rcodes)
{
	uint8_t m[512], out[512];
	struct moat_dns_query q;
	size_t n = mkquery(m, "exfil.test", MOAT_DNS_TYPE_A);

	ASSERT_EQ(moat_dns_parse_query(m, n, &q), 0);
	ASSERT_EQ(moat_dns_build_rcode_response(&q, MOAT_DNS_RCODE_REFUSED, out, sizeof(out)),
		  (int)n);
	ASSERT_EQ(out[3] & 0xf, MOAT_DNS_RCODE_REFUSED);
	ASSERT_EQ(out[2] & 0x04, 0); /* not authoritative */
	ASSERT_EQ(moat_dns_build_rcode_response(&q, MOAT_DNS_RCODE_NXDOMAIN, out, sizeof(out)),
		  (int)n);
	ASSERT_EQ(out[3] & 0xf, MOAT_DNS_RCODE_NXDOMAIN);
	ASSERT_TRUE(out[2] & 0x04);
	ASSERT_EQ(out[5], 1);
	ASSERT_EQ(out[7], 0);

	/* header-only answer for garbage */
	uint8_t junk[12] = {1, 2, 0x01, 0, 0, 9, 0, 0, 0, 0, 0, 0};
	ASSERT_EQ(
		moat_dns_build_header_response(junk, 12, MOAT_DNS_RCODE_FORMERR, out, sizeof(out)),
		12);
	ASSERT_EQ(out[0], 1);
	ASSERT_EQ(out[1], 2);
	ASSERT_EQ(out[2], 0x81);
	ASSERT_EQ(out[3], 0x81);
	ASSERT_EQ(out[5], 0);
	ASSERT_EQ(moat_dns_build_header_response(junk, 11, 1, out, sizeof(out)), -EINVAL);
	junk[2] = 0x80;
	ASSERT_EQ(moat_dns_build_header_response(junk, 12, 1, out, sizeof(out)), -EINVAL);
}

TEST(dns_tcp_framing)
{
	uint8_t buf[100] = {0, 14};
	const uint8_t *msg = NULL;
	size_t len = 0;

	ASSERT_EQ(moat_dns_tcp_unframe(buf, 0, &msg, &len), 0);
	ASSERT_EQ(moat_dns_tcp_unframe(buf, 1, &msg, &len), 0);
	ASSERT_EQ(moat_dns_tcp_unframe(buf, 15, &msg, &len), 0);
	ASSERT_EQ(moat_dns_tcp_unframe(buf, 16, &msg, &len), 16);
	ASSERT_TRUE(msg == buf + 2);
	ASSERT_EQ(len, 14);
	ASSERT_EQ(moat_dns_tcp_unframe(buf, 40, &msg, &len), 16);
	buf[1] = 11;
	ASSERT_EQ(moat_dns_tcp_unframe(buf, 40, &msg, &len), -EMSGSIZE);
	buf[1] = 0;
	ASSERT_EQ(moat_dns_tcp_unframe(buf, 40, &msg, &len), -EMSGSIZE);
	ASSERT_EQ(moat_dns_tcp_prefix(buf, 300), 2);
	ASSERT_EQ(buf[0], 1);
	ASSERT_EQ(buf[1], 44);
	ASSERT_EQ(moat_dns_tcp_prefix(buf, 70000), -EMSGSIZE);
}
