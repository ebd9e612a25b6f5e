/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* IP address parsing and classification for the egress proxy (see addr.h). */
#include "proxy/addr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "shared/macro.h"

#define V4(a, b, c, d) \
	(((uint32_t)(a) << 24) | ((uint32_t)(b) << 16) | ((uint32_t)(c) << 8) | (uint32_t)(d))

static bool v4_in(uint32_t addr, uint32_t net, unsigned prefix)
{
	uint32_t mask = prefix == 0 ? 0 : 0xffffffffu << (32 - prefix);
	return (addr & mask) == net;
}

/* Exactly four decimal parts 0..255 without leading zeros. */
static int parse_ipv4_strict(const char *s, size_t len, uint32_t *ret)
{
	uint32_t addr = 0;
	unsigned parts = 0;
	size_t i = 0;

	while (parts < 4) {
		unsigned v = 0, digits = 0;
		size_t start = i;
		while (i < len && s[i] >= '0' && s[i] <= '9' && digits < 4) {
			v = v * 10 + (unsigned)(s[i] - '0');
			digits++;
			i++;
		}
		if (digits == 0 || digits > 3 || v > 255)
			return -EINVAL;
		if (digits > 1 && s[start] == '0')
			return -EINVAL;
		addr = (addr << 8) | v;
		parts++;
		if (parts < 4) {
			if (i >= len || s[i] != '.')
				return -EINVAL;
			i++;
		}
	}
	if (i != len)
		return -EINVAL;
	*ret = addr;
	return 0;
}

int moat_addr_parse_n(const char *s, size_t len, struct sockaddr_storage *ret)
{
	char tmp[INET6_ADDRSTRLEN + 1];
	uint32_t v4;

	if (!s || !ret)
		return -EINVAL;
	memset(ret, 0, sizeof(*ret));
	if (len == 0 || memchr(s, '\0', len))
		return -EINVAL;

	if (s[0] == '[') {
		if (len < 3 || s[len - 1] != ']')
			return -EINVAL;
		s++;
		len -= 2;
		/* brackets only hold IPv6 */
		if (!memchr(s, ':', len))
			return -EINVAL;
	} else if (parse_ipv4_strict(s, len, &v4) == 0) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ret;
		sin->sin_family = AF_INET;
		sin->sin_addr.s_addr = htonl(v4);
		return 0;
	}

	if (len >= sizeof(tmp) || !memchr(s, ':', len))
		return -EINVAL;
	memcpy(tmp, s, len);
	tmp[len] = '\0';
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ret;
	if (inet_pton(AF_INET6, tmp, &sin6->sin6_addr) != 1) {
		memset(ret, 0, sizeof(*ret));
		return -EINVAL;
	}
	sin6->sin6_family = AF_INET6;
	return 0;
}

