/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Fuzz the DNS query parser, the answer builders and the TCP framing. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/addr.h"
#include "proxy/dns.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct moat_dns_query q, q2;
	static uint8_t out[1024];
	struct sockaddr_storage addrs[2];
	const uint8_t *msg;
	size_t mlen;
	int r, n;

	if (size > 65600)
		return 0;
	r = moat_dns_parse_query(data, size, &q);
	if (r == 0) {
		if (strlen(q.name) >= sizeof(q.name) || q.qname_wire_len > MOAT_DNS_NAME_WIRE_MAX)
			abort();
		moat_addr_parse("198.18.0.1", &addrs[0]);
		moat_addr_parse("fd00::1", &addrs[1]);
		n = moat_dns_build_addr_response(&q, addrs, 2, 1, out, MOAT_DNS_UDP_MAX);
		if (n < 0 && q.qname_wire_len + 16 <= MOAT_DNS_UDP_MAX)
			abort();
		if (moat_dns_build_rcode_response(&q, MOAT_DNS_RCODE_REFUSED, out, sizeof(out)) < 0)
			abort();
		/* our own answer, with QR cleared, parses as the same question */
		n = moat_dns_build_rcode_response(&q, 0, out, sizeof(out));
		out[2] &= 0x7f;
		out[2] &= (uint8_t)~0x78;
		if (moat_dns_parse_query(out, (size_t)n, &q2) != 0 ||
		    strcmp(q.name, q2.name) != 0 || q.qtype != q2.qtype)
			abort();
	} else {
		(void)moat_dns_err_rcode(r);
		(void)moat_dns_strerror(r);
		(void)moat_dns_build_header_response(data, size, 1, out, sizeof(out));
	}
	n = moat_dns_tcp_unframe(data, size, &msg, &mlen);
	if (n > 0) {
		if ((size_t)n > size || msg + mlen > data + size)
			abort();
		(void)moat_dns_parse_query(msg, mlen, &q2);
	}
	return 0;
}
