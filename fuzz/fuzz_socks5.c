/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Fuzz the SOCKS5 greeting and request parsers, fed whole and byte by byte. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/socks5.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct moat_socks5_greeting g;
	struct moat_socks5_request r;
	uint8_t reply[MOAT_SOCKS5_REPLY_MAX];
	int n, m;

	if (size > 2048)
		return 0;
	size_t glen = size >= 2 ? 2 + (size_t)data[1] : size;
	if (glen > size)
		glen = size;
	n = moat_socks5_parse_greeting(data, glen, &g);
	if (n > 0 && (size_t)n != glen)
		abort();
	/* the greeting is followed by the request in the same buffer */
	size_t off = n > 0 ? (size_t)n : 0;
	m = moat_socks5_parse_request(data + off, size - off, &r);
	if (m > 0) {
		if ((size_t)m > size - off || r.port == 0 || r.cmd != MOAT_SOCKS5_CMD_CONNECT)
			abort();
		if (memchr(r.host, '\0', sizeof(r.host)) == NULL)
			abort();
		/* every shorter prefix needs more */
		for (int i = 0; i < m; i++)
			if (moat_socks5_parse_request(data + off, (size_t)i, NULL) != 0 &&
			    moat_socks5_parse_request(data + off, (size_t)i, NULL) >= 0)
				abort();
		(void)moat_socks5_build_reply(reply, sizeof(reply), 0, (struct sockaddr *)&r.addr);
	} else if (m < 0) {
		(void)moat_socks5_err_reply(m);
		(void)moat_socks5_strerror(m);
	}
	return 0;
}
