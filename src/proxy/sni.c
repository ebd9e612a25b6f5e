/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Server name and ALPN from a TLS ClientHello (see sni.h). */
#include "proxy/sni.h"

#include <errno.h>
#include <string.h>

#include "shared/macro.h"

#define TLS_HANDSHAKE 22
#define TLS_CLIENT_HELLO 1
#define TLS_RECORD_MAX 16384
#define EXT_SERVER_NAME 0
#define EXT_ALPN 16
#define EXT_ECH 0xfe0d /* RFC 9849 encrypted_client_hello */
#define EXT_ESNI 0xffce /* draft-ietf-tls-esni-00..02 encrypted_server_name */

/* A bounds-checked reader over a byte range. */
struct cur {
	const uint8_t *p;
	size_t len;
};

static bool take(struct cur *c, size_t n, const uint8_t **ret)
{
	if (c->len < n)
		return false;
	if (ret)
		*ret = c->p;
	c->p += n;
	c->len -= n;
	return true;
}

static bool u8(struct cur *c, unsigned *ret)
{
	const uint8_t *p;
	if (!take(c, 1, &p))
		return false;
	*ret = p[0];
	return true;
}

static bool u16(struct cur *c, unsigned *ret)
{
	const uint8_t *p;
	if (!take(c, 2, &p))
		return false;
	*ret = ((unsigned)p[0] << 8) | p[1];
	return true;
}

/* A sub-cursor of @n bytes, advancing @c past them. */
static bool sub(struct cur *c, size_t n, struct cur *ret)
{
	const uint8_t *p;
	if (!take(c, n, &p))
		return false;
	*ret = (struct cur){p, n};
	return true;
}

static int malformed(struct moat_sni_info *r, const char *why)
{
	r->malformed_why = why;
	r->host[0] = '\0';
	return MOAT_SNI_MALFORMED;
}

static int parse_server_name(struct cur ext, struct moat_sni_info *r)
{
	struct cur list, name;
	unsigned list_len, type, name_len;
	char tmp[MOAT_HOST_BUFSZ];
	int e;

	if (!u16(&ext, &list_len) || !sub(&ext, list_len, &list) || ext.len != 0)
		return malformed(r, "server_name length");
	if (!u8(&list, &type) || !u16(&list, &name_len) || !sub(&list, name_len, &name))
		return malformed(r, "server_name entry");
	if (list.len != 0)
		return malformed(r, "more than one server_name entry");
	if (type != 0)
		return malformed(r, "server_name type is not host_name");
	if (name_len == 0)
		return malformed(r, "empty server_name");
	e = moat_host_normalize_n((const char *)name.p, name.len, tmp, sizeof(tmp));
	if (e == -EDOM)
		return malformed(r, "server_name is an IP literal");
	if (e < 0 || memchr(name.p, ':', name.len))
		return malformed(r, "server_name is not a valid host name");
	memcpy(r->host, tmp, sizeof(tmp));
	return 0;
}

static int parse_alpn(struct cur ext, struct moat_sni_info *r)
{
	struct cur list;
	unsigned list_len;
	size_t n = 0;

	if (!u16(&ext, &list_len) || !sub(&ext, list_len, &list) || ext.len != 0 || list_len == 0)
		return malformed(r, "alpn length");
	while (list.len > 0) {
		unsigned plen;
		const uint8_t *p;
		if (!u8(&list, &plen) || plen == 0 || !take(&list, plen, &p))
			return malformed(r, "alpn entry");
		if (n > 0 && n + 1 < sizeof(r->alpn))
			r->alpn[n++] = ',';
		for (unsigned i = 0; i < plen && n + 1 < sizeof(r->alpn); i++)
			r->alpn[n++] =
				(p[i] > 0x20 && p[i] < 0x7f && p[i] != ',') ? (char)p[i] : '?';
	}
	r->alpn[n] = '\0';
	return 0;
}

