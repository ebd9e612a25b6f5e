/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "harness/tap.h"
#include "proxy/proxy.h"
#include "proxy/sni.h"
#include "shared/macro.h"

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

/* ---- ECH and the first-bytes rule of connections allowed by name ---------- */

TEST(sni_ech_and_esni_flagged)
{
	struct moat_sni_info info;
	uint8_t d[600];
	static const unsigned types[] = {0xfe0d, 0xffce};

	for (size_t i = 0; i < ELEMENTSOF(types); i++) {
		exts.n = 0;
		ext(&exts, 0, d, sni_data(d, "public.front.test"));
		ext(&exts, types[i], "\x00\x01\x02\x03", 4);
		hello(&msg, &exts, true);
		records(&wire, &msg, 16384);
		ASSERT_EQ(moat_sni_parse(wire.b, wire.n, &info), MOAT_SNI_FOUND);
		ASSERT_TRUE(info.ech);
	}
	/* positive control: the same hello without it */
	ASSERT_EQ(run_sni("public.front.test", &info), MOAT_SNI_FOUND);
	ASSERT_TRUE(!info.ech);
}

static int first(const struct moat_proxy_config *c, const char *name, uint16_t port, const void *b,
		 size_t n, const char **ret_reason)
{
	struct moat_proxy_first_info fi;
	int r = moat_proxy_check_first(c, name, port, b, n, false, &fi);
	*ret_reason = r == MOAT_PROXY_FIRST_DENY ? fi.reason : "";
	return r;
}

TEST(first_bytes_tls_must_name_the_host)
{
	struct moat_proxy_config c = {0};
	const char *why;
	uint8_t d[600];

	/* positive control: the right name passes, whatever its spelling */
	ASSERT_EQ(run_sni("a.test", NULL), MOAT_SNI_FOUND);
	ASSERT_EQ(first(&c, "a.test", 443, wire.b, wire.n, &why), MOAT_PROXY_FIRST_TLS);
	run_sni("A.Test.", NULL);
	ASSERT_EQ(first(&c, "a.test", 443, wire.b, wire.n, &why), MOAT_PROXY_FIRST_TLS);
	/* another name, a longer or shorter one */
	static const char *const others[] = {"b.test", "a.test.evil.example", "x.a.test", "test",
					     "xn--a-test.example"};
	for (size_t i = 0; i < ELEMENTSOF(others); i++) {
		run_sni(others[i], NULL);
		ASSERT_EQ(first(&c, "a.test", 443, wire.b, wire.n, &why), MOAT_PROXY_FIRST_DENY);
		ASSERT_STREQ(why, "sni-mismatch");
	}
	/* no SNI, with and without extensions */
	exts.n = 0;
	ext(&exts, 10, "\x00\x02\x00\x1d", 4);
	hello(&msg, &exts, true);
	records(&wire, &msg, 16384);
	ASSERT_EQ(first(&c, "a.test", 443, wire.b, wire.n, &why), MOAT_PROXY_FIRST_DENY);
	ASSERT_STREQ(why, "no-sni");
	hello(&msg, &exts, false);
	records(&wire, &msg, 16384);
	ASSERT_EQ(first(&c, "a.test", 8443, wire.b, wire.n, &why), MOAT_PROXY_FIRST_DENY);
	ASSERT_STREQ(why, "no-sni");
	/* two server_name entries (a.test first), or another name type */
	{
		uint8_t two[64] = {0,	18, 0, 0, 6,   'a', '.', 't', 'e', 's',
				   't', 0,  0, 6, 'b', '.', 't', 'e', 's', 't'};
		exts.n = 0;
		ext(&exts, 0, two, 20);
		hello(&msg, &exts, true);
		records(&wire, &msg, 16384);
		ASSERT_EQ(first(&c, "a.test", 443, wire.b, wire.n, &why), MOAT_PROXY_FIRST_DENY);
		ASSERT_STREQ(why, "tls-malformed");
		size_t k = sni_data(d, "a.test");
		d[2] = 1; /* name_type 1 */
		exts.n = 0;
		ext(&exts, 0, d, k);
		hello(&msg, &exts, true);
		records(&wire, &msg, 16384);
		ASSERT_EQ(first(&c, "a.test", 443, wire.b, wire.n, &why), MOAT_PROXY_FIRST_DENY);
		ASSERT_STREQ(why, "tls-malformed");
	}
	/* fragmented into one-byte records: the same answers */
	exts.n = 0;
	ext(&exts, 0, d, sni_data(d, "b.test"));
	hello(&msg, &exts, true);
	records(&wire, &msg, 1);
	ASSERT_EQ(first(&c, "a.test", 443, wire.b, wire.n, &why), MOAT_PROXY_FIRST_DENY);
	ASSERT_STREQ(why, "sni-mismatch");
	ASSERT_EQ(first(&c, "a.test", 443, wire.b, wire.n / 2, &why), MOAT_PROXY_FIRST_MORE);
	{
		struct moat_proxy_first_info fi;
		ASSERT_EQ(moat_proxy_check_first(&c, "a.test", 443, wire.b, wire.n / 2, true, &fi),
			  MOAT_PROXY_FIRST_DENY);
		ASSERT_STREQ(fi.reason, "tls-malformed");
		ASSERT_EQ(moat_proxy_check_first(&c, "a.test", 443, "", 0, true, &fi),
			  MOAT_PROXY_FIRST_DENY);
		ASSERT_STREQ(fi.reason, "no-first-bytes");
	}
	/* ECH: refused on pass-through, harmless when the proxy terminates */
	exts.n = 0;
	ext(&exts, 0, d, sni_data(d, "a.test"));
	ext(&exts, 0xfe0d, "\x00\x01\x02\x03", 4);
	hello(&msg, &exts, true);
	records(&wire, &msg, 16384);
	ASSERT_EQ(first(&c, "a.test", 443, wire.b, wire.n, &why), MOAT_PROXY_FIRST_DENY);
	ASSERT_STREQ(why, "tls-ech");
	c.ca = (struct moat_tls_ca *)&c; /* only tested for NULL here */
	c.upstream_tls = (struct ssl_ctx_st *)&c;
	c.inspect_all = true;
	ASSERT_EQ(first(&c, "a.test", 443, wire.b, wire.n, &why), MOAT_PROXY_FIRST_INTERCEPT);
}

