/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "harness/tap.h"
#include "proxy/hostmatch.h"

static void norm_ok(const char *in, const char *want)
{
	char out[MOAT_HOST_BUFSZ];
	int r = moat_host_normalize(in, out, sizeof(out));
	if (r != 0 || strcmp(out, want) != 0)
		moat_tap_fail(__FILE__, __LINE__, "normalize(%s) = %d \"%s\", want \"%s\"", in, r,
			      out, want);
}

static void norm_err(const char *in, int want)
{
	char out[MOAT_HOST_BUFSZ] = "junk";
	int r = moat_host_normalize(in, out, sizeof(out));
	if (r != want || out[0] != '\0')
		moat_tap_fail(__FILE__, __LINE__, "normalize(%s) = %d \"%s\", want %d", in, r, out,
			      want);
}

TEST(host_normalize)
{
	char out[MOAT_HOST_BUFSZ], lab[80], name[300];

	norm_ok("Example.COM", "example.com");
	norm_ok("example.com.", "example.com");
	norm_ok("a", "a");
	norm_ok("xn--bcher-kva.example", "xn--bcher-kva.example");
	norm_ok("a-b.c-d.e", "a-b.c-d.e");
	norm_ok("1password.com", "1password.com");
	norm_ok("123.example", "123.example");
	norm_ok("0x1g", "0x1g"); /* not hex: a name */
	norm_err("", -EINVAL);
	norm_err(".", -EINVAL);
	norm_err("..", -EINVAL);
	norm_err("example.com..", -EINVAL);
	norm_err(".example.com", -EINVAL);
	norm_err("a..b", -EINVAL);
	norm_err("-a.com", -EINVAL);
	norm_err("a-.com", -EINVAL);
	norm_err("a_b.com", -EINVAL);
	norm_err("a b.com", -EINVAL);
	norm_err("*.example.com", -EINVAL);
	norm_err("exa\xc3\xa9mple.com", -EINVAL);
	norm_err("example.com:443", -EINVAL);
	norm_err("[::1]", -EINVAL);
	norm_err("user@example.com", -EINVAL);
	norm_err("a\tb", -EINVAL);
	/* ends in a number: IPv4 literal in some spelling */
	norm_err("127.0.0.1", -EDOM);
	norm_err("127.1", -EDOM);
	norm_err("2130706433", -EDOM);
	norm_err("0x7f.1", -EDOM);
	norm_err("0x7F000001", -EDOM);
	norm_err("example.123", -EDOM);
	norm_err("example.0x", -EDOM);
	norm_err("1.2.3.4.", -EDOM);

	memset(lab, 'a', 63);
	lab[63] = '\0';
	snprintf(name, sizeof(name), "%s.com", lab);
	norm_ok(name, name);
	memset(lab, 'a', 64);
	lab[64] = '\0';
	snprintf(name, sizeof(name), "%s.com", lab);
	norm_err(name, -ENAMETOOLONG);
	/* 253 bytes ok, 254 refused, 253 + trailing dot ok */
	memset(name, 'a', 253);
	for (int i = 50; i < 253; i += 51)
		name[i] = '.';
	name[253] = '\0';
	ASSERT_EQ(moat_host_normalize(name, out, sizeof(out)), 0);
	name[253] = '.';
	name[254] = '\0';
	ASSERT_EQ(moat_host_normalize(name, out, sizeof(out)), 0);
	name[253] = 'a';
	ASSERT_EQ(moat_host_normalize(name, out, sizeof(out)), -ENAMETOOLONG);
	ASSERT_EQ(moat_host_normalize("example.com", out, 5), -ENOBUFS);
	ASSERT_EQ(moat_host_normalize(NULL, out, sizeof(out)), -EINVAL);
	ASSERT_EQ(moat_host_normalize_n("exa\0mple.com", 12, out, sizeof(out)), -EINVAL);
	ASSERT_EQ(moat_host_normalize_n("example.comXXX", 11, out, sizeof(out)), 0);
	ASSERT_STREQ(out, "example.com");
}

static void parse_ok(const char *in, const char *want, enum moat_host_kind kind, bool loose)
{
	char out[MOAT_HOST_BUFSZ];
	enum moat_host_kind k;
	bool l;
	int r = moat_host_parse(in, strlen(in), false, out, sizeof(out), &k, &l);
	if (r != 0 || strcmp(out, want) != 0 || k != kind || l != loose)
		moat_tap_fail(__FILE__, __LINE__, "host_parse(%s) = %d \"%s\" kind %d loose %d", in,
			      r, out, k, l);
}

