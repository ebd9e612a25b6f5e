/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "harness/tap.h"
#include "proxy/sni.h"

#include "sni_openssl_hello.h"

struct buf {
	uint8_t b[70000];
	size_t n;
};

static void put(struct buf *b, const void *p, size_t n)
{
	memcpy(b->b + b->n, p, n);
	b->n += n;
}
static void put8(struct buf *b, unsigned v)
{
	b->b[b->n++] = (uint8_t)v;
}
static void put16(struct buf *b, unsigned v)
{
	put8(b, v >> 8);
	put8(b, v);
}

/* One extension: type + length + data. */
static void ext(struct buf *b, unsigned type, const void *data, size_t n)
{
	put16(b, type);
	put16(b, (unsigned)n);
	put(b, data, n);
}

/* server_name extension data with one host_name entry. */
static size_t sni_data(uint8_t *out, const char *name)
{
	size_t n = strlen(name);
	out[0] = (uint8_t)((n + 3) >> 8);
	out[1] = (uint8_t)(n + 3);
	out[2] = 0;
	out[3] = (uint8_t)(n >> 8);
	out[4] = (uint8_t)n;
	memcpy(out + 5, name, n);
	return n + 5;
}

/* A ClientHello handshake message with the given extensions block. */
static void hello(struct buf *msg, const struct buf *exts, bool with_exts)
{
	struct buf body = {.n = 0};
	uint8_t random[32] = {1};
	put16(&body, 0x0303);
	put(&body, random, 32);
	put8(&body, 0); /* session id */
	put16(&body, 2);
	put16(&body, 0x1301);
	put8(&body, 1);
	put8(&body, 0);
	if (with_exts) {
		put16(&body, (unsigned)exts->n);
		put(&body, exts->b, exts->n);
	}
	msg->n = 0;
	put8(msg, 1);
	put8(msg, (unsigned)(body.n >> 16));
	put16(msg, (unsigned)(body.n & 0xffff));
	put(msg, body.b, body.n);
}

/* Wrap a handshake message into records of at most @frag bytes. */
static void records(struct buf *out, const struct buf *msg, size_t frag)
{
	out->n = 0;
	for (size_t off = 0; off < msg->n; off += frag) {
		size_t n = msg->n - off < frag ? msg->n - off : frag;
		put8(out, 22);
		put16(out, 0x0301);
		put16(out, (unsigned)n);
		put(out, msg->b + off, n);
	}
}

static struct buf exts, msg, wire;

static int run_sni(const char *name, struct moat_sni_info *info)
{
	uint8_t d[600];
	exts.n = 0;
	ext(&exts, 0, d, sni_data(d, name));
	hello(&msg, &exts, true);
	records(&wire, &msg, 16384);
	return moat_sni_parse(wire.b, wire.n, info);
}

TEST(sni_real_openssl_hello)
{
	struct moat_sni_info info;
	ASSERT_EQ(moat_sni_parse(openssl_hello, sizeof(openssl_hello), &info), MOAT_SNI_FOUND);
	ASSERT_STREQ(info.host, "api.example.com");
	ASSERT_STREQ(info.alpn, "h2,http/1.1");
	ASSERT_EQ(info.legacy_version, 0x0303);
	ASSERT_EQ(info.hello_len, sizeof(openssl_hello) - 5);
	/* every prefix needs more */
	for (size_t i = 0; i < sizeof(openssl_hello); i++)
		if (moat_sni_parse(openssl_hello, i, &info) != MOAT_SNI_NEED_MORE)
			moat_tap_fail(__FILE__, __LINE__, "prefix %zu", i);
}

TEST(sni_fragmented)
{
	struct moat_sni_info info;
	uint8_t d[600];
	static const uint8_t alpn[] = {0, 3, 2, 'h', '2'};

	exts.n = 0;
	ext(&exts, 10, "\x00\x02\x00\x1d", 4); /* supported_groups first */
	ext(&exts, 0, d, sni_data(d, "Allowed.Test."));
	ext(&exts, 16, alpn, sizeof(alpn));
	hello(&msg, &exts, true);
	for (size_t frag = 1; frag <= msg.n; frag = frag * 2 + 1) {
		records(&wire, &msg, frag);
		ASSERT_EQ(moat_sni_parse(wire.b, wire.n, &info), MOAT_SNI_FOUND);
		ASSERT_STREQ(info.host, "allowed.test");
		ASSERT_STREQ(info.alpn, "h2");
		/* cut in the middle of the last record */
		ASSERT_EQ(moat_sni_parse(wire.b, wire.n - 1, &info), MOAT_SNI_NEED_MORE);
	}
	/* trailing data after the hello (e.g. early data records) is fine */
	records(&wire, &msg, 100);
	put(&wire, "\x17\x03\x03\x00\x01X", 6);
	ASSERT_EQ(moat_sni_parse(wire.b, wire.n, &info), MOAT_SNI_FOUND);
}