int moat_addr_parse(const char *s, struct sockaddr_storage *ret)
{
	if (!s)
		return -EINVAL;
	return moat_addr_parse_n(s, strlen(s), ret);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* One part of a loose IPv4 literal. Returns 0 (value in *ret), -EINVAL if
 * the part is not numeric-shaped, -ERANGE if numeric-shaped but invalid or
 * above 0xffffffff. */
static int parse_loose_part(const char *s, size_t len, uint64_t *ret)
{
	uint64_t v = 0;
	unsigned base = 10;
	bool range = false;

	if (len == 0)
		return -EINVAL;
	if (len >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
		len -= 2;
	} else if (len >= 2 && s[0] == '0') {
		base = 8;
		s++;
		len--;
	}
	for (size_t i = 0; i < len; i++) {
		int d = base == 16 ? hexval(s[i]) : (s[i] >= '0' && s[i] <= '9' ? s[i] - '0' : -1);
		if (d < 0)
			return -EINVAL;
		if ((unsigned)d >= base) {
			range = true; /* "08": digits, but not octal */
			continue;
		}
		if (v <= 0xffffffffu)
			v = v * base + (unsigned)d;
	}
	if (range || v > 0xffffffffu)
		return -ERANGE;
	*ret = v;
	return 0;
}

int moat_addr_parse_loose_ipv4_n(const char *s, size_t len, uint32_t *ret)
{
	uint64_t parts[4];
	unsigned n = 0;
	bool range = false;

	if (!s || len == 0 || memchr(s, '\0', len))
		return -EINVAL;
	if (len > 1 && s[len - 1] == '.')
		len--; /* one trailing dot, as in a FQDN */

	size_t i = 0;
	while (i <= len) {
		size_t start = i;
		while (i < len && s[i] != '.')
			i++;
		uint64_t v = 0;
		int r = parse_loose_part(s + start, i - start, &v);
		if (r == -EINVAL)
			return -EINVAL;
		if (r == -ERANGE)
			range = true;
		if (n < 4)
			parts[n] = v;
		else
			range = true; /* five or more numeric parts: not an address */
		n++;
		i++; /* skip the dot (or step past the end) */
	}
	if (range)
		return -ERANGE;

	uint32_t addr = 0;
	for (unsigned k = 0; k + 1 < n; k++) {
		if (parts[k] > 255)
			return -ERANGE;
		addr |= (uint32_t)parts[k] << (24 - 8 * k);
	}
	uint64_t lastmax = n == 1 ? 0xffffffffu : (1ull << (8 * (5 - n))) - 1;
	if (parts[n - 1] > lastmax)
		return -ERANGE;
	addr |= (uint32_t)parts[n - 1];
	if (ret)
		*ret = addr;
	return 0;
}

int moat_addr_parse_loose_ipv4(const char *s, uint32_t *ret)
{
	if (!s)
		return -EINVAL;
	return moat_addr_parse_loose_ipv4_n(s, strlen(s), ret);
}

unsigned moat_addr_classify_ipv4(uint32_t a)
{
	unsigned f = 0;

	if (a == 0)
		f |= MOAT_ADDR_UNSPECIFIED;
	else if (v4_in(a, V4(0, 0, 0, 0), 8))
		f |= MOAT_ADDR_RESERVED; /* "this network" */
	if (v4_in(a, V4(10, 0, 0, 0), 8) || v4_in(a, V4(172, 16, 0, 0), 12) ||
	    v4_in(a, V4(192, 168, 0, 0), 16))
		f |= MOAT_ADDR_PRIVATE;
	if (v4_in(a, V4(100, 64, 0, 0), 10))
		f |= MOAT_ADDR_CGNAT;
	if (v4_in(a, V4(127, 0, 0, 0), 8))
		f |= MOAT_ADDR_LOOPBACK;
	if (v4_in(a, V4(169, 254, 0, 0), 16))
		f |= MOAT_ADDR_LINK_LOCAL;
	if (v4_in(a, V4(192, 0, 0, 0), 24) || v4_in(a, V4(192, 0, 2, 0), 24) ||
	    v4_in(a, V4(192, 88, 99, 0), 24) || v4_in(a, V4(198, 18, 0, 0), 15) ||
	    v4_in(a, V4(198, 51, 100, 0), 24) || v4_in(a, V4(203, 0, 113, 0), 24))
		f |= MOAT_ADDR_RESERVED;
	if (v4_in(a, V4(224, 0, 0, 0), 4))
		f |= MOAT_ADDR_MULTICAST;
	if (a == 0xffffffffu)
		f |= MOAT_ADDR_BROADCAST;
	else if (v4_in(a, V4(240, 0, 0, 0), 4))
		f |= MOAT_ADDR_RESERVED;

	static const uint32_t metadata[] = {
		V4(169, 254, 169, 254), /* AWS/GCP/Azure/OpenStack IMDS */
		V4(169, 254, 169, 253), /* AWS VPC DNS */
		V4(169, 254, 169, 123), /* AWS time sync */
		V4(169, 254, 170, 2), /* ECS task credentials */
		V4(169, 254, 170, 23), /* EKS Pod Identity */
		V4(100, 100, 100, 200), /* Alibaba Cloud */
		V4(168, 63, 129, 16), /* Azure WireServer (a public address) */
	};
	for (size_t i = 0; i < ELEMENTSOF(metadata); i++)
		if (a == metadata[i])
			f |= MOAT_ADDR_METADATA;
	return f;
}

static uint32_t be32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static bool v6_prefix(const uint8_t *a, const uint8_t *net, unsigned prefix)
{
	unsigned full = prefix / 8, rem = prefix % 8;
	if (memcmp(a, net, full) != 0)
		return false;
	if (rem == 0)
		return true;
	uint8_t mask = (uint8_t)(0xff << (8 - rem));
	return (a[full] & mask) == (net[full] & mask);
}

static unsigned classify_ipv6(const uint8_t *a)
{
	static const uint8_t zero[16];
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	static const uint8_t nat64[16] = {0, 0x64, 0xff, 0x9b};
	static const uint8_t nat64_local[16] = {0, 0x64, 0xff, 0x9b, 0, 1};
	static const uint8_t discard[16] = {0x01, 0x00};
	static const uint8_t teredo[16] = {0x20, 0x01, 0, 0};
	static const uint8_t ietf[16] = {0x20, 0x01};
	static const uint8_t doc[16] = {0x20, 0x01, 0x0d, 0xb8};
	static const uint8_t doc2[16] = {0x3f, 0xff};
	static const uint8_t srv6[16] = {0x5f, 0x00};
	static const uint8_t sixtofour[16] = {0x20, 0x02};
	static const uint8_t md1[16] = {0xfd, 0, 0x0e, 0xc2, 0, 0, 0,	 0,
					0,    0, 0,    0,    0, 0, 0x02, 0x54};
	static const uint8_t md2[16] = {0xfd, 0, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x23};
	unsigned f = 0;

	if (memcmp(a, zero, 16) == 0)
		return MOAT_ADDR_UNSPECIFIED;
	if (memcmp(a, zero, 15) == 0 && a[15] == 1)
		return MOAT_ADDR_LOOPBACK;
	if (memcmp(a, mapped, 12) == 0)
		/* the kernel connects these as IPv4 on a dual-stack socket */
		return moat_addr_classify_ipv4(be32(a + 12)) | MOAT_ADDR_EMBEDDED_V4;
	if (a[0] == 0 && memcmp(a, nat64, 12) != 0 && !v6_prefix(a, nat64_local, 48)) {
		/* ::/8: IPv4-compatible (deprecated) and other reserved forms */
		f |= MOAT_ADDR_RESERVED;
		if (memcmp(a, zero, 12) == 0)
			f |= moat_addr_classify_ipv4(be32(a + 12)) | MOAT_ADDR_EMBEDDED_V4;
		return f;
	}
	if (memcmp(a, nat64, 12) == 0)
		return moat_addr_classify_ipv4(be32(a + 12)) | MOAT_ADDR_EMBEDDED_V4;
	if (v6_prefix(a, nat64_local, 48))
		return MOAT_ADDR_RESERVED | moat_addr_classify_ipv4(be32(a + 12)) |
			MOAT_ADDR_EMBEDDED_V4;
	if (v6_prefix(a, discard, 64))
		return MOAT_ADDR_RESERVED;
	if (v6_prefix(a, teredo, 32)) {
		/* server IPv4 in bits 32..63, client IPv4 inverted in the last 32 */
		return moat_addr_classify_ipv4(be32(a + 4)) |
			moat_addr_classify_ipv4(~be32(a + 12)) | MOAT_ADDR_EMBEDDED_V4;
	}
	if (v6_prefix(a, ietf, 23) || v6_prefix(a, doc, 32) || v6_prefix(a, doc2, 20) ||
	    v6_prefix(a, srv6, 16))
		return MOAT_ADDR_RESERVED;
	if (v6_prefix(a, sixtofour, 16))
		return moat_addr_classify_ipv4(be32(a + 2)) | MOAT_ADDR_EMBEDDED_V4;
	if ((a[0] & 0xfe) == 0xfc) {
		f |= MOAT_ADDR_PRIVATE;
		if (memcmp(a, md1, 16) == 0 || memcmp(a, md2, 16) == 0)
			f |= MOAT_ADDR_METADATA;
		return f;
	}
	if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80)
		return MOAT_ADDR_LINK_LOCAL;
	if (a[0] == 0xfe && (a[1] & 0xc0) == 0xc0)
		return MOAT_ADDR_PRIVATE; /* site-local, deprecated */
	if (a[0] == 0xff)
		return MOAT_ADDR_MULTICAST;
	if ((a[0] & 0xe0) != 0x20)
		return MOAT_ADDR_RESERVED; /* outside global unicast 2000::/3 */
	return 0;
}