TEST(host_parse_kinds)
{
	char out[MOAT_HOST_BUFSZ];
	enum moat_host_kind k;

	parse_ok("Example.COM.", "example.com", MOAT_HOST_NAME, false);
	parse_ok("127.0.0.1", "127.0.0.1", MOAT_HOST_IPV4, false);
	parse_ok("127.1", "127.0.0.1", MOAT_HOST_IPV4, true);
	parse_ok("0x7f.1", "127.0.0.1", MOAT_HOST_IPV4, true);
	parse_ok("0177.0.0.1", "127.0.0.1", MOAT_HOST_IPV4, true);
	parse_ok("2130706433", "127.0.0.1", MOAT_HOST_IPV4, true);
	parse_ok("127.0.0.1.", "127.0.0.1", MOAT_HOST_IPV4, true);
	parse_ok("[::1]", "::1", MOAT_HOST_IPV6, false);
	parse_ok("[::FFFF:127.0.0.1]", "::ffff:127.0.0.1", MOAT_HOST_IPV6, false);
	parse_ok("[2001:DB8:0:0::1]", "2001:db8::1", MOAT_HOST_IPV6, false);
	ASSERT_EQ(moat_host_parse("::1", 3, false, out, sizeof(out), &k, NULL), -EINVAL);
	ASSERT_EQ(moat_host_parse("::1", 3, true, out, sizeof(out), &k, NULL), 0);
	ASSERT_EQ(k, MOAT_HOST_IPV6);
	ASSERT_EQ(moat_host_parse("[fe80::1%eth0]", 14, false, out, sizeof(out), &k, NULL),
		  -EINVAL);
	ASSERT_EQ(moat_host_parse("[1.2.3.4]", 9, false, out, sizeof(out), &k, NULL), -EINVAL);
	ASSERT_EQ(moat_host_parse("256.1.1.1", 9, false, out, sizeof(out), &k, NULL), -ERANGE);
	ASSERT_EQ(moat_host_parse("4294967296", 10, false, out, sizeof(out), &k, NULL), -ERANGE);
	ASSERT_EQ(moat_host_parse("a.b.123", 7, false, out, sizeof(out), &k, NULL), -ERANGE);
	ASSERT_EQ(moat_host_parse("1.2.3.4.5", 9, false, out, sizeof(out), &k, NULL), -ERANGE);
	ASSERT_EQ(moat_host_parse("", 0, false, out, sizeof(out), &k, NULL), -EINVAL);
	ASSERT_EQ(moat_host_parse("a\0b", 3, false, out, sizeof(out), &k, NULL), -EINVAL);
	ASSERT_EQ(moat_host_parse("evil.com:80", 11, false, out, sizeof(out), &k, NULL), -EINVAL);
	ASSERT_STREQ(out, "");
}

static void pat_bad(const char *p, const char *why_sub)
{
	char why[200];
	int r = moat_host_pattern_validate(p, why, sizeof(why));
	if (r != -EINVAL || !strstr(why, why_sub))
		moat_tap_fail(__FILE__, __LINE__, "validate(%s) = %d \"%s\"", p, r, why);
}

TEST(host_pattern_validate)
{
	char why[200], out[MOAT_HOST_BUFSZ];

	ASSERT_EQ(moat_host_pattern_validate("api.example.com", why, sizeof(why)), 0);
	ASSERT_STREQ(why, "");
	ASSERT_EQ(moat_host_pattern_validate("*.example.com", why, sizeof(why)), 0);
	ASSERT_EQ(moat_host_pattern_validate("*.Example.COM.", why, sizeof(why)), 0);
	ASSERT_EQ(moat_host_pattern_validate("*.amazonaws.com", why, sizeof(why)), 0);
	ASSERT_EQ(moat_host_pattern_validate("*.bbc.co.uk", why, sizeof(why)), 0);
	ASSERT_EQ(moat_host_pattern_validate("*.pip.readthedocs.io", why, sizeof(why)), 0);
	ASSERT_EQ(moat_host_pattern_validate("*.www.ck", why, sizeof(why)), 0);
	ASSERT_EQ(moat_host_pattern_validate("localhost", why, sizeof(why)), 0);
	ASSERT_EQ(moat_host_pattern_normalize("*.Example.COM.", out, sizeof(out)), 0);
	ASSERT_STREQ(out, "*.example.com");
	ASSERT_EQ(moat_host_pattern_normalize("*.example.com", out, 8), -ENOBUFS);

	pat_bad("", "empty");
	pat_bad(NULL, "empty");
	pat_bad("*", "bare");
	pat_bad("*.", "bare");
	pat_bad("*.com", "top-level");
	pat_bad("*.COM.", "top-level");
	pat_bad("*.co.uk", "public suffix");
	pat_bad("*.com.au", "public suffix");
	pat_bad("*.github.io", "public suffix");
	pat_bad("*.s3.amazonaws.com", "public suffix");
	/* from Debian's Public Suffix List (libpsl), not from a list of moat's */
	pat_bad("*.readthedocs.io", "public suffix");
	pat_bad("*.myshopify.com", "public suffix");
	pat_bad("*.gov.br", "public suffix");
	pat_bad("*.anything.ck", "public suffix"); /* the list's "*.ck" rule */
	pat_bad("*.nip.io", "public suffix"); /* wildcard DNS, moat's extra list */
	pat_bad("https://example.com", "scheme");
	pat_bad("example.com/path", "path");
	pat_bad("example.com:443", "port");
	pat_bad("user@example.com", "userinfo");
	pat_bad("a*.example.com", "first label");
	pat_bad("*a.example.com", "first label");
	pat_bad("a.*.example.com", "first label");
	pat_bad("**.example.com", "first label");
	pat_bad("*.*.example.com", "first label");
	pat_bad("example.*", "first label");
	pat_bad("1.2.3.4", "IP address");
	pat_bad("*.1.2.3", "IP address");
	pat_bad("[::1]", "IP address");
	pat_bad("127.1", "IP address");
	pat_bad("exa mple.com", "not a valid");
	pat_bad("a..example.com", "not a valid");
	pat_bad(".example.com", "not a valid");
	pat_bad("under_score.com", "not a valid");
	/* why is truncated safely */
	ASSERT_EQ(moat_host_pattern_validate("*.com", why, 4), -EINVAL);
	ASSERT_EQ(strlen(why), 3);
	ASSERT_EQ(moat_host_pattern_validate("*.com", NULL, 0), -EINVAL);
}