TEST(sni_not_tls_and_no_sni)
{
	struct moat_sni_info info;
	ASSERT_EQ(moat_sni_parse((const uint8_t *)"GET / HTTP/1.1\r\n", 16, &info),
		  MOAT_SNI_NOT_TLS);
	ASSERT_EQ(moat_sni_parse((const uint8_t *)"SSH-2.0-OpenSSH_9.2\r\n", 21, &info),
		  MOAT_SNI_NOT_TLS);
	ASSERT_EQ(moat_sni_parse((const uint8_t *)"\x16\x02", 2, &info), MOAT_SNI_NOT_TLS);
	ASSERT_EQ(moat_sni_parse((const uint8_t *)"\x80\x2e\x01", 3, &info), MOAT_SNI_NOT_TLS);
	ASSERT_EQ(moat_sni_parse((const uint8_t *)"\x16", 1, &info), MOAT_SNI_NEED_MORE);
	ASSERT_EQ(moat_sni_parse(NULL, 0, &info), MOAT_SNI_NEED_MORE);

	exts.n = 0;
	ext(&exts, 10, "\x00\x02\x00\x1d", 4);
	hello(&msg, &exts, true);
	records(&wire, &msg, 16384);
	ASSERT_EQ(moat_sni_parse(wire.b, wire.n, &info), MOAT_SNI_NO_SNI);
	ASSERT_STREQ(info.host, "");
	hello(&msg, &exts, false);
	records(&wire, &msg, 16384);
	ASSERT_EQ(moat_sni_parse(wire.b, wire.n, &info), MOAT_SNI_NO_SNI);
	ASSERT_STREQ(moat_sni_result_str(MOAT_SNI_NO_SNI), "no-sni");
}