/* Parse a complete ClientHello body (after the 4-byte handshake header). */
static int parse_hello(struct cur c, struct moat_sni_info *r)
{
	unsigned v, sid_len, cs_len, comp_len, ext_len;
	struct cur exts;
	bool seen_sni = false, seen_alpn = false;

	if (!u16(&c, &v))
		return malformed(r, "short ClientHello");
	r->legacy_version = (uint16_t)v;
	if ((v >> 8) != 3)
		return malformed(r, "ClientHello version");
	if (!take(&c, 32, NULL) || !u8(&c, &sid_len) || sid_len > 32 || !take(&c, sid_len, NULL))
		return malformed(r, "ClientHello random/session id");
	if (!u16(&c, &cs_len) || cs_len < 2 || (cs_len & 1) || !take(&c, cs_len, NULL))
		return malformed(r, "ClientHello cipher suites");
	if (!u8(&c, &comp_len) || comp_len < 1 || !take(&c, comp_len, NULL))
		return malformed(r, "ClientHello compression methods");
	if (c.len == 0)
		return MOAT_SNI_NO_SNI; /* no extensions at all (SSLv3 style) */
	if (!u16(&c, &ext_len) || !sub(&c, ext_len, &exts) || c.len != 0)
		return malformed(r, "ClientHello extensions length");
	while (exts.len > 0) {
		unsigned type, len;
		struct cur ext;
		int e;
		if (!u16(&exts, &type) || !u16(&exts, &len) || !sub(&exts, len, &ext))
			return malformed(r, "extension length");
		if (type == EXT_SERVER_NAME) {
			if (seen_sni)
				return malformed(r, "duplicate server_name extension");
			seen_sni = true;
			e = parse_server_name(ext, r);
			if (e != 0)
				return e;
		} else if (type == EXT_ALPN) {
			if (seen_alpn)
				return malformed(r, "duplicate alpn extension");
			seen_alpn = true;
			e = parse_alpn(ext, r);
			if (e != 0)
				return e;
		} else if (type == EXT_ECH || type == EXT_ESNI) {
			/* The outer SNI is then a front's public name; the name
			 * the server serves is in the encrypted part. */
			r->ech = true;
		}
	}
	return seen_sni ? MOAT_SNI_FOUND : MOAT_SNI_NO_SNI;
}

int moat_sni_parse(const uint8_t *buf, size_t len, struct moat_sni_info *ret)
{
	uint8_t scratch[MOAT_SNI_MAX_HELLO];
	struct moat_sni_info tmp = {0};
	struct moat_sni_info *r = ret ? ret : &tmp;
	size_t have = 0, pos = 0, need = 0, declared = 0;

	memset(r, 0, sizeof(*r));
	if (!buf || len == 0)
		return MOAT_SNI_NEED_MORE;
	/* first record header: decides TLS or not */
	if (buf[0] != TLS_HANDSHAKE)
		return MOAT_SNI_NOT_TLS;
	if (len >= 2 && buf[1] != 3)
		return MOAT_SNI_NOT_TLS;

	for (;;) {
		if (len - pos < 5)
			return MOAT_SNI_NEED_MORE;
		const uint8_t *h = buf + pos;
		size_t rlen = ((size_t)h[3] << 8) | h[4];
		if (h[0] != TLS_HANDSHAKE)
			return malformed(r, "non-handshake record before the ClientHello ended");
		if (h[1] != 3)
			return malformed(r, "record version");
		if (rlen == 0 || rlen > TLS_RECORD_MAX)
			return malformed(r, "record length");
		pos += 5;
		declared += rlen;
		size_t avail = MIN(rlen, len - pos);
		size_t copy = MIN(avail, sizeof(scratch) - have);
		memcpy(scratch + have, buf + pos, copy);
		have += copy;
		if (have >= 4 && need == 0) {
			if (scratch[0] != TLS_CLIENT_HELLO)
				return malformed(r, "first handshake message is not a ClientHello");
			need = 4 +
				(((size_t)scratch[1] << 16) | ((size_t)scratch[2] << 8) |
				 scratch[3]);
			if (need > MOAT_SNI_MAX_HELLO)
				return malformed(r, "ClientHello larger than 16 KiB");
		}
		if (need && have >= need) {
			/* The ClientHello is alone in the first flight: bytes after it
			 * in its record (a second handshake message, another hello)
			 * would be judged by the server, not here. */
			if (declared != need)
				return malformed(r, "bytes after the ClientHello in its record");
			break;
		}
		if (avail < rlen)
			return MOAT_SNI_NEED_MORE; /* this record is incomplete */
		pos += rlen;
	}
	r->hello_len = need;
	return parse_hello((struct cur){scratch + 4, need - 4}, r);
}

const char *moat_sni_result_str(int result)
{
	switch (result) {
	case MOAT_SNI_NEED_MORE:
		return "need-more";
	case MOAT_SNI_FOUND:
		return "found";
	case MOAT_SNI_NOT_TLS:
		return "not-tls";
	case MOAT_SNI_NO_SNI:
		return "no-sni";
	case MOAT_SNI_MALFORMED:
		return "malformed";
	default:
		return "unknown";
	}
}
