/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* DNS query parser and stub answers (see dns.h). */
#include "proxy/dns.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "shared/macro.h"

#define F_QR 0x8000u
#define F_AA 0x0400u
#define F_TC 0x0200u
#define F_RD 0x0100u
#define F_RA 0x0080u

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)((p[0] << 8) | p[1]);
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/*
 * Read the name at @off. Pointers must go strictly before the start of the
 * segment being read (the name start, or the previous pointer's target), so
 * every jump moves backwards and the walk ends; at most MOAT_DNS_MAX_POINTERS.
 */
static int read_name(const uint8_t *msg, size_t len, size_t off, struct moat_dns_query *q,
		     size_t *ret_end)
{
	size_t pos = off, limit = off, end = 0, wl = 0, tl = 0;
	unsigned pointers = 0;
	bool jumped = false;

	q->name_plain = true;
	for (;;) {
		if (pos >= len)
			return -MOAT_DNS_E_TRUNCATED;
		uint8_t c = msg[pos];
		if (c == 0) {
			if (!jumped)
				end = pos + 1;
			q->qname_wire[wl++] = 0;
			break;
		}
		if ((c & 0xc0) == 0xc0) {
			if (pos + 1 >= len)
				return -MOAT_DNS_E_TRUNCATED;
			size_t target = ((size_t)(c & 0x3f) << 8) | msg[pos + 1];
			if (target >= limit || target < MOAT_DNS_HEADER_LEN ||
			    ++pointers > MOAT_DNS_MAX_POINTERS)
				return -MOAT_DNS_E_POINTER;
			if (!jumped)
				end = pos + 2;
			jumped = true;
			limit = target;
			pos = target;
			continue;
		}
		if (c & 0xc0)
			return -MOAT_DNS_E_NAME; /* 0x40 extended / 0x80 reserved label types */
		if (pos + 1 + c > len)
			return -MOAT_DNS_E_TRUNCATED;
		if (wl + 1 + c + 1 > MOAT_DNS_NAME_WIRE_MAX)
			return -MOAT_DNS_E_NAME;
		q->qname_wire[wl++] = c;
		memcpy(q->qname_wire + wl, msg + pos + 1, c);
		wl += c;
		if (tl > 0)
			q->name[tl++] = '.';
		for (size_t i = 0; i < c; i++) {
			uint8_t b = msg[pos + 1 + i];
			if (b >= 'A' && b <= 'Z')
				b = (uint8_t)(b - 'A' + 'a');
			if ((b >= 'a' && b <= 'z') || (b >= '0' && b <= '9') || b == '-' ||
			    b == '_') {
				q->name[tl++] = (char)b;
			} else {
				/* fits: 254 label bytes * 4 + dots < MOAT_DNS_NAME_TEXT_MAX */
				snprintf(q->name + tl, 5, "\\%03u", b);
				tl += 4;
				q->name_plain = false;
			}
		}
		pos += 1 + c;
	}
	q->name[tl] = '\0';
	q->qname_wire_len = wl;
	*ret_end = end;
	return 0;
}

int moat_dns_parse_query(const uint8_t *msg, size_t len, struct moat_dns_query *ret)
{
	size_t end;
	int e;

	if (!ret)
		return -MOAT_DNS_E_SHORT;
	memset(ret, 0, sizeof(*ret));
	if (!msg || len < MOAT_DNS_HEADER_LEN)
		return -MOAT_DNS_E_SHORT;
	ret->id = get16(msg);
	ret->flags = get16(msg + 2);
	ret->rd = ret->flags & F_RD;
	if (ret->flags & F_QR)
		return -MOAT_DNS_E_RESPONSE;
	if ((ret->flags >> 11) & 0xf)
		return -MOAT_DNS_E_OPCODE;
	if (get16(msg + 4) != 1 || get16(msg + 6) != 0 || get16(msg + 8) != 0 ||
	    get16(msg + 10) > 1)
		return -MOAT_DNS_E_COUNTS;
	ret->has_edns = get16(msg + 10) == 1;
	e = read_name(msg, len, MOAT_DNS_HEADER_LEN, ret, &end);
	if (e < 0) {
		ret->name[0] = '\0';
		ret->qname_wire_len = 0;
		return e;
	}
	if (end + 4 > len)
		return -MOAT_DNS_E_TRUNCATED;
	ret->qtype = get16(msg + end);
	ret->qclass = get16(msg + end + 2);
	return 0;
}

int moat_dns_err_rcode(int err)
{
	if (err < 0)
		err = -err;
	switch (err) {
	case MOAT_DNS_E_SHORT:
	case MOAT_DNS_E_RESPONSE:
		return -1;
	case MOAT_DNS_E_OPCODE:
		return MOAT_DNS_RCODE_NOTIMP;
	default:
		return MOAT_DNS_RCODE_FORMERR;
	}
}

const char *moat_dns_strerror(int err)
{
	static const char *const names[MOAT_DNS_E__MAX] = {
		[MOAT_DNS_E_SHORT] = "short-message",	  [MOAT_DNS_E_RESPONSE] = "not-a-query",
		[MOAT_DNS_E_OPCODE] = "opcode",		  [MOAT_DNS_E_COUNTS] = "section-counts",
		[MOAT_DNS_E_TRUNCATED] = "truncated",	  [MOAT_DNS_E_NAME] = "bad-name",
		[MOAT_DNS_E_POINTER] = "bad-compression",
	};
	if (err < 0)
		err = -err;
	if (err <= 0 || err >= MOAT_DNS_E__MAX || !names[err])
		return "unknown";
	return names[err];
}