unsigned moat_addr_classify(const struct sockaddr *sa)
{
	if (!sa)
		return MOAT_ADDR_RESERVED;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;
		return moat_addr_classify_ipv4(ntohl(sin->sin_addr.s_addr));
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa;
		return classify_ipv6(sin6->sin6_addr.s6_addr);
	}
	return MOAT_ADDR_RESERVED;
}

bool moat_addr_is_public(const struct sockaddr *sa)
{
	return (moat_addr_classify(sa) & MOAT_ADDR_DENY_MASK) == 0;
}

const char *moat_addr_flags_reason(unsigned flags)
{
	static const struct {
		unsigned flag;
		const char *name;
	} order[] = {
		{MOAT_ADDR_METADATA, "metadata"},
		{MOAT_ADDR_LOOPBACK, "loopback"},
		{MOAT_ADDR_UNSPECIFIED, "unspecified"},
		{MOAT_ADDR_LINK_LOCAL, "link-local"},
		{MOAT_ADDR_CGNAT, "cgnat"},
		{MOAT_ADDR_PRIVATE, "private"},
		{MOAT_ADDR_MULTICAST, "multicast"},
		{MOAT_ADDR_BROADCAST, "broadcast"},
		{MOAT_ADDR_RESERVED, "reserved"},
	};
	for (size_t i = 0; i < ELEMENTSOF(order); i++)
		if (flags & order[i].flag)
			return order[i].name;
	if (flags & MOAT_ADDR_DENY_MASK)
		return "reserved";
	return "public";
}

