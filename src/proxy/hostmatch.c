/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Host name normalization and allowlist patterns (see hostmatch.h). */
#include "proxy/hostmatch.h"

#include <arpa/inet.h>
#include <errno.h>
#include <libpsl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "proxy/addr.h"
#include "shared/macro.h"

static bool is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static char lower(char c)
{
	return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

/* WHATWG URL "ends in a number": the last label is all digits, or 0x + hex. */
static bool label_is_numeric(const char *s, size_t len)
{
	size_t i = 0;
	if (len >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		for (i = 2; i < len; i++)
			if (!is_hex(s[i]))
				return false;
		return true;
	}
	for (i = 0; i < len; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return len > 0;
}

int moat_host_normalize_n(const char *in, size_t len, char *out, size_t outlen)
{
	size_t label_start = 0;

	if (!out || outlen == 0)
		return -ENOBUFS;
	out[0] = '\0';
	if (!in || len == 0 || memchr(in, '\0', len))
		return -EINVAL;
	if (in[len - 1] == '.')
		len--; /* one trailing dot: the FQDN spelling */
	if (len == 0)
		return -EINVAL;
	if (len > MOAT_HOST_MAX)
		return -ENAMETOOLONG;
	if (len + 1 > outlen)
		return -ENOBUFS;

	for (size_t i = 0; i <= len; i++) {
		if (i == len || in[i] == '.') {
			size_t l = i - label_start;
			if (l == 0)
				goto einval; /* leading dot, "..", or a second trailing dot */
			if (l > MOAT_HOST_LABEL_MAX) {
				out[0] = '\0';
				return -ENAMETOOLONG;
			}
			if (in[label_start] == '-' || in[i - 1] == '-')
				goto einval;
			label_start = i + 1;
			if (i < len)
				out[i] = '.';
			continue;
		}
		if (!is_alnum(in[i]) && in[i] != '-')
			goto einval;
		out[i] = lower(in[i]);
	}
	out[len] = '\0';

	/* last label */
	const char *last = strrchr(out, '.');
	last = last ? last + 1 : out;
	if (label_is_numeric(last, strlen(last))) {
		out[0] = '\0';
		return -EDOM;
	}
	return 0;
einval:
	out[0] = '\0';
	return -EINVAL;
}

int moat_host_normalize(const char *in, char *out, size_t outlen)
{
	if (!in) {
		if (out && outlen)
			out[0] = '\0';
		return -EINVAL;
	}
	return moat_host_normalize_n(in, strlen(in), out, outlen);
}

int moat_host_parse(const char *in, size_t len, bool allow_bare_ipv6, char *out, size_t outlen,
		    enum moat_host_kind *ret_kind, bool *ret_loose)
{
	struct sockaddr_storage ss;
	uint32_t v4;
	int r;

	if (ret_loose)
		*ret_loose = false;
	if (ret_kind)
		*ret_kind = MOAT_HOST_NAME;
	if (!out || outlen == 0)
		return -ENOBUFS;
	out[0] = '\0';
	if (!in || len == 0 || memchr(in, '\0', len))
		return -EINVAL;

	if (in[0] == '[' || memchr(in, ':', len)) {
		if (in[0] != '[' && !allow_bare_ipv6)
			return -EINVAL;
		if (moat_addr_parse_n(in, len, &ss) < 0 || ss.ss_family != AF_INET6)
			return -EINVAL;
		r = moat_addr_format((struct sockaddr *)&ss, false, out, outlen);
		if (r < 0)
			return -ENOBUFS;
		if (ret_kind)
			*ret_kind = MOAT_HOST_IPV6;
		return 0;
	}
	if (moat_addr_parse_n(in, len, &ss) == 0) {
		r = moat_addr_format((struct sockaddr *)&ss, false, out, outlen);
		if (r < 0)
			return -ENOBUFS;
		if (ret_kind)
			*ret_kind = MOAT_HOST_IPV4;
		return 0;
	}
	r = moat_host_normalize_n(in, len, out, outlen);
	if (r != -EDOM)
		return r;
	/* the name ends in a number: an IPv4 literal in some spelling, or junk */
	r = moat_addr_parse_loose_ipv4_n(in, len, &v4);
	if (r < 0)
		return -ERANGE;
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(v4)};
	if (moat_addr_format((struct sockaddr *)&sin, false, out, outlen) < 0)
		return -ENOBUFS;
	if (ret_kind)
		*ret_kind = MOAT_HOST_IPV4;
	if (ret_loose)
		*ret_loose = true;
	return 0;
}

/* Services outside the Public Suffix List (or newer than the list Debian
 * ships) where anyone controls the names below them: tunnels, and wildcard DNS
 * that maps a name to any address (the proxy's address checks refuse the
 * private ones anyway; the rule would still allow names that mean nothing). */
static const char *const extra_suffixes[] = {
	"ngrok-free.app", "ngrok.app", "nip.io", "sslip.io", "localtest.me", "lvh.me",
};

bool moat_host_is_public_suffix(const char *suffix)
{
	psl_ctx_t *psl;
	int r;

	if (!suffix || !*suffix)
		return true;
	if (!strchr(suffix, '.'))
		return true; /* a TLD */
	for (size_t i = 0; i < ELEMENTSOF(extra_suffixes); i++)
		if (streq(suffix, extra_suffixes[i]))
			return true;
	/* Debian's libpsl: the newer of its built-in list and the publicsuffix
	 * package's file (a few microseconds; only wildcard rules ask). ICANN and
	 * private sections both count, wildcard rules ("*.ck") included. */
	psl = psl_latest(NULL);
	if (!psl)
		return true; /* cannot tell: refuse the wildcard */
	r = psl_is_public_suffix2(psl, suffix, PSL_TYPE_ANY);
	psl_free(psl);
	return r != 0;
}

/* Set @why to a + b + c (b may be NULL) and return -EINVAL. */
static int why_fail3(char *why, size_t whylen, const char *a, const char *b, const char *c)
{
	if (why && whylen)
		snprintf(why, whylen, "%s%s%s", a, b ? b : "", c);
	return -EINVAL;
}

static int why_fail(char *why, size_t whylen, const char *msg)
{
	return why_fail3(why, whylen, msg, NULL, "");
}

static const char *normalize_why(int r)
{
	switch (r) {
	case -ENAMETOOLONG:
		return "name too long (label over 63 or name over 253 bytes)";
	case -EDOM:
		return "an IP address literal (use a CIDR rule for addresses)";
	case -ENOBUFS:
		return "name too long";
	default:
		return "not a valid host name (letters, digits, inner hyphens, dots)";
	}
}

/* Validate and normalize; @out may be NULL. */
static int pattern_check(const char *pattern, char *out, size_t outlen, char *why, size_t whylen)
{
	char norm[MOAT_HOST_BUFSZ];
	bool wildcard = false;
	const char *name;
	int r;

	if (why && whylen)
		why[0] = '\0';
	if (out && outlen)
		out[0] = '\0';
	if (!pattern || !*pattern)
		return why_fail(why, whylen, "empty pattern");
	if (strstr(pattern, "://"))
		return why_fail(why, whylen, "a scheme is not part of a host pattern");
	if (strchr(pattern, '/'))
		return why_fail(why, whylen, "a path is not part of a host pattern");
	if (strchr(pattern, '@'))
		return why_fail(why, whylen, "userinfo (@) is not part of a host pattern");
	if (strchr(pattern, '[') || strchr(pattern, ']'))
		return why_fail(why, whylen, "an IP address literal (use a CIDR rule)");
	if (strchr(pattern, ':'))
		return why_fail(
			why, whylen,
			"a port inside the host pattern (write ports after it: HOST:PORTS)");
	if (streq(pattern, "*") || streq(pattern, "*."))
		return why_fail(why, whylen, "a bare '*' would allow every host");

	name = pattern;
	if (startswith(pattern, "*.")) {
		wildcard = true;
		name = pattern + 2;
	}
	if (strchr(name, '*'))
		return why_fail(why, whylen,
				"'*' is only allowed as a whole first label, as in *.example.com");
	r = moat_host_normalize(name, norm, sizeof(norm));
	if (r < 0)
		return why_fail(why, whylen, normalize_why(r));
	if (wildcard) {
		if (!strchr(norm, '.'))
			return why_fail3(why, whylen, "'*.", norm,
					 "' would allow a whole top-level domain");
		if (moat_host_is_public_suffix(norm))
			return why_fail3(why, whylen, "'*.", norm,
					 "' would allow names anyone can register (public suffix)");
		if (strlen(norm) + 2 > MOAT_HOST_MAX)
			return why_fail(why, whylen, normalize_why(-ENAMETOOLONG));
	}
	if (out) {
		int n = snprintf(out, outlen, "%s%s", wildcard ? "*." : "", norm);
		if (n < 0 || (size_t)n >= outlen) {
			if (outlen)
				out[0] = '\0';
			return -ENOBUFS;
		}
	}
	return 0;
}

int moat_host_pattern_validate(const char *pattern, char *why, size_t whylen)
{
	return pattern_check(pattern, NULL, 0, why, whylen);
}

int moat_host_pattern_normalize(const char *pattern, char *out, size_t outlen)
{
	return pattern_check(pattern, out, outlen, NULL, 0);
}

bool moat_host_pattern_match(const char *pattern, const char *host)
{
	char p[MOAT_HOST_BUFSZ], h[MOAT_HOST_BUFSZ];

	if (moat_host_pattern_normalize(pattern, p, sizeof(p)) < 0)
		return false;
	if (moat_host_normalize(host, h, sizeof(h)) < 0)
		return false;
	if (startswith(p, "*.")) {
		const char *suffix = p + 1; /* ".example.com" */
		size_t hl = strlen(h), sl = strlen(suffix);
		/* at least one non-empty label in front of the suffix */
		return hl > sl && streq(h + hl - sl, suffix);
	}
	return streq(p, h);
}
