/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * DNS messages for the in-sandbox stub resolver: parse one query, build the
 * answers the stub gives (A/AAAA from given addresses, NXDOMAIN, REFUSED,
 * NOERROR without records), and RFC 1035 4.2.2 TCP length framing. Pure code,
 * no allocation. The stub never forwards anything, so the parser only needs
 * what a question holds.
 *
 * Accepted query: QR=0, OPCODE=0 (QUERY), QDCOUNT=1, ANCOUNT=0, NSCOUNT=0,
 * ARCOUNT<=1 (EDNS OPT is tolerated and not parsed), a name of at most 255
 * wire bytes / 127 labels. A compression pointer must point strictly before
 * the start of the segment being read (the name itself, or the target of the
 * previous pointer), so every jump goes backwards and loops are impossible; at
 * most 16 pointers are followed, and pointers into the header are refused.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define MOAT_DNS_HEADER_LEN 12
#define MOAT_DNS_NAME_WIRE_MAX 255
/* presentation text: every byte escaped as \DDD at worst, plus dots, NUL */
#define MOAT_DNS_NAME_TEXT_MAX 1024
#define MOAT_DNS_UDP_MAX 512 /* answer size without EDNS */
#define MOAT_DNS_MAX_ANSWERS 16 /* addresses per answer, more are ignored */
#define MOAT_DNS_MAX_POINTERS 16 /* compression pointers followed per name */

enum moat_dns_type {
	MOAT_DNS_TYPE_A = 1,
	MOAT_DNS_TYPE_NS = 2,
	MOAT_DNS_TYPE_CNAME = 5,
	MOAT_DNS_TYPE_SOA = 6,
	MOAT_DNS_TYPE_PTR = 12,
	MOAT_DNS_TYPE_MX = 15,
	MOAT_DNS_TYPE_TXT = 16,
	MOAT_DNS_TYPE_AAAA = 28,
	MOAT_DNS_TYPE_SRV = 33,
	MOAT_DNS_TYPE_OPT = 41,
	MOAT_DNS_TYPE_HTTPS = 65,
	MOAT_DNS_TYPE_ANY = 255,
};
#define MOAT_DNS_CLASS_IN 1

enum moat_dns_rcode {
	MOAT_DNS_RCODE_NOERROR = 0,
	MOAT_DNS_RCODE_FORMERR = 1,
	MOAT_DNS_RCODE_SERVFAIL = 2,
	MOAT_DNS_RCODE_NXDOMAIN = 3,
	MOAT_DNS_RCODE_NOTIMP = 4,
	MOAT_DNS_RCODE_REFUSED = 5,
};

enum moat_dns_err {
	MOAT_DNS_E_SHORT = 1, /* shorter than a header: no reply possible */
	MOAT_DNS_E_RESPONSE, /* QR bit set: ignore, never answer (no loops) */
	MOAT_DNS_E_OPCODE, /* not a standard query: answer NOTIMP */
	MOAT_DNS_E_COUNTS, /* QDCOUNT != 1, or answer/authority records: FORMERR */
	MOAT_DNS_E_TRUNCATED, /* question runs past the end: FORMERR */
	MOAT_DNS_E_NAME, /* label type 0x40/0x80, name too long: FORMERR */
	MOAT_DNS_E_POINTER, /* forward/self pointer, loop, too many: FORMERR */
	MOAT_DNS_E__MAX
};

struct moat_dns_query {
	uint16_t id;
	uint16_t flags; /* header flags word as received */
	bool rd; /* recursion desired (echoed back) */
	bool has_edns; /* ARCOUNT was 1 (assumed OPT; not validated) */
	uint16_t qtype;
	uint16_t qclass;
	/* Name in presentation form: lowercase, labels joined by '.', no
	 * trailing dot, root = "". Bytes other than [a-z0-9-_] are written as
	 * \DDD (so "a.b" inside one label is "a\046b"), which
	 * moat_host_normalize() then refuses: only plain names can match. */
	char name[MOAT_DNS_NAME_TEXT_MAX];
	bool name_plain; /* no escape was needed */
	/* The question name in uncompressed wire form (case as sent), for
	 * echoing the question in replies. */
	uint8_t qname_wire[MOAT_DNS_NAME_WIRE_MAX];
	size_t qname_wire_len;
};

/* Parse a query message. Returns 0 or -enum moat_dns_err. */
int moat_dns_parse_query(const uint8_t *msg, size_t len, struct moat_dns_query *ret);

/* Reply code to answer a parse error with, or -1 for "send nothing"
 * (E_SHORT, E_RESPONSE). */
int moat_dns_err_rcode(int err);
/* Short reason token for an error. Accepts err or -err. */
const char *moat_dns_strerror(int err);

/*
 * Answer @q with the addresses in @addrs that fit its type: AF_INET for A,
 * AF_INET6 for AAAA (others are skipped; ports ignored), each with @ttl, at
 * most MOAT_DNS_MAX_ANSWERS. No fitting address (or another qtype) gives
 * NOERROR with no answer (NODATA). If the answer does not fit @outlen (pass
 * MOAT_DNS_UDP_MAX for UDP without EDNS), answers are dropped and TC is set.
 * Flags: QR, AA, RA, RD echoed. Returns the message length or -ENOBUFS
 * (@outlen cannot even hold header and question).
 */
int moat_dns_build_addr_response(const struct moat_dns_query *q,
				 const struct sockaddr_storage *addrs, unsigned n_addrs,
				 uint32_t ttl, uint8_t *out, size_t outlen);

/* Answer @q with @rcode (NXDOMAIN, REFUSED, NOERROR-empty, SERVFAIL, ...),
 * question echoed, no records. Returns length or -ENOBUFS. */
int moat_dns_build_rcode_response(const struct moat_dns_query *q, uint8_t rcode, uint8_t *out,
				  size_t outlen);

/*
 * Answer a message that did not parse (at least MOAT_DNS_HEADER_LEN bytes):
 * header only, id and RD copied, QR set, QDCOUNT 0, @rcode. Returns
 * MOAT_DNS_HEADER_LEN, or -EINVAL if @query is shorter than a header or is
 * itself a response, -ENOBUFS.
 */
int moat_dns_build_header_response(const uint8_t *query, size_t qlen, uint8_t rcode, uint8_t *out,
				   size_t outlen);

/*
 * TCP framing: if @buf holds a complete 2-byte-length-prefixed message, set
 * @ret_msg/@ret_len to it and return the bytes consumed (2 + length); 0 if
 * more bytes are needed; -EMSGSIZE if the announced length is below a DNS
 * header (12) — the stream is then unusable, close it.
 */
int moat_dns_tcp_unframe(const uint8_t *buf, size_t len, const uint8_t **ret_msg, size_t *ret_len);
/* Write the 2-byte big-endian length for a message of @msglen bytes.
 * Returns 2, or -EMSGSIZE if @msglen > 65535. */
int moat_dns_tcp_prefix(uint8_t out[2], size_t msglen);