TEST(host_pattern_match)
{
	/* exact */
	ASSERT_TRUE(moat_host_pattern_match("github.com", "github.com"));
	ASSERT_TRUE(moat_host_pattern_match("github.com", "GitHub.COM."));
	ASSERT_TRUE(moat_host_pattern_match("GITHUB.com.", "github.com"));
	ASSERT_TRUE(!moat_host_pattern_match("github.com", "api.github.com"));
	/* wildcard */
	ASSERT_TRUE(moat_host_pattern_match("*.github.com", "api.github.com"));
	ASSERT_TRUE(moat_host_pattern_match("*.github.com", "a.b.c.github.com"));
	ASSERT_TRUE(moat_host_pattern_match("*.github.com", "API.GitHub.com."));
	ASSERT_TRUE(!moat_host_pattern_match("*.github.com", "github.com"));
	/* RT-056 */
	const char *evil[] = {"evilgithub.com",
			      "evil-github.com",
			      "xgithub.com",
			      "github.com.evil.example",
			      "github.co",
			      "github.com-evil.example",
			      "gist.github.com.attacker.test",
			      "github.comevil",
			      ".github.com",
			      "*.github.com",
			      "a..github.com",
			      "",
			      "github.com..",
			      "a.github.com:443",
			      "a.github.com/x",
			      "a.github.com\n",
			      "a.github.com\r\nX: y"};
	for (size_t i = 0; i < sizeof(evil) / sizeof(evil[0]); i++) {
		if (moat_host_pattern_match("*.github.com", evil[i]) ||
		    moat_host_pattern_match("github.com", evil[i]))
			moat_tap_fail(__FILE__, __LINE__, "\"%s\" matched", evil[i]);
	}
	ASSERT_TRUE(!moat_host_pattern_match("*.example.com", "evil-example.com"));
	/* invalid patterns never match anything */
	ASSERT_TRUE(!moat_host_pattern_match("*", "example.com"));
	ASSERT_TRUE(!moat_host_pattern_match("*.com", "example.com"));
	ASSERT_TRUE(!moat_host_pattern_match("*.co.uk", "bbc.co.uk"));
	ASSERT_TRUE(!moat_host_pattern_match(NULL, "example.com"));
	ASSERT_TRUE(!moat_host_pattern_match("example.com", NULL));
	/* IP literals never match name rules */
	ASSERT_TRUE(!moat_host_pattern_match("*.example.com", "1.2.3.4"));
	ASSERT_TRUE(!moat_host_pattern_match("*.example.com", "127.1"));
}

TEST(host_public_suffix)
{
	ASSERT_TRUE(moat_host_is_public_suffix("com"));
	ASSERT_TRUE(moat_host_is_public_suffix("co.uk"));
	ASSERT_TRUE(moat_host_is_public_suffix("github.io"));
	ASSERT_TRUE(moat_host_is_public_suffix(""));
	ASSERT_TRUE(!moat_host_is_public_suffix("example.com"));
	ASSERT_TRUE(!moat_host_is_public_suffix("amazonaws.com"));
	/* the Public Suffix List's own entries and rules */
	ASSERT_TRUE(moat_host_is_public_suffix("pythonanywhere.com"));
	ASSERT_TRUE(moat_host_is_public_suffix("foo.ck")); /* "*.ck" */
	ASSERT_TRUE(!moat_host_is_public_suffix("www.ck")); /* "!www.ck" */
	ASSERT_TRUE(!moat_host_is_public_suffix("bbc.co.uk"));
	ASSERT_TRUE(!moat_host_is_public_suffix("pypi.org"));
	ASSERT_TRUE(moat_host_is_public_suffix("sslip.io"));
}
