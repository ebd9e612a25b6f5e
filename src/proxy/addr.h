/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * IP addresses for the egress proxy: strict parsing, recognition of the
 * alternative IPv4 spellings hostile input uses, and classification into the
 * ranges the proxy refuses (loopback, private, link-local, CGNAT, metadata, ...).
 * Pure code: no syscalls, no allocation. inet_pton/inet_ntop are libc only.
 *
 * Embedded IPv4: before classifying, an IPv6 address that carries an IPv4
 * address is also classified by that IPv4 address, and the flags are OR-ed:
 *   ::ffff:a.b.c.d (mapped), ::a.b.c.d (compatible, deprecated, not :: / ::1),
 *   64:ff9b::/96 and 64:ff9b:1::/48 (NAT64, low 32 bits),
 *   2002:AABB:CCDD::/48 (6to4), 2001:0::/32 (Teredo: server bits 32..63 and
 *   the client = ~(low 32 bits); both classified).
 * So "[::ffff:127.0.0.1]" is LOOPBACK and "[64:ff9b::a9fe:a9fe]" is METADATA.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* Text length for moat_addr_format() with port: "[" v6 "]:" port + NUL. */
#define MOAT_ADDR_STRLEN 56

enum moat_addr_flag {
	MOAT_ADDR_LOOPBACK = 1u << 0, /* 127/8, ::1 */
	MOAT_ADDR_PRIVATE = 1u << 1, /* 10/8, 172.16/12, 192.168/16, fc00::/7, fec0::/10 */
	MOAT_ADDR_LINK_LOCAL = 1u << 2, /* 169.254/16, fe80::/10 */
	MOAT_ADDR_CGNAT = 1u << 3, /* 100.64/10 */
	MOAT_ADDR_UNSPECIFIED = 1u << 4, /* 0.0.0.0, :: */
	MOAT_ADDR_MULTICAST = 1u << 5, /* 224/4, ff00::/8 */
	MOAT_ADDR_BROADCAST = 1u << 6, /* 255.255.255.255 */
	/* 0/8, 192.0.0/24, 192.0.2/24, 192.88.99/24, 198.18/15, 198.51.100/24, 203.0.113/24,
	 * 240/4; IPv6: all of ::/8 except ::, ::1 and ::ffff:0:0/96 (so the
	 * deprecated IPv4-compatible ::a.b.c.d is RESERVED plus its IPv4 flags),
	 * 64:ff9b:1::/48, 100::/64, 2001::/23 outside Teredo, 2001:db8::/32,
	 * 3fff::/20, 5f00::/16, and everything outside 2000::/3 not named above */
	MOAT_ADDR_RESERVED = 1u << 7,
	/* 169.254.169.254, 169.254.169.253, 169.254.169.123, 169.254.170.2,
	 * 169.254.170.23, 100.100.100.200, 168.63.129.16, fd00:ec2::254,
	 * fd00:ec2::23 (these are also flagged by their range where one applies;
	 * 168.63.129.16 is otherwise public) */
	MOAT_ADDR_METADATA = 1u << 8,
	/* informational, never makes an address non-public by itself: the verdict
	 * came (also) from an embedded IPv4 address */
	MOAT_ADDR_EMBEDDED_V4 = 1u << 16,
};

/* Flags that make an address non-public (everything but informational ones). */
#define MOAT_ADDR_DENY_MASK 0xffffu

/*
 * Parse a canonical numeric address: dotted-quad IPv4 (exactly four decimal
 * parts 0..255, no leading zeros) or IPv6 as inet_pton(AF_INET6) accepts it,
 * optionally in [brackets]. A zone ("%eth0"), a port, whitespace or anything
 * else is -EINVAL. Fills @ret (sin_port/sin6_port 0), returns 0 or -EINVAL.
 */
int moat_addr_parse(const char *s, struct sockaddr_storage *ret);

/* Same on @len bytes (not NUL-terminated); a NUL inside is -EINVAL. */
int moat_addr_parse_n(const char *s, size_t len, struct sockaddr_storage *ret);