/* Header + question; returns the length or -ENOBUFS. */
static int write_head(const struct moat_dns_query *q, uint8_t rcode, bool aa, uint8_t *out,
		      size_t outlen)
{
	size_t need = MOAT_DNS_HEADER_LEN + q->qname_wire_len + 4;
	uint16_t flags =
		(uint16_t)(F_QR | F_RA | (q->rd ? F_RD : 0) | (aa ? F_AA : 0) | (rcode & 0xf));

	if (!out || q->qname_wire_len == 0 || q->qname_wire_len > MOAT_DNS_NAME_WIRE_MAX ||
	    outlen < need)
		return -ENOBUFS;
	put16(out, q->id);
	put16(out + 2, flags);
	put16(out + 4, 1);
	put16(out + 6, 0);
	put16(out + 8, 0);
	put16(out + 10, 0);
	memcpy(out + MOAT_DNS_HEADER_LEN, q->qname_wire, q->qname_wire_len);
	put16(out + MOAT_DNS_HEADER_LEN + q->qname_wire_len, q->qtype);
	put16(out + MOAT_DNS_HEADER_LEN + q->qname_wire_len + 2, q->qclass);
	return (int)need;
}

int moat_dns_build_rcode_response(const struct moat_dns_query *q, uint8_t rcode, uint8_t *out,
				  size_t outlen)
{
	if (!q)
		return -ENOBUFS;
	bool aa = rcode == MOAT_DNS_RCODE_NOERROR || rcode == MOAT_DNS_RCODE_NXDOMAIN;
	return write_head(q, rcode, aa, out, outlen);
}

int moat_dns_build_addr_response(const struct moat_dns_query *q,
				 const struct sockaddr_storage *addrs, unsigned n_addrs,
				 uint32_t ttl, uint8_t *out, size_t outlen)
{
	int family;
	size_t pos, rdlen;
	unsigned an = 0;
	int n;

	if (!q)
		return -ENOBUFS;
	n = write_head(q, MOAT_DNS_RCODE_NOERROR, true, out, outlen);
	if (n < 0)
		return n;
	pos = (size_t)n;
	if (q->qclass != MOAT_DNS_CLASS_IN)
		return n;
	if (q->qtype == MOAT_DNS_TYPE_A) {
		family = AF_INET;
		rdlen = 4;
	} else if (q->qtype == MOAT_DNS_TYPE_AAAA) {
		family = AF_INET6;
		rdlen = 16;
	} else {
		return n;
	}
	for (unsigned i = 0; addrs && i < n_addrs && an < MOAT_DNS_MAX_ANSWERS; i++) {
		const uint8_t *rd;
		if (addrs[i].ss_family != family)
			continue;
		if (family == AF_INET)
			rd = (const uint8_t *)&((const struct sockaddr_in *)&addrs[i])->sin_addr;
		else
			rd = ((const struct sockaddr_in6 *)&addrs[i])->sin6_addr.s6_addr;
		if (pos + 12 + rdlen > outlen) {
			/* does not fit: no answers, TC set, client retries over TCP */
			put16(out + 2, (uint16_t)(get16(out + 2) | F_TC));
			put16(out + 6, 0);
			return n;
		}
		put16(out + pos, 0xc000 | MOAT_DNS_HEADER_LEN); /* name: the question */
		put16(out + pos + 2, q->qtype);
		put16(out + pos + 4, MOAT_DNS_CLASS_IN);
		put32(out + pos + 6, ttl);
		put16(out + pos + 10, (uint16_t)rdlen);
		memcpy(out + pos + 12, rd, rdlen);
		pos += 12 + rdlen;
		put16(out + 6, (uint16_t)++an);
	}
	return (int)pos;
}

int moat_dns_build_header_response(const uint8_t *query, size_t qlen, uint8_t rcode, uint8_t *out,
				   size_t outlen)
{
	if (!query || qlen < MOAT_DNS_HEADER_LEN)
		return -EINVAL;
	uint16_t qf = get16(query + 2);
	if (qf & F_QR)
		return -EINVAL;
	if (!out || outlen < MOAT_DNS_HEADER_LEN)
		return -ENOBUFS;
	memset(out, 0, MOAT_DNS_HEADER_LEN);
	out[0] = query[0];
	out[1] = query[1];
	put16(out + 2, (uint16_t)(F_QR | (qf & 0x7800) | (qf & F_RD) | F_RA | (rcode & 0xf)));
	return MOAT_DNS_HEADER_LEN;
}

int moat_dns_tcp_unframe(const uint8_t *buf, size_t len, const uint8_t **ret_msg, size_t *ret_len)
{
	size_t n;

	if (!buf || len < 2)
		return 0;
	n = get16(buf);
	if (n < MOAT_DNS_HEADER_LEN)
		return -EMSGSIZE;
	if (len < 2 + n)
		return 0;
	if (ret_msg)
		*ret_msg = buf + 2;
	if (ret_len)
		*ret_len = n;
	return (int)(2 + n);
}

int moat_dns_tcp_prefix(uint8_t out[2], size_t msglen)
{
	if (msglen > 0xffff)
		return -EMSGSIZE;
	put16(out, (uint16_t)msglen);
	return 2;
}