bool moat_addr_unmap(const struct sockaddr *sa, struct sockaddr_storage *ret)
{
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	memset(ret, 0, sizeof(*ret));
	if (!sa)
		return false;
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa;
		if (memcmp(sin6->sin6_addr.s6_addr, mapped, 12) == 0) {
			struct sockaddr_in *sin = (struct sockaddr_in *)ret;
			sin->sin_family = AF_INET;
			sin->sin_port = sin6->sin6_port;
			memcpy(&sin->sin_addr, sin6->sin6_addr.s6_addr + 12, 4);
			return true;
		}
		memcpy(ret, sa, sizeof(struct sockaddr_in6));
	} else if (sa->sa_family == AF_INET) {
		memcpy(ret, sa, sizeof(struct sockaddr_in));
	} else {
		ret->ss_family = sa->sa_family;
	}
	return false;
}

int moat_addr_format(const struct sockaddr *sa, bool with_port, char *buf, size_t len)
{
	char tmp[INET6_ADDRSTRLEN];
	unsigned port;
	bool v6;
	int n;

	if (!buf || len == 0)
		return -ENOBUFS;
	buf[0] = '\0';
	if (!sa)
		return -EAFNOSUPPORT;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;
		if (!inet_ntop(AF_INET, &sin->sin_addr, tmp, sizeof(tmp)))
			return -EAFNOSUPPORT;
		port = ntohs(sin->sin_port);
		v6 = false;
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa;
		if (!inet_ntop(AF_INET6, &sin6->sin6_addr, tmp, sizeof(tmp)))
			return -EAFNOSUPPORT;
		port = ntohs(sin6->sin6_port);
		v6 = true;
	} else {
		return -EAFNOSUPPORT;
	}
	if (!with_port)
		n = snprintf(buf, len, "%s", tmp);
	else if (v6)
		n = snprintf(buf, len, "[%s]:%u", tmp, port);
	else
		n = snprintf(buf, len, "%s:%u", tmp, port);
	if (n < 0 || (size_t)n >= len) {
		buf[0] = '\0';
		return -ENOBUFS;
	}
	return n;
}