TEST(first_bytes_plain_needs_http_with_the_host)
{
	struct moat_proxy_config c = {0};
	const char *why;

	/* positive control */
	static const char ok[] = "GET / HTTP/1.1\r\nHost: A.test\r\n\r\n";
	ASSERT_EQ(first(&c, "a.test", 80, ok, strlen(ok), &why), MOAT_PROXY_FIRST_HTTP);
	static const char okp[] = "GET / HTTP/1.1\r\nHost: a.test:8080\r\n\r\n";
	ASSERT_EQ(first(&c, "a.test", 8080, okp, strlen(okp), &why), MOAT_PROXY_FIRST_HTTP);
	/* the same on 443 */
	ASSERT_EQ(first(&c, "a.test", 443, ok, strlen(ok), &why), MOAT_PROXY_FIRST_DENY);
	ASSERT_STREQ(why, "not-tls");
	static const struct {
		const char *bytes, *why;
	} bad[] = {
		{"GET / HTTP/1.1\r\nHost: b.test\r\n\r\n", "host-mismatch"},
		{"GET / HTTP/1.1\r\nHost: a.test:81\r\n\r\n", "host-mismatch"},
		{"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", "host-mismatch"},
		{"GET / HTTP/1.0\r\n\r\n", "no-host"},
		{"GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n", "not-tls-or-http"},
		{"CONNECT a.test:80 HTTP/1.1\r\nHost: a.test:80\r\n\r\n", "not-tls-or-http"},
		{"SSH-2.0-OpenSSH_9.2\r\n", "not-tls-or-http"},
		{"\x80\x2e\x01\x03\x01\x00\x15\x00\x00\x00\x10", "not-tls-or-http"}, /* SSLv2 */
	};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		int r = first(&c, "a.test", 80, bad[i].bytes, strlen(bad[i].bytes), &why);
		if (r != MOAT_PROXY_FIRST_DENY || !streq(why, bad[i].why))
			moat_tap_fail(__FILE__, __LINE__, "case %zu: %d %s", i, r, why);
	}
	/* an SSLv2-style hello on 443 */
	ASSERT_EQ(first(&c, "a.test", 443, bad[7].bytes, 11, &why), MOAT_PROXY_FIRST_DENY);
	ASSERT_STREQ(why, "not-tls");
	/* incomplete: wait, then refuse */
	ASSERT_EQ(first(&c, "a.test", 80, ok, 10, &why), MOAT_PROXY_FIRST_MORE);
}