TEST(sni_malformed)
{
	struct moat_sni_info info;
	uint8_t d[600];
	size_t n;

	/* IP literal, invalid names */
	ASSERT_EQ(run_sni("127.0.0.1", &info), MOAT_SNI_MALFORMED);
	ASSERT_CONTAINS(info.malformed_why, "IP literal");
	ASSERT_EQ(run_sni("0x7f.1", &info), MOAT_SNI_MALFORMED);
	ASSERT_EQ(run_sni("::1", &info), MOAT_SNI_MALFORMED);
	ASSERT_EQ(run_sni("a..b", &info), MOAT_SNI_MALFORMED);
	ASSERT_EQ(run_sni("evil.test\r\nX: y", &info), MOAT_SNI_MALFORMED);
	ASSERT_EQ(run_sni("", &info), MOAT_SNI_MALFORMED);
	ASSERT_EQ(run_sni("allowed.test\0evil", &info), MOAT_SNI_FOUND); /* strlen stops */

	/* an embedded NUL inside the name bytes */
	exts.n = 0;
	n = sni_data(d, "allowed.test.evil");
	d[5 + 12] = 0;
	ext(&exts, 0, d, n);
	hello(&msg, &exts, true);
	records(&wire, &msg, 16384);
	ASSERT_EQ(moat_sni_parse(wire.b, wire.n, &info), MOAT_SNI_MALFORMED);

	/* two server_name entries in one list */
	exts.n = 0;
	n = sni_data(d, "allowed.test");
	size_t n2 = sni_data(d + n, "evil.test");
	memmove(d + n, d + n + 2, n2 - 2); /* second entry without its list length */
	n += n2 - 2;
	d[0] = (uint8_t)((n - 2) >> 8);
	d[1] = (uint8_t)(n - 2);
	ext(&exts, 0, d, n);
	hello(&msg, &exts, true);
	records(&wire, &msg, 16384);
	ASSERT_EQ(moat_sni_parse(wire.b, wire.n, &info), MOAT_SNI_MALFORMED);
	ASSERT_CONTAINS(info.malformed_why, "more than one");
	ASSERT_STREQ(info.host, "");

	/* two server_name extensions */
	exts.n = 0;
	ext(&exts, 0, d, sni_data(d, "allowed.test"));
	ext(&exts, 0, d, sni_data(d, "evil.test"));
	hello(&msg, &exts, true);
	records(&wire, &msg, 16384);
	ASSERT_EQ(moat_sni_parse(wire.b, wire.n, &info), MOAT_SNI_MALFORMED);
	ASSERT_STREQ(info.host, "");

	/* name type other than host_name */
	exts.n = 0;
	n = sni_data(d, "allowed.test");
	d[2] = 1;
	ext(&exts, 0, d, n);
	hello(&msg, &exts, true);
	records(&wire, &msg, 16384);
	ASSERT_EQ(moat_sni_parse(wire.b, wire.n, &info), MOAT_SNI_MALFORMED);

	/* inconsistent lengths: name length past the list */
	exts.n = 0;
	n = sni_data(d, "allowed.test");
	d[4] = 200;
	ext(&exts, 0, d, n);
	hello(&msg, &exts, true);
	records(&wire, &msg, 16384);
	ASSERT_EQ(moat_sni_parse(wire.b, wire.n, &info), MOAT_SNI_MALFORMED);

	/* extension length past the block */
	exts.n = 0;
	put16(&exts, 0);
	put16(&exts, 500);
	put(&exts, "abc", 3);
	hello(&msg, &exts, true);
	records(&wire, &msg, 16384);
	ASSERT_EQ(moat_sni_parse(wire.b, wire.n, &info), MOAT_SNI_MALFORMED);

	/* handshake type is not ClientHello */
	run_sni("allowed.test", &info);
	wire.b[5] = 2;
	ASSERT_EQ(moat_sni_parse(wire.b, wire.n, &info), MOAT_SNI_MALFORMED);

	/* an alert record in the middle of a fragmented hello */
	run_sni("allowed.test", &info);
	records(&wire, &msg, 10);
	wire.b[15] = 21;
	ASSERT_EQ(moat_sni_parse(wire.b, wire.n, &info), MOAT_SNI_MALFORMED);

	/* zero-length record, over-long record */
	const uint8_t zero[] = {22, 3, 1, 0, 0, 1, 0, 0, 4};
	ASSERT_EQ(moat_sni_parse(zero, sizeof(zero), &info), MOAT_SNI_MALFORMED);
	const uint8_t huge[] = {22, 3, 1, 0x40, 0x01, 1, 0, 0, 4};
	ASSERT_EQ(moat_sni_parse(huge, sizeof(huge), &info), MOAT_SNI_MALFORMED);
	/* hello larger than the cap */
	const uint8_t big[] = {22, 3, 1, 0, 4, 1, 0, 0x40, 0x00};
	ASSERT_EQ(moat_sni_parse(big, sizeof(big), &info), MOAT_SNI_MALFORMED);
	ASSERT_CONTAINS(info.malformed_why, "16 KiB");
	/* just under the cap: needs more */
	const uint8_t ok[] = {22, 3, 1, 0, 4, 1, 0, 0x3f, 0xfc};
	ASSERT_EQ(moat_sni_parse(ok, sizeof(ok), &info), MOAT_SNI_NEED_MORE);
	/* a hello whose body is shorter than its fixed fields */
	const uint8_t tiny[] = {22, 3, 1, 0, 6, 1, 0, 0, 2, 3, 3};
	ASSERT_EQ(moat_sni_parse(tiny, sizeof(tiny), &info), MOAT_SNI_MALFORMED);
}

TEST(sni_big_hello_across_records)
{
	struct moat_sni_info info;
	uint8_t d[600];
	static uint8_t pad[12000];

	/* a post-quantum sized hello: 12 KB padding extension, SNI last */
	exts.n = 0;
	ext(&exts, 21, pad, sizeof(pad));
	ext(&exts, 0, d, sni_data(d, "big.allowed.test"));
	hello(&msg, &exts, true);
	records(&wire, &msg, 4096);
	ASSERT_EQ(moat_sni_parse(wire.b, wire.n, &info), MOAT_SNI_FOUND);
	ASSERT_STREQ(info.host, "big.allowed.test");
	/* over the 16 KiB cap */
	exts.n = 0;
	ext(&exts, 21, pad, sizeof(pad));
	ext(&exts, 22, pad, 5000);
	ext(&exts, 0, d, sni_data(d, "big.allowed.test"));
	hello(&msg, &exts, true);
	records(&wire, &msg, 16384);
	ASSERT_EQ(moat_sni_parse(wire.b, wire.n, &info), MOAT_SNI_MALFORMED);
}
