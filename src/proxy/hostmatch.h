/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Host names and host patterns of the egress allowlist. Pure code, no syscalls,
 * no allocation: everything works on caller buffers of MOAT_HOST_BUFSZ bytes.
 *
 * A "normalized" host name is lowercase ASCII, has no trailing dot, consists of
 * 1..127 labels of 1..63 letters, digits and inner hyphens (LDH; no underscore,
 * no non-ASCII: callers must send IDNA "xn--" names), and is at most 253 bytes.
 * A name whose last label is numeric ("127.1", "0x7f.1", "2130706433",
 * "1.2.3.4") is never a name: it is an IPv4 literal in some form (WHATWG URL
 * "ends in a number" rule) and normalization refuses it with -EDOM so that the
 * caller classifies it as an address (see moat_host_parse()).
 *
 * Pattern semantics (allow and deny rules):
 *   "api.example.com"   matches exactly that name (after normalization).
 *   "*.example.com"     matches any name with at least one more label in front
 *                       ("a.example.com", "a.b.example.com"), never the apex
 *                       "example.com" itself and never "evil-example.com".
 * Refused patterns: empty, bare "*", "*." + a single label ("*.com"), "*." + a
 * built-in public suffix ("*.co.uk", "*.github.io": anyone can register names
 * under them), wildcards anywhere but a whole leading "*." label ("a*.b.com",
 * "*a.b.com", "a.*.b.com", "**.b.com"), schemes ("https://"), paths ("/"),
 * ports (":443" - ports are separate in the rule syntax), userinfo ("@"),
 * IP literals (use CIDR rules for addresses), and anything normalization refuses.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MOAT_HOST_MAX 253 /* bytes of a normalized name, without the NUL */
#define MOAT_HOST_LABEL_MAX 63 /* bytes of one label */
#define MOAT_HOST_BUFSZ 256 /* buffer that fits any normalized host or IP text */

enum moat_host_kind {
	MOAT_HOST_NAME = 0, /* a normalized DNS name */
	MOAT_HOST_IPV4 = 1, /* an IPv4 address, text is canonical dotted quad */
	MOAT_HOST_IPV6 = 2, /* an IPv6 address, text is canonical RFC 5952, no brackets */
};

/*
 * Normalize the NUL-terminated name @in into @out (@outlen bytes, at least
 * MOAT_HOST_BUFSZ recommended): lowercase, strip ONE trailing dot, validate
 * every label. Returns 0 on success; -EINVAL for an invalid name (empty, empty
 * label, "..", leading dot, bad character, leading/trailing hyphen in a label,
 * a lone "."); -ENAMETOOLONG for a label over 63 or a name over 253 bytes;
 * -EDOM if the last label is numeric (an IPv4 literal in some form, see
 * above); -ENOBUFS if @out is too small. @out is set to "" on any failure.
 */
int moat_host_normalize(const char *in, char *out, size_t outlen);

/* Same as moat_host_normalize() on the first @len bytes of @in (not
 * NUL-terminated, e.g. a slice of a request). A NUL inside @len is -EINVAL. */
int moat_host_normalize_n(const char *in, size_t len, char *out, size_t outlen);

/*
 * Classify and normalize a host as it appears in an authority, a SOCKS domain
 * or an SNI: @len bytes at @in (no NUL needed; a NUL inside is refused).
 * Accepts, in this order:
 *   "[v6]"          bracketed IPv6 (zone "%..." refused)    -> MOAT_HOST_IPV6
 *   "v6"            bare IPv6 only if @allow_bare_ipv6        -> MOAT_HOST_IPV6
 *   "a.b.c.d"       canonical IPv4                            -> MOAT_HOST_IPV4
 *   "127.1" etc.    any loose IPv4 form (moat_addr_parse_loose_ipv4) ->
 *                   MOAT_HOST_IPV4 with *ret_loose = true (callers should log
 *                   the raw text: it is a deliberate evasion form)
 *   a name          moat_host_normalize()                     -> MOAT_HOST_NAME
 * @out receives the canonical text (address text or normalized name).
 * @ret_loose may be NULL. Returns 0 or the negative errno of the failing step
 * (-EINVAL, -ENAMETOOLONG, -ENOBUFS; -ERANGE for a numeric host that is out of
 * IPv4 range, like "256.1.1.1" or "4294967296": never a name either).
 */
int moat_host_parse(const char *in, size_t len, bool allow_bare_ipv6, char *out, size_t outlen,
		    enum moat_host_kind *ret_kind, bool *ret_loose);

/*
 * Validate an allow/deny pattern (NUL-terminated). Returns 0 if usable, else
 * -EINVAL and, if @why is non-NULL, a one-line human reason in @why (always
 * NUL-terminated, truncated to @whylen). Case and one trailing dot are
 * accepted here; pattern_match normalizes both sides itself.
 */
int moat_host_pattern_validate(const char *pattern, char *why, size_t whylen);

/* Normalize a valid pattern into @out ("*.Example.COM." -> "*.example.com").
 * Returns 0, or -EINVAL/-ENOBUFS exactly when validate would refuse it. */
int moat_host_pattern_normalize(const char *pattern, char *out, size_t outlen);

/*
 * Does @host match @pattern? Both are normalized internally (so case and one
 * trailing dot do not matter); an invalid pattern or an invalid host (including
 * IP literals of any form) never matches. Label-boundary exact: "*.example.com"
 * matches "a.example.com" but not "example.com", "evil-example.com",
 * "example.com.evil.test" or "a.example.comevil".
 */
bool moat_host_pattern_match(const char *pattern, const char *host);

/* True if @suffix (normalized, no "*.") is a public suffix under which anyone
 * can register a name: a single label (a TLD), an entry or wildcard rule of the
 * Public Suffix List (Debian's libpsl: the newer of its built-in copy and the
 * publicsuffix package's file; co.uk, github.io, *.ck), or one of a few
 * tunnel and wildcard-DNS services the list lacks (nip.io, ngrok.app). True
 * also when the list cannot be loaded. Used by pattern validation. */
bool moat_host_is_public_suffix(const char *suffix);
