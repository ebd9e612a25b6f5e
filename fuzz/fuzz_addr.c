/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Fuzz address parsing (strict and loose), CIDR parsing, classification and
 * formatting, including raw 16-byte IPv6 classification. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/addr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sockaddr_storage ss, back, u;
	struct moat_cidr c;
	char buf[MOAT_ADDR_STRLEN];
	uint32_t v4;
	char *s;

	if (size > 1024)
		return 0;
	s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';

	if (moat_addr_parse_n(s, size, &ss) == 0) {
		(void)moat_addr_classify((struct sockaddr *)&ss);
		(void)moat_addr_unmap((struct sockaddr *)&ss, &u);
		/* formatting and re-parsing gives the same address */
		if (moat_addr_format((struct sockaddr *)&ss, false, buf, sizeof(buf)) < 0)
			abort();
		if (moat_addr_parse(buf, &back) != 0 || back.ss_family != ss.ss_family)
			abort();
		(void)moat_addr_format((struct sockaddr *)&ss, true, buf, sizeof(buf));
	}
	if (moat_addr_parse_loose_ipv4_n(s, size, &v4) == 0)
		(void)moat_addr_classify_ipv4(v4);
	if (moat_cidr_parse(s, &c) == 0) {
		if (moat_cidr_format(&c, buf, sizeof(buf)) < 0)
			abort();
		if (moat_addr_parse_n(s, size, &ss) == 0 &&
		    !moat_cidr_contains(&c, (struct sockaddr *)&ss))
			abort(); /* a bare address is its own /32 or /128 */
	}
	if (size >= 16) {
		struct sockaddr_in6 sin6 = {.sin6_family = AF_INET6};
		memcpy(&sin6.sin6_addr, data, 16);
		unsigned f = moat_addr_classify((struct sockaddr *)&sin6);
		(void)moat_addr_flags_reason(f);
		(void)moat_addr_format((struct sockaddr *)&sin6, true, buf, sizeof(buf));
	}
	(void)moat_host_special_reason(s);
	free(s);
	return 0;
}
