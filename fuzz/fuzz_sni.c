/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Fuzz the ClientHello SNI/ALPN extractor. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/hostmatch.h"
#include "proxy/sni.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct moat_sni_info info, info2;
	char norm[MOAT_HOST_BUFSZ];
	int r;

	if (size > 100000)
		return 0;
	r = moat_sni_parse(data, size, &info);
	if (r < MOAT_SNI_NEED_MORE || r > MOAT_SNI_MALFORMED)
		abort();
	if (r == MOAT_SNI_FOUND) {
		/* the name is normalized and valid */
		if (moat_host_normalize(info.host, norm, sizeof(norm)) != 0 ||
		    strcmp(norm, info.host) != 0)
			abort();
		if (info.hello_len == 0 || info.hello_len > MOAT_SNI_MAX_HELLO)
			abort();
	}
	if (r == MOAT_SNI_MALFORMED && !info.malformed_why)
		abort();
	if (strlen(info.alpn) >= sizeof(info.alpn))
		abort();
	/* a decided result does not change when more bytes arrive */
	if (r != MOAT_SNI_NEED_MORE && size > 1) {
		int r2 = moat_sni_parse(data, size - 1, &info2);
		if (r2 != MOAT_SNI_NEED_MORE && r2 != r && r != MOAT_SNI_MALFORMED &&
		    r2 != MOAT_SNI_MALFORMED)
			abort();
	}
	(void)moat_sni_result_str(r);
	return 0;
}