/*
 * Recognise every IPv4 spelling that inet_aton()/browsers/URL parsers accept:
 * 1 to 4 dot-separated parts, each decimal, octal (leading 0) or hex (0x/0X,
 * "0x" alone = 0), the last part filling the remaining bytes ("127.1",
 * "2130706433", "0x7f.1", "0177.0.0.1", "0x7f000001"), one trailing dot
 * allowed. @ret gets the address in HOST byte order. Returns 0 if @s is such a
 * literal, -ERANGE if it has that shape but a part is out of range
 * ("256.1.1.1", "08.1.1.1", "1.2.3.4.5", "4294967296"), -EINVAL if it is not
 * numeric at all ("a.b.c.d", "1..2", "1.2.3.4a").
 */
int moat_addr_parse_loose_ipv4(const char *s, uint32_t *ret);
int moat_addr_parse_loose_ipv4_n(const char *s, size_t len, uint32_t *ret);

/* Classification flags (enum moat_addr_flag) of an AF_INET or AF_INET6
 * address; any other family returns MOAT_ADDR_RESERVED. */
unsigned moat_addr_classify(const struct sockaddr *sa);
/* Same for a raw IPv4 address in host byte order. */
unsigned moat_addr_classify_ipv4(uint32_t addr);

/* True if classify() has no deny flag: globally routable, not metadata. */
bool moat_addr_is_public(const struct sockaddr *sa);

/* Short reason token for the most specific deny flag in @flags, for logs and
 * X-Moat-Denied: "metadata", "loopback", "link-local", "cgnat", "private",
 * "unspecified", "multicast", "broadcast", "reserved"; "public" if none.
 * Static string, never NULL. */
const char *moat_addr_flags_reason(unsigned flags);

/* If @sa is IPv6 ::ffff:a.b.c.d, write the plain AF_INET form to @ret and
 * return true; otherwise copy @sa unchanged and return false. */
bool moat_addr_unmap(const struct sockaddr *sa, struct sockaddr_storage *ret);

/*
 * Format an address as "1.2.3.4" / "2001:db8::1", or with @with_port as
 * "1.2.3.4:443" / "[2001:db8::1]:443". Returns the length written or -ENOBUFS
 * (buf is then ""), -EAFNOSUPPORT for another family. MOAT_ADDR_STRLEN fits all.
 */
int moat_addr_format(const struct sockaddr *sa, bool with_port, char *buf, size_t len);

struct moat_cidr {
	int family; /* AF_INET or AF_INET6 */
	uint8_t addr[16]; /* network byte order; IPv4 uses the first 4 bytes */
	unsigned prefix; /* 0..32 or 0..128 */
};

/*
 * Parse "10.0.0.0/8", "2001:db8::/32" or a bare canonical address (= /32 or
 * /128). Host bits must be zero ("10.0.0.1/8" is -EINVAL: it is ambiguous what
 * the operator meant). Prefix: decimal, no leading zeros, no sign. No brackets.
 * Returns 0 or -EINVAL.
 */
int moat_cidr_parse(const char *s, struct moat_cidr *ret);

/* Is @sa inside @c? An IPv4-mapped IPv6 address is compared as its IPv4
 * address, so a "203.0.113.0/24" rule also covers ::ffff:203.0.113.7. Other
 * families or family mismatch: false. */
bool moat_cidr_contains(const struct moat_cidr *c, const struct sockaddr *sa);

/* Format as "10.0.0.0/8". Returns length or -ENOBUFS. */
int moat_cidr_format(const struct moat_cidr *c, char *buf, size_t len);

/*
 * Names that reach cloud metadata services or never leave the machine/site,
 * whatever the DNS says. @host must be normalized (moat_host_normalize).
 * Decision: refuse by name before any lookup, unless the operator maps the
 * exact name with --resolve. Returns a reason token or NULL:
 *   "metadata":   metadata, metadata.google.internal, metadata.goog,
 *                 instance-data, instance-data.ec2.internal,
 *                 metadata.tencentyun.com, metadata.azure.internal,
 *                 and any name under metadata.google.internal
 *   "local-name": localhost and *.localhost (RFC 6761), *.local (mDNS),
 *                 *.internal (ICANN private-use TLD, incl. *.ec2.internal,
 *                 host.docker.internal, kubernetes internal names),
 *                 *.home.arpa, *.lan, *.localdomain, *.svc and *.cluster.local
 */
const char *moat_host_special_reason(const char *host);
/* moat_host_special_reason(host) is "metadata". */
bool moat_host_is_metadata_name(const char *host);