int moat_cidr_parse(const char *s, struct moat_cidr *ret)
{
	struct sockaddr_storage ss;
	const char *slash;
	size_t alen;
	unsigned prefix, maxp;

	if (!s || !ret)
		return -EINVAL;
	memset(ret, 0, sizeof(*ret));
	if (s[0] == '[')
		return -EINVAL;
	slash = strchr(s, '/');
	alen = slash ? (size_t)(slash - s) : strlen(s);
	if (moat_addr_parse_n(s, alen, &ss) < 0)
		return -EINVAL;
	if (ss.ss_family == AF_INET) {
		ret->family = AF_INET;
		memcpy(ret->addr, &((struct sockaddr_in *)&ss)->sin_addr, 4);
		maxp = 32;
	} else {
		ret->family = AF_INET6;
		memcpy(ret->addr, &((struct sockaddr_in6 *)&ss)->sin6_addr, 16);
		maxp = 128;
	}
	if (!slash) {
		prefix = maxp;
	} else {
		const char *p = slash + 1;
		size_t n = strlen(p);
		if (n == 0 || n > 3 || (n > 1 && p[0] == '0'))
			goto fail;
		prefix = 0;
		for (size_t i = 0; i < n; i++) {
			if (p[i] < '0' || p[i] > '9')
				goto fail;
			prefix = prefix * 10 + (unsigned)(p[i] - '0');
		}
		if (prefix > maxp)
			goto fail;
	}
	/* host bits must be zero */
	for (unsigned bit = prefix; bit < maxp; bit++)
		if (ret->addr[bit / 8] & (0x80 >> (bit % 8)))
			goto fail;
	ret->prefix = prefix;
	return 0;
fail:
	memset(ret, 0, sizeof(*ret));
	return -EINVAL;
}

bool moat_cidr_contains(const struct moat_cidr *c, const struct sockaddr *sa)
{
	struct sockaddr_storage u;
	const uint8_t *a;

	if (!c || !sa)
		return false;
	moat_addr_unmap(sa, &u);
	if (u.ss_family == AF_INET && c->family == AF_INET)
		a = (const uint8_t *)&((struct sockaddr_in *)&u)->sin_addr;
	else if (u.ss_family == AF_INET6 && c->family == AF_INET6)
		a = ((struct sockaddr_in6 *)&u)->sin6_addr.s6_addr;
	else
		return false;
	return v6_prefix(a, c->addr, c->prefix);
}

int moat_cidr_format(const struct moat_cidr *c, char *buf, size_t len)
{
	char tmp[INET6_ADDRSTRLEN];
	int n;

	if (!buf || len == 0)
		return -ENOBUFS;
	buf[0] = '\0';
	if (!c || (c->family != AF_INET && c->family != AF_INET6) ||
	    !inet_ntop(c->family, c->addr, tmp, sizeof(tmp)))
		return -EAFNOSUPPORT;
	n = snprintf(buf, len, "%s/%u", tmp, c->prefix);
	if (n < 0 || (size_t)n >= len) {
		buf[0] = '\0';
		return -ENOBUFS;
	}
	return n;
}

static bool name_is_or_under(const char *host, const char *suffix)
{
	size_t h = strlen(host), s = strlen(suffix);
	if (h == s)
		return memcmp(host, suffix, s) == 0;
	return h > s && host[h - s - 1] == '.' && memcmp(host + h - s, suffix, s) == 0;
}

const char *moat_host_special_reason(const char *host)
{
	static const char *const metadata_exact[] = {
		"metadata",
		"metadata.goog",
		"instance-data",
		"instance-data.ec2.internal",
		"metadata.tencentyun.com",
		"metadata.azure.internal",
	};
	static const char *const local_suffixes[] = {
		"localhost", "local", "internal", "home.arpa", "lan", "localdomain", "svc",
	};

	if (!host || !*host)
		return NULL;
	for (size_t i = 0; i < ELEMENTSOF(metadata_exact); i++)
		if (streq(host, metadata_exact[i]))
			return "metadata";
	if (name_is_or_under(host, "metadata.google.internal"))
		return "metadata";
	for (size_t i = 0; i < ELEMENTSOF(local_suffixes); i++)
		if (name_is_or_under(host, local_suffixes[i]))
			return "local-name";
	return NULL;
}

bool moat_host_is_metadata_name(const char *host)
{
	const char *r = moat_host_special_reason(host);
	return r && streq(r, "metadata");
}