TEST(first_bytes_which_hosts_are_intercepted)
{
	struct moat_proxy_config c = {0};
	struct moat_proxy_host_rule ni[1] = {{.pattern = "*.pinned.test"}};

	c.inspect_all = true;
	c.no_inspect = ni;
	c.n_no_inspect = 1;
	/* no CA: nothing can be intercepted */
	ASSERT_TRUE(!moat_proxy_intercepts(&c, "a.test"));
	c.ca = (struct moat_tls_ca *)&c;
	c.upstream_tls = (struct ssl_ctx_st *)&c;
	ASSERT_TRUE(moat_proxy_intercepts(&c, "a.test"));
	ASSERT_TRUE(!moat_proxy_intercepts(&c, "app.pinned.test"));
	ASSERT_TRUE(moat_proxy_intercepts(&c, "pinned.test"));
	c.inspect_all = false;
	ASSERT_TRUE(!moat_proxy_intercepts(&c, "a.test"));
}

/* Red team: what follows or precedes the ClientHello. A second handshake
 * message (here another ClientHello naming evil.test) appended in the same
 * record went to a pass-through server unjudged before the fix (the parser
 * stopped at the first hello: FIRST_TLS); records of another type before the
 * hello (change_cipher_spec, alert) and record version bytes were refused
 * already (regression). */
TEST(first_bytes_nothing_after_or_before_the_hello)
{
	struct moat_proxy_config c = {0};
	struct buf two = {.n = 0}, second = {.n = 0};
	const char *why;
	uint8_t d[600];

	/* positive control: the hello alone, also split over records */
	exts.n = 0;
	ext(&exts, 0, d, sni_data(d, "evil.test"));
	hello(&second, &exts, true);
	run_sni("a.test", NULL);
	ASSERT_EQ(first(&c, "a.test", 443, wire.b, wire.n, &why), MOAT_PROXY_FIRST_TLS);
	records(&wire, &msg, 7);
	ASSERT_EQ(first(&c, "a.test", 443, wire.b, wire.n, &why), MOAT_PROXY_FIRST_TLS);

	/* another handshake message after the hello, in its record */
	put(&two, msg.b, msg.n);
	put(&two, second.b, second.n);
	records(&wire, &two, 16384);
	ASSERT_EQ(first(&c, "a.test", 443, wire.b, wire.n, &why), MOAT_PROXY_FIRST_DENY);
	ASSERT_STREQ(why, "tls-malformed");
	/* ... also when the record straddles: hello ends mid-record */
	records(&wire, &two, msg.n + 3);
	ASSERT_EQ(first(&c, "a.test", 443, wire.b, wire.n, &why), MOAT_PROXY_FIRST_DENY);
	ASSERT_STREQ(why, "tls-malformed");
	/* ... and when only the record header announces more */
	records(&wire, &two, 16384);
	ASSERT_EQ(first(&c, "a.test", 443, wire.b, 5 + msg.n, &why), MOAT_PROXY_FIRST_DENY);
	ASSERT_STREQ(why, "tls-malformed");

	/* a change_cipher_spec or alert record first; an SSL 2/odd record version */
	static const uint8_t ccs[] = {20, 3, 3, 0, 1, 1};
	static const uint8_t alert[] = {21, 3, 3, 0, 2, 1, 0};
	ASSERT_EQ(first(&c, "a.test", 443, ccs, sizeof(ccs), &why), MOAT_PROXY_FIRST_DENY);
	ASSERT_STREQ(why, "not-tls");
	ASSERT_EQ(first(&c, "a.test", 8443, alert, sizeof(alert), &why), MOAT_PROXY_FIRST_DENY);
	ASSERT_STREQ(why, "not-tls-or-http");
	run_sni("a.test", NULL);
	wire.b[1] = 2;
	ASSERT_EQ(first(&c, "a.test", 443, wire.b, wire.n, &why), MOAT_PROXY_FIRST_DENY);
	ASSERT_STREQ(why, "not-tls");
	/* an HTTP/2 prior-knowledge preface on a plain port: not HTTP/1 */
	static const char pri[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
	ASSERT_EQ(first(&c, "a.test", 80, pri, strlen(pri), &why), MOAT_PROXY_FIRST_DENY);
	ASSERT_STREQ(why, "not-tls-or-http");
	/* a second record with another version after a first good one */
	records(&wire, &msg, 10);
	wire.b[15 + 1] = 4;
	ASSERT_EQ(first(&c, "a.test", 443, wire.b, wire.n, &why), MOAT_PROXY_FIRST_DENY);
	ASSERT_STREQ(why, "tls-malformed");
}
